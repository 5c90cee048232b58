import libcst as cst

from perflint.edits import with_keyword
from perflint.model import torchapi as api
from perflint.model.names import factory_sizes, is_false, keyword, one_line
from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.model.values import NDARRAY, ON_HOST, OTHER, TENSOR, Values
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
    fix_safety = "safe"
    proof_metric = "transfers"
    why = """
`torch.zeros(n).to(device)` allocates and fills the tensor in host memory, then allocates it again on the
device and copies it over PCIe (`aten::to > aten::_to_copy > aten::copy_`, on a GPU a `cudaMemcpyAsync`
`Memcpy HtoD (Pageable -> Device)` that blocks the host until the staging copy is done). `device=` makes
the factory write the values straight into device memory with one small kernel: no host allocation, no
copy, no host wait. In a loop or a `forward` the copy is paid on every step. Data that really starts on
the host (a Python list, an environment's observation) has to cross once, but `torch.tensor(obs)` or
`torch.Tensor(obs)` first copies it into a new host tensor (converting a uint8 frame to 4x the bytes of
float32), which `torch.as_tensor(obs, device=device)` skips.
"""
    example = """
def forward(self, x):
    mask = torch.ones(x.shape[0], x.shape[1]).to(x.device)
    pos = torch.arange(x.shape[1]).cuda()
for step in range(num_steps):
    obs = torch.Tensor(next_obs).to(device)
"""
    instead = """
def forward(self, x):
    mask = torch.ones(x.shape[0], x.shape[1], device=x.device)
    pos = torch.arange(x.shape[1], device="cuda")
for step in range(num_steps):
    obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)
"""
    known_problems = """
Reported once per tensor, where it is made, when both the making and the move run every step (a loop over
a loader or over training steps, a module's `forward`, a function called from them): a tensor made once
and moved every step is PFL202's. It follows the tensor through host-side ops (`torch.randn(n).half()
.to(d)`, `torch.tensor(x).t().contiguous().cuda()`) and through names (`t = torch.zeros(n)` ... `t =
t.to(device)`), and knows `.type_as(device_tensor)` and `.to(x.device)` for moves. Factories
(`zeros`, `ones`, `arange`, `rand*`, ...) and constructors from data (`torch.tensor`, `torch.Tensor`,
`torch.FloatTensor`, ...) count; `torch.from_numpy(a)` and `torch.as_tensor(a)` count only when the
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
            if v.kind != TENSOR or v.device != ON_HOST or not isinstance(origin, cst.Call) or origin in done:
                continue
            factory = model.qualname(origin.func)
            if factory in _ZERO_COPY and not _made_by_numpy(model, values, origin):
                continue
            if factory not in api.FACTORIES and factory not in api.FROM_DATA or _no_elements(factory, origin) \
                    or _pinned(origin) or _filled_on_host(model, origin) or _data_gains_nothing(values, factory, origin):
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
            fix = "pass `device=` to make it there" if factory in api.FACTORIES else \
                "`torch.as_tensor(data, device=...)` copies it once, straight to the device"
            self.report(model, origin, self.message.format(factory=factory, fix=fix),
                        replacement=replacement, fix_node=fix_node,
                        evidence=(("copied to the device by `{}`", move.call), *move.why[1:2], *made.why[:2]),
                        step=step)


def _filled_on_host(model: FileModel, origin: cst.Call) -> bool:
    """`ids = torch.full((b, t), pad)` then `ids[i, :len(x)] = torch.tensor(x)` row by row: a staging buffer
    filled from host data and moved once. Made on the device, each row would be a copy of its own."""
    frame, order = model.site(origin)
    bound = next((a for a in model.nodes(cst.Assign) if a.value is origin and len(a.targets) == 1
                  and isinstance(a.targets[0].target, cst.Name)), None)
    if bound is None:
        return False
    name = bound.targets[0].target.value
    for assign in model.nodes(cst.Assign):
        for target in assign.targets:
            t = target.target
            if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == name \
                    and model.sites[assign][1] > order and model.sites[assign][0].function is frame.function:
                return True
    return False


def _data_gains_nothing(values: Values, factory: str, origin: cst.Call) -> bool:
    """`torch.tensor(token_rows)`, `torch.Tensor(t)` of a tensor: data held in a Python list or already in a
    tensor crosses once either way; `torch.as_tensor(data, device=...)` would copy just as much. A display
    of a few values (`torch.Tensor([[word]])`) is not data: `torch.full(..., device=)` makes it there."""
    if factory not in api.FROM_DATA or not origin.args or not isinstance(origin.args[0].value, cst.Name):
        return False
    v = values.value(origin.args[0].value)
    return v.kind == TENSOR or v.items is not None or v.element is not None and v.kind == OTHER


def _pinned(factory: cst.Call) -> bool:
    """`torch.empty(n, pin_memory=True)`: a staging buffer in page-locked host memory, made there on purpose
    so that copies from it to the device run asynchronously."""
    arg = keyword(factory, "pin_memory")
    return arg is not None and not is_false(arg.value)


def _no_elements(factory: str, call: cst.Call) -> bool:
    """`torch.empty(0)`, `torch.zeros((0, d))`: a size with a literal 0 makes no elements; moving it copies
    nothing (an empty start for a `torch.cat` that grows it)."""
    return any(isinstance(v, cst.Integer) and v.evaluated_value == 0 for v in factory_sizes(factory, call) or ())


def _made_by_numpy(model: FileModel, values: Values, origin: cst.Call) -> bool:
    """`torch.from_numpy(np.random.choice(...))`, or of a local name holding such an array; not a read
    from a store the code fills (`self.buffer_obs[indices]` of a replay buffer made with `np.zeros`)."""
    if not origin.args or not isinstance(origin.args[0].value, (cst.Name, cst.Call)):
        return False
    v = values.value(origin.args[0].value)
    if v.kind != NDARRAY or not isinstance(v.origin, cst.Call):
        return False
    qual = model.qualname(v.origin.func) or ""
    return qual.startswith("numpy.") and qual[6:].startswith(_NUMPY_MAKERS)

