import libcst as cst

from perflint.edits import with_keyword
from perflint.model import torchapi as api
from perflint.model.names import factory_sizes, is_false, keyword, method_name, one_line
from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.model.values import NDARRAY, NUMBER, ON_HOST, OTHER, TENSOR, Values
from perflint.rule import Rule
from perflint.rules.transfers.moves import moves_to_device

# NumPy calls that make data the device could make itself (random draws, ranges): `from_numpy` of them
# then `.to(device)` is a tensor made on the host; any other array (an environment's observation, a
# loaded file) has to cross, and `from_numpy` shares its memory without a host copy.
_NUMPY_MAKERS = ("random.", "arange", "linspace", "zeros", "ones", "full", "eye", "empty")
_ZERO_COPY = {"torch.from_numpy", "torch.as_tensor", "torch.asarray", "torch.from_file", "torch.frombuffer"}


class CpuTensorThenMoved(Rule):
    code = "PFL201"
    name = "cpu-tensor-then-moved"
    summary = "a tensor made on the host every step and then moved to the device: make it on the device"
    message = "`{factory}(...)` is made on the host every step and then copied to the device; {fix}"
    widen_message = ("`{cast}` widens {narrow} to {wide} on the host, so {times}x the bytes cross to the device every "
                     "step; move first, then cast there (`.to(device){cast}`: one kernel on the device)")
    fix_safety = "safe"
    proof_metric = "transfers"
    why = """
`torch.zeros(n).to(device)` allocates and fills the tensor in host memory, then allocates it again on the
device and copies it over PCIe (`aten::to > aten::_to_copy > aten::copy_`, on a GPU a `cudaMemcpyAsync`
`Memcpy HtoD (Pageable -> Device)` that blocks the host until the staging copy is done). `device=` makes
the factory write the values straight into device memory with one small kernel: no host allocation, no
copy, no host wait. In a loop or a `forward` the copy is paid on every step. The same holds for a few
values written out (`torch.Tensor([[word]]).long().to(device)`: `torch.full((1, 1), word, device=device)`)
and for host work between making and moving (`torch.tensor(ids).t().contiguous().cuda()`: move first,
then transpose on the device). A widening cast just before the move (`frames[i].float().to(device)` of a
uint8 rollout) makes a new host tensor of 4x the bytes, and all of them cross: move first, then cast.
"""
    example = """
def forward(self, x):
    mask = torch.ones(x.shape[0], x.shape[1]).to(x.device)
    pos = torch.arange(x.shape[1]).cuda()
for step in range(num_steps):
    word = torch.Tensor([[word_idx]]).long().to(device)
"""
    instead = """
def forward(self, x):
    mask = torch.ones(x.shape[0], x.shape[1], device=x.device)
    pos = torch.arange(x.shape[1], device="cuda")
for step in range(num_steps):
    word = torch.full((1, 1), word_idx, dtype=torch.long, device=device)
"""
    known_problems = """
On by default although under the 80% bar: its judged hold-out findings were right 164 of 223 (74%) at the end
of review 54's round (figures below). It is the only default rule of the host-made family, whose instances it
finds on the labelled repositories; PFL105 and PFL206, further under the bar (60%), are off.
Reported once per tensor, where it is made, when both the making and the move run every step (a loop over
a loader or over training steps, a module's `forward`, a function called from them): a tensor made once
and moved every step is PFL202's. It follows the tensor through host-side ops (`torch.randn(n).half()
.to(d)`, `torch.tensor(x).t().contiguous().cuda()`) and through names (`t = torch.zeros(n)` ... `t =
t.to(device)`), and knows `.type_as(device_tensor)` and `.to(x.device)` for moves. Factories
(`zeros`, `ones`, `arange`, `rand*`, ...) count, and so do constructors from data (`torch.tensor`,
`torch.Tensor`, `torch.FloatTensor`, ...) of one value written out or repeated (`torch.tensor([t] * b)`,
`torch.tensor(0.)`: `torch.full` fills it on the device, the value passed to the kernel as an argument, with
no copy), of constants, of a size, or with host work before the move (then: move first, work on the
device). Several values computed on the host (`torch.Tensor([w, h, w, h])` of an image's size) are quiet:
they cross however the tensor is built. The advice `torch.as_tensor(data, device=...)`, given before for
such data, makes the same pageable copy; the blind reviews judged 11 of its 18 findings wrong, and it is
no longer given. A constructor of a variable's data moved as made (`torch.Tensor(obs).to(device)`) is quiet:
that data starts on the host and must cross, `torch.Tensor` of a float32 NumPy array even shares its memory
(measured: no host copy), and `torch.as_tensor(obs, device=device)` makes the same pageable copy; pin the memory and
pass `non_blocking=True` instead. Three blind reviews (6, 7 and 9) judged all 9 such findings not worth a
change. A cast of such data before its move (`torch.tensor(ids).long().to(d)`) is no host work worth moving
either: of int64 ids it does nothing, and a narrowing cast before the copy halves the bytes that cross
(blind review 14). Nor is a list gathered from host objects (`torch.LongTensor([g.label for g in batch])
.to(d)`: blind review 34). A legacy constructor given a size (`torch.FloatTensor(b, 1, 1, 1)`) is told to use a
factory with `device=`.
A name shown in a display is one value only when it is not known as a list or an array, and the code does not
`append` to it (Show-o's growing `torch.tensor([generated_tokens])`, blind review 53); a tensor made in a memo
filled on a miss (`if key not in hann_window: hann_window[key] = torch.hann_window(n).to(d)`, review 54) is
made once per key, not every step.
A widening cast before a move is reported only when the tensor's dtype is written where it is made
(`torch.zeros(..., dtype=torch.uint8)`): a loader's batch or an environment's array has a dtype the code
does not show.
`torch.from_numpy(a)` and `torch.as_tensor(a)` count only when the
array was itself drawn or built by NumPy in this file (`np.random.*`, `np.arange`), since other arrays
must cross and share memory on the way. The fix (add `device=`) is offered only when the factory call
is moved directly and plainly (`.to(dev)`, `.to(device=dev)`, `.cuda()`, on one line), and never for
random factories, whose device generator draws other numbers than the CPU's for the same seed.
"""

    def finish(self, model: FileModel) -> None:
        values, steps = Values.of(model), Steps.of(model)
        done: set[cst.CSTNode] = set()
        for move in moves_to_device(model):
            receiver = move.call.func.value
            v = values.value(receiver)
            origin = v.origin
            widened = _widened(model, values, receiver)
            if widened is not None and receiver not in done:
                step = steps.at(move.call)
                if step.hot or step.unless:
                    done.add(receiver)
                    cast, narrow, wide = widened
                    message = self.widen_message.format(cast=cast, narrow=narrow, wide=wide,
                                                        times=_BYTES[wide] // _BYTES[narrow])
                    self.report(model, receiver, message, step=step, evidence=(
                        ("copied to the device by `{}`", move.call), (f"made {narrow} by `{{}}`", origin), *step.why[:2]))
                continue
            if v.kind != TENSOR or v.device != ON_HOST or type(origin) is not cst.Call or origin in done:
                continue
            factory = model.qualname(origin.func)
            if factory in _ZERO_COPY and not _made_by_numpy(model, values, origin):
                continue
            if factory not in api.FACTORIES and factory not in api.FROM_DATA or _no_elements(factory, origin) \
                    or _pinned(origin) or _filled_on_host(model, origin) \
                    or not _host_work_before_move(model, origin, move.call) and factory not in _ZERO_COPY \
                    and _data_gains_nothing(values, factory, origin):  # (a zero-copy here: of NumPy-made data)
                continue
            fix = _fix(values, factory, origin, _host_work_before_move(model, origin, move.call))
            if fix is None:
                continue
            made, moved = steps.at(origin), steps.at(move.call)
            step = made.both(moved)
            if not (step.hot or step.unless) or model.frame_of(origin).compiled:
                continue
            done.add(origin)
            replacement = fix_node = None
            if receiver is origin and move.plain and one_line(origin) and factory in api.FACTORIES \
                    and factory not in api.RANDOM_FACTORIES:
                device = move.expr if move.expr is not None else cst.SimpleString('"cuda"')
                replacement, fix_node = with_keyword(origin, "device", device), move.call
            self.report(model, origin, self.message.format(factory=factory, fix=fix),
                        replacement=replacement, fix_node=fix_node,
                        evidence=(("copied to the device by `{}`", move.call), *move.why[1:2], *made.why[:2]),
                        step=step)


def _fix(values: Values, factory: str, origin: cst.Call, host_work: bool) -> str | None:
    """How to make this tensor on the device, by what the constructor is given; None where no way of making
    it saves the copy: values computed on the host (`torch.Tensor([w, h, w, h])` of an image's size,
    `torch.tensor(src + dst)`) have to cross whatever builds the tensor, and `torch.as_tensor(data,
    device=...)` makes the same pageable copy."""
    if factory in api.FACTORIES:
        return "pass `device=` to make it there"
    if factory in _ZERO_COPY:
        return "NumPy makes the data on the host: make it with torch on the device instead (`torch.multinomial`, " \
               "`torch.randint(..., device=...)`, `torch.arange(..., device=...)`)"
    if _sized(values, factory, origin):
        return "`torch.empty(size, device=...)` (or the factory that fills it) makes it there"
    data = origin.args[0].value if origin.args and origin.args[0].keyword is None else None
    if data is not None and (_one_value(values, data) or _repeated(values, data)):
        return "`torch.full(size, value, device=...)` makes it there without a copy: a fill kernel takes the " \
               "value as an argument (or use a Python number)"
    if data is not None and _constants(values, data):
        return "these values are constants: make the tensor once (before the loop, or a buffer registered in " \
               "`__init__`, which `.to(device)` moves with the model)"
    if host_work:
        return "move it as made, then do that work on the device (`.to(device)` first)"
    return None


def _one_value(values: Values, node: cst.CSTNode) -> bool:
    """One number, bare or in a display: `0.`, `[[word_idx]]`, `-math.inf`, `[t.numel()]`, a host metric."""
    displayed = False
    while type(node) in (cst.List, cst.Tuple) and len(node.elements) == 1 and type(node.elements[0]) is cst.Element:
        node, displayed = node.elements[0].value, True
    if type(node) is cst.UnaryOperation:
        node = node.expression
    if type(node) in (cst.Integer, cst.Float):
        return True
    if (displayed and type(node) in (cst.Name, cst.Attribute) or displayed and type(node) is cst.Subscript
            and not any(type(e.slice) is cst.Slice for e in node.slice)) and not _a_sequence(values, node):
        return True  # `[[word_idx]]`, `[vocab[w]]`: one element shown (data read from elsewhere is quiet before)
    return type(node) in (cst.Name, cst.Attribute, cst.Call, cst.Subscript) and values.value(node).kind == NUMBER


def _a_sequence(values: Values, node: cst.CSTNode) -> bool:
    """A list or an array, not one value: known so, or a name the code appends to (Show-o's `generated_tokens`,
    a growing list of token ids shown as `torch.tensor([generated_tokens])`)."""
    if values.value(node).kind in (OTHER, NDARRAY):
        return True
    return type(node) is cst.Name and any(
        method_name(c) in ("append", "extend") and type(c.func.value) is cst.Name and c.func.value.value == node.value
        for c in values.model.calls)


def _repeated(values: Values, node: cst.CSTNode) -> bool:
    """`[t] * b`, `n * [[start]]`: one value repeated to a size, which `torch.full` makes on the device."""
    if type(node) is not cst.BinaryOperation or type(node.operator) is not cst.Multiply:
        return False
    display = node.left if type(node.left) in (cst.List, cst.Tuple) else node.right
    return type(display) in (cst.List, cst.Tuple) and _one_value(values, display)


def _filled_on_host(model: FileModel, origin: cst.Call) -> bool:
    """`ids = torch.full((b, t), pad)` then `ids[i, :len(x)] = torch.tensor(x)` row by row: a staging buffer
    filled from host data and moved once. Made on the device, each row would be a copy of its own. Likewise an
    accumulator added to in place (`preds += make_inference(img)`, dinov3's slide inference on the host)."""
    frame, order = model.site(origin)
    bound = next((a for a in model.nodes(cst.Assign) if a.value is origin and len(a.targets) == 1
                  and type(a.targets[0].target) is cst.Name), None)
    if bound is None:
        return False
    name = bound.targets[0].target.value
    values = Values.of(model)
    for update in model.nodes(cst.AugAssign):  # `preds += make_inference(img)`: a host accumulator (an in-place
        # add into a host tensor runs only with a host operand; made on the device, it would fail)
        if type(update.target) is cst.Name and update.target.value == name and model.sites[update][1] > order \
                and model.sites[update][0].function is frame.function and values.value(update.value).kind != NUMBER:
            return True
    for assign in model.nodes(cst.Assign):
        for target in assign.targets:
            t = target.target
            if type(t) is cst.Subscript and type(t.value) is cst.Name and t.value.value == name \
                    and model.sites[assign][1] > order and model.sites[assign][0].function is frame.function:
                return True
    return False


_HOST_WORK = {"contiguous", "t", "transpose", "permute", "clone", "flip", "repeat", "expand_as", "mul", "add", "sub",
              "div", "pow"}


def _host_work_before_move(model: FileModel, origin: cst.Call, move: cst.Call) -> bool:
    """`torch.tensor(ids).t().contiguous().cuda()`: methods that compute on the host, applied to the new tensor
    before the move (a transpose made contiguous, arithmetic), which could run on the device instead. Views and
    slices (`buf[:-1].view(B, T)`) cost nothing, and neither does a cast of data: `.long()` of int64 ids is
    no work, and a narrowing cast (`.float()` of float64) before the copy even halves the bytes that cross."""
    node = origin
    for _ in range(8):
        parent = next((c for c in model.calls if type(c.func) is cst.Attribute and c.func.value is node), None)
        if parent is None or parent is move:
            return False
        if method_name(parent) in _HOST_WORK:
            return True
        node = parent
    return False


def _data_gains_nothing(values: Values, factory: str, origin: cst.Call) -> bool:
    """`torch.Tensor(obs).to(d)`, `torch.tensor(token_rows).to(d)`, moved as made: data that starts on the host
    has to cross once whatever builds the tensor. The legacy constructors even share a NumPy array's memory
    when the dtypes match (no host copy at all), and `torch.as_tensor(data, device=...)` makes the same one
    pageable copy; the fix that matters there is pinned memory and `non_blocking`, at the move. A display of
    a few values (`torch.Tensor([[word]])`) or a size (`torch.FloatTensor(b, n)`) is not such data: made on
    the device, it never crosses. (Host work between making and moving, `torch.tensor(ids).t().contiguous()
    .cuda()`, is checked apart: that work could run on the device.)"""
    if factory not in api.FROM_DATA or not origin.args:
        return False
    data = origin.args[0].value
    if type(data) in (cst.ListComp, cst.GeneratorExp):  # `[g.label for g in batch]`: host data, gathered
        return sum(a.keyword is None for a in origin.args) == 1
    if type(data) is cst.BinaryOperation and type(data.left) in (cst.Integer, cst.Float):
        data = data.right  # `torch.FloatTensor(1 - done)` of an environment's done flags: data, one cheap pass
    if type(data) in (cst.List, cst.Tuple):  # `[f.input_ids[:n]]`: a display around data read from elsewhere
        return sum(a.keyword is None for a in origin.args) == 1 and not _written_out(values, data)
    if type(data) not in (cst.Name, cst.Attribute, cst.Subscript, cst.Call):
        return False
    return sum(a.keyword is None for a in origin.args) == 1 and values.value(data).kind != NUMBER


def _written_out(values: Values, node: cst.CSTNode) -> bool:
    """Whether a display holds values written out (numbers, names, sizes such as `img.shape[1]`), which a fill
    on the device could make, rather than data read from elsewhere (a feature's list of token ids)."""
    if type(node) in (cst.List, cst.Tuple):
        return all(type(e) is cst.Element and _written_out(values, e.value) for e in node.elements)
    if type(node) is cst.UnaryOperation:
        return _written_out(values, node.expression)
    if type(node) in (cst.Integer, cst.Float):
        return True
    if type(node) is cst.Call:  # `x.size(0)`, `len(ids)`: a size; other calls make data
        return method_name(node) in ("size", "numel", "dim") or type(node.func) is cst.Name \
            and node.func.value == "len" or values.value(node).kind == NUMBER
    if type(node) is cst.Subscript and any(type(e.slice) is cst.Slice for e in node.slice):
        return False  # `f.input_ids[:n]`: a slice of a sequence
    # A name, an attribute, an element (`word_idx`, `f.label`, `img.shape[1]`): one value, unless known to be a
    # list or an array, or a name bound to what a function of another library returns (`indexed_tokens =
    # tokenizer.convert_tokens_to_ids(tokens)`: a list of ids).
    if type(node) not in (cst.Name, cst.Attribute, cst.Subscript):
        return False
    if type(node) is cst.Name:  # `seq = tokenizer.encode(seq).ids` on each branch, or the loop's own `seq`: data
        bindings = values.reaching_bindings(node) or ()
        if bindings and any(b.how == "assign" for b in bindings) and all(
                b.how == "for" or b.how == "assign" and not b.path and _made_elsewhere(values, b.value)
                for b in bindings):
            return False
    return values.value(node).kind not in (OTHER, NDARRAY)


def _made_elsewhere(values: Values, node: cst.CSTNode) -> bool:
    """A call of a function of another library, or an attribute or element of what it returns."""
    while type(node) in (cst.Attribute, cst.Subscript):
        node = node.value
    return type(node) is cst.Call and values.value(node).kind != NUMBER \
        and not (values.model.qualname(node.func) or "").startswith("torch.")


def _sized(values: Values, factory: str, call: cst.Call) -> bool:
    """`torch.FloatTensor(b, 1, 1, 1)`: a legacy constructor given a size, not data (uninitialised memory, often
    filled next: `.uniform_(0, 1)`)."""
    sizes = [a.value for a in call.args if a.keyword is None and not a.star
             or a.keyword is not None and a.keyword.value == "size"]  # `torch.ByteTensor(size=(n,))`
    return factory.endswith("Tensor") and bool(sizes) and (
        len(sizes) > 1 or type(sizes[0]) is cst.Integer or values.value(sizes[0]).kind == NUMBER)


def _constants(values: Values, node: cst.CSTNode) -> bool:
    """`(0.485, 0.456, 0.406)`, `[t1, t0]` with `t0, t1 = 0., 10.` set once: numbers fixed for the run, a table
    to build once. Not `[w, h, w, h]` of each image's size: those change with the image."""
    if type(node) in (cst.List, cst.Tuple):
        return bool(node.elements) and all(type(e) is cst.Element and _constants(values, e.value)
                                           for e in node.elements)
    if type(node) is cst.UnaryOperation:
        return _constants(values, node.expression)
    if type(node) in (cst.Name, cst.Attribute):
        fixed = values.default_of(node)
        return type(fixed) in (int, float)
    return type(node) in (cst.Integer, cst.Float)


def _pinned(factory: cst.Call) -> bool:
    """`torch.empty(n, pin_memory=True)`: a staging buffer in page-locked host memory, made there on purpose
    so that copies from it to the device run asynchronously."""
    arg = keyword(factory, "pin_memory")
    return arg is not None and not is_false(arg.value)


def _no_elements(factory: str, call: cst.Call) -> bool:
    """`torch.empty(0)`, `torch.zeros((0, d))`, `torch.Tensor([])`: a size with a literal 0, or empty data, makes
    no elements; moving it copies nothing (an empty start for a `torch.cat` that grows it)."""
    if factory in api.FROM_DATA and call.args and type(call.args[0].value) in (cst.List, cst.Tuple) \
            and not call.args[0].value.elements:
        return True
    return any(type(v) is cst.Integer and v.evaluated_value == 0 for v in factory_sizes(factory, call) or ())


def _made_by_numpy(model: FileModel, values: Values, origin: cst.Call) -> bool:
    """`torch.from_numpy(np.random.choice(...))`, or of a local name holding such an array; not a read
    from a store the code fills (`self.buffer_obs[indices]` of a replay buffer made with `np.zeros`)."""
    if not origin.args or type(origin.args[0].value) not in (cst.Name, cst.Call):
        return False
    v = values.value(origin.args[0].value)
    if v.kind != NDARRAY or type(v.origin) is not cst.Call:
        return False
    qual = model.qualname(v.origin.func) or ""
    return qual.startswith("numpy.") and qual[6:].startswith(_NUMPY_MAKERS)



_BYTES = {"bool": 1, "uint8": 1, "int8": 1, "float16": 2, "bfloat16": 2, "int16": 2, "float32": 4, "int32": 4,
          "float64": 8, "int64": 8}
# The short names, as dtypes (`torch.float`) and as cast methods (`.float()`).
_DTYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                "short": "int16"}


def _widened(model: FileModel, values: Values, node: cst.CSTNode) -> tuple[str, str, str] | None:
    """`obs[idx].float()` or `.to(torch.float32)` of a host tensor made with a narrower dtype
    (`torch.zeros(..., dtype=torch.uint8)`), moved right after: (the cast, its dtype before, after)."""
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
        return None
    method = node.func.attr.value
    wide = _canonical(method) if not node.args else None
    if method == "to" and len(node.args) == 1 and not node.args[0].keyword:
        wide = _dtype(model, node.args[0].value)
    if wide is None:
        return None
    source = values.value(node.func.value)
    if source.kind != TENSOR or source.device != ON_HOST or type(source.origin) is not cst.Call:
        return None
    given = keyword(source.origin, "dtype")
    narrow = _dtype(model, given.value) if given is not None else None
    if narrow is None or _BYTES[narrow] >= _BYTES[wide]:
        return None
    cast = f".{method}()" if not node.args else f".to({cst.Module([]).code_for_node(node.args[0].value)})"
    return cast, narrow, wide


def _dtype(model: FileModel, node: cst.CSTNode) -> str | None:
    """"uint8" for `torch.uint8`, "float32" for `torch.float`; None for anything else."""
    qual = model.qualname(node) or ""
    return _canonical(qual[6:]) if qual.startswith("torch.") else None


def _canonical(name: str) -> str | None:
    name = _DTYPE_NAMES.get(name, name)
    return name if name in _BYTES else None
