import libcst as cst

from perflint.edits import with_keyword
from perflint.model import torchapi as api
from perflint.model.names import is_false, keyword, one_line
from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.model.values import ON_HOST, TENSOR, Values
from perflint.rule import Rule
from perflint.rules.syncs.sites import idle_after, synchronized_before_step
from perflint.rules.transfers.moves import moves_to_device
from perflint.tree import find_all


class BlockingHostToDeviceCopy(Rule):
    code = "PFL203"
    name = "blocking-host-to-device-copy"
    summary = "a batch from a data loader is copied to the device every step without `non_blocking=True`"
    message = "`.{method}()` of a loader batch without `non_blocking=True` makes the host wait for the copy " \
              "every step; {advice}"
    fix_safety = "safe"
    gpu_only = True
    proof_note = ("`non_blocking=True` changes whether the host waits for each copy, not how many copies run "
                  "(the pair makes the same 17 transfers both ways); the CPU has no asynchronous copies, so the "
                  "evidence is the ResNet-50 and AlexNet GPU traces quoted above.")
    why = """
A blocking host-to-device copy returns only when the data is on the device, so the host cannot queue the
next kernels (or fetch the next batch) meanwhile. From pinned memory (`DataLoader(..., pin_memory=True)`)
`non_blocking=True` makes the copy a DMA that overlaps with compute; from pageable memory the driver first
stages the data through a pinned buffer and the host waits either way. Real traces in
../shared/traces show the host blocked for the whole copy: in the ResNet-50 training trace
(kineto_tb_plugin, V100, `num_workers=0`) there are 12 `Memcpy HtoD (Pageable -> Device)` copies, 6
image batches of 19,267,584 bytes at 9.9 GB/s (about 1.9 ms each) and 6 label batches of 256 bytes;
each is matched by a host `cudaMemcpyAsync` that lasts as long as the copy (about 2.0 ms for the
images: 11.5 ms of copies, 12.0 ms of host calls in total) followed by `cudaStreamSynchronize`; the AlexNet
trace (hta/critical_path/alexnet, A100) has 16 such copies, 55.5 ms on the device and 57.0 ms of host
`cudaMemcpyAsync`. Pinned memory and `non_blocking=True` turn that host time into overlap.
"""
    example = """
loader = DataLoader(ds, batch_size=64, pin_memory=True, num_workers=4)
for x, y in loader:
    x, y = x.to(device), y.to(device)
"""
    instead = """
loader = DataLoader(ds, batch_size=64, pin_memory=True, num_workers=4)
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
"""
    known_problems = """
On by default although under the 80% bar: its judged hold-out findings were right 468 of 609 (77%) at the end
of review 54's round (figures below). It is the only default rule of the blocking-copy family, whose instances it
finds on the labelled repositories; PFL105 and PFL206, further under the bar (60%), are off.
Reports a move to the device of a value that came from a data loader (a loop over one, `next(iter(
loader))`, a generator yielding its batches; also after unpacking, indexing or `batch[k]`), on the per-step
path, once per tuple assigned (`x, y = x.to(d), y.to(d)` is one finding, at the copy whose advice says most,
else the first, with the others named in its evidence; `--fix` adds the keyword to one copy per pass, so all
are fixed; blind review 43 judged the second finding of such a line wrong as a repeat). The message says
whether the loader visibly pins memory (then `non_blocking=True` is all that is missing) or should
(`pin_memory=True` too: with pageable memory the copy stays synchronous). The fix adds `non_blocking=True`,
which is safe for host-to-device copies (later kernels run on the same stream; the loader does not reuse
the batch's memory while the copy runs); it is not offered when the project defines its own `.to()`
(detr's `NestedTensor.to(device)`), which might not
accept the keyword, nor on calls spread over several lines. Quiet in compiled code and in test files,
and in a loop whose every iteration ends handing device results to host-only code (a tokenizer's
`decode`, NumPy or SciPy, an environment's `step`) or calls `generate()`: the next copy then starts on
an idle device, with no queued work to overlap (blind reviews 26 and 29 judged 12 such findings wrong).
Quiet too where a `synchronize()` surely runs later in the same iteration before the model does: yolov5's
`with dt[0]:` around the copies (a timing context manager of the project whose enter and exit synchronize),
or a timing helper such as `time_sync()`; the host waits for the copy there either way.
A loop whose wait has a fix (a per-step `loss.item()`, a copy to the host only logged) is still reported:
with that read gone, the copy overlaps the step. A first version that also counted every copy to the host
not merely collected lost 20 findings judged right for 8 judged wrong, and was narrowed.
Quiet for batches of timm's `create_loader` with its prefetcher on (its default, or an option on by default,
also through a parameter every call fills with such a loader): they are on the device already (blind review
48, FAN). A loop that calls `chat()` (InternVL's wrapper of `generate`) ends on an idle device like one that
calls `generate()`, also where the copy is an argument of that call.
A batch masked or fancy-indexed on the host before the copy (dinov3's `samples[index >= 0]`) is quiet: that
makes a new tensor in pageable memory, so `non_blocking=True` alone would change nothing (blind review 47).
A batch converted on the host before the copy (`label.long().cuda()`, blind review 19) keeps pinned memory
only where the conversion is a no-op; the message then also says to have the dataset return that dtype
or to convert after the copy (`label.cuda(non_blocking=True).long()`); the fix still only adds the keyword,
since converting after the copy moves more bytes when the conversion narrows (float64 to float32).
"""

    def finish(self, model: FileModel) -> None:
        values, steps = Values.of(model), Steps.of(model)
        first: dict[cst.CSTNode, list] = {}  # per tuple assigned (`x, y = x.to(d), y.to(d)`), its copies
        for move in moves_to_device(model):
            if move.non_blocking:
                continue
            call = move.call
            v = values.value(call.func.value)
            if v.kind != TENSOR or v.device != ON_HOST or v.loader is None or _remade(values, call.func.value) \
                    or _prefetched(model, values, v.loader):
                continue
            step = steps.at(call)
            if not step.hot or model.frame_of(call).compiled or idle_after(model, call) is not None \
                    or synchronized_before_step(model, call) is not None:
                continue
            pinned = _pins_memory(model, values, v.loader)
            advice = "the loader pins memory: pass `non_blocking=True`" if pinned else \
                "pin the loader's memory (`pin_memory=True`) and pass `non_blocking=True`" \
                if type(v.loader) is cst.Call else \
                "pass `non_blocking=True`, with `pin_memory=True` where the loader is built (if it is not set there)"
            conversion = _conversion(call.func.value)
            if conversion is not None:  # `label.long().cuda()`: pinning holds only if `.long()` is a no-op
                after = cst.Call(cst.Attribute(with_keyword(call.with_changes(func=call.func.with_changes(
                    value=conversion.func.value)), "non_blocking", cst.Name("True")), conversion.func.attr))
                to = conversion.func.attr.value
                advice += (f"; and have the dataset return this dtype, or convert after the copy "
                           f"(`{model.module.code_for_node(after)}`): a `.{to}()` on the host that changes the "
                           f"dtype makes a new tensor outside pinned memory, and the copy from it stays synchronous")
            replacement = None
            if one_line(call) and not model.facts.custom_to:
                replacement = with_keyword(call, "non_blocking", cst.Name("True"))
            first.setdefault(_tuple_assignment(model, call) or call, []).append((
                conversion is not None, call, self.message.format(method=call.func.attr.value, advice=advice),
                replacement, (*v.why[:2], *step.why[:2]), step))
        for copies in first.values():
            # One report per tuple assigned (`x, y = x.to(d), y.to(d)`), at the copy whose advice says most (a
            # conversion on the host) or else the first; its fix adds the keyword to one copy per pass.
            _, call, message, replacement, evidence, step = max(copies, key=lambda c: c[0])
            others = tuple(("the same assignment copies `{}` too", c[1].func.value) for c in copies if c[1] is not call)
            self.report(model, call, message, replacement=replacement, evidence=(*evidence, *others), step=step)


def _tuple_assignment(model: FileModel, call: cst.Call) -> cst.Assign | None:
    """The assignment of a tuple that holds this copy (`x, y = x.to(d), y.to(d)`), where one report stands for
    all the copies it makes."""
    tuples = model._memo.get("tuple-assignments")
    if tuples is None:
        tuples = model._memo["tuple-assignments"] = {
            inner: a for a in model.nodes(cst.Assign) if type(a.value) is cst.Tuple
            for e in a.value.elements for inner in find_all(e.value, cst.Call)}
    return tuples.get(call)


def _prefetched(model: FileModel, values: Values, loader: cst.CSTNode) -> bool:
    """A loader made by timm's `create_loader` with its prefetcher on (`use_prefetcher` left at its default
    True, or an option true by default: `args.prefetcher = not args.no_prefetcher`), also through a parameter
    every call in the file fills with one: it yields batches already copied to the device, with
    `non_blocking=True` on a side stream, so a `.cuda()` of them copies nothing (FAN's train loop)."""
    made = [loader]
    owner = next(((f, p) for f in model.functions for _, p, _ in f.params if p.name is loader), None)
    if owner is not None:  # a parameter (the loader is named where it is given): what the callers pass
        made = values.arguments(*owner)
        if not made:
            return False
    for node in made:
        if type(node) is cst.Name:
            node = values.source(node)
        if type(node) is not cst.Call or not (model.qualname(node.func) or "").endswith("create_loader"):
            return False
        prefetch = keyword(node, "use_prefetcher")
        if prefetch is not None and values.default_truth(prefetch.value) is not True:
            return False
    return True


def _remade(values: Values, node: cst.BaseExpression) -> bool:
    """`samples, targets = samples[index >= 0], targets[index >= 0]` before the copy (dinov3's evaluation): a
    boolean mask or a list of indices makes a new tensor in pageable memory, so the loader's pinning no longer
    holds and `non_blocking=True` leaves the copy synchronous; blind review 47 judged the three such findings
    wrong. (Moving the batch first and indexing it on the device would be the fix.)"""
    expr = node
    if type(node) is cst.Name:
        bindings = values.reaching_bindings(node) or []
        expr = bindings[0].assigned() if len(bindings) == 1 else None
    return type(expr) is cst.Subscript and any(
        type(e.slice) is cst.Index and type(e.slice.value) in (cst.Comparison, cst.List) for e in expr.slice)


def _conversion(node: cst.BaseExpression) -> cst.Call | None:
    """`label.long()`: a dtype conversion, without arguments, of what is then moved."""
    if type(node) is cst.Call and not node.args and type(node.func) is cst.Attribute \
            and node.func.attr.value in api.CAST_METHODS:
        return node
    return None


def _pins_memory(model: FileModel, values: Values, loader: cst.CSTNode) -> bool:
    """Whether the DataLoader(...) call (when the model can see it) passes `pin_memory=True`, also through
    `**kwargs` built from a dict with that key."""
    if type(loader) is not cst.Call:
        return False
    arg = keyword(loader, "pin_memory")
    if arg is not None:
        return not (type(arg.value) is cst.Name and arg.value.value in ("False", "None"))
    for a in loader.args:
        if a.star == "**":
            for d in _dicts(model, values, a.value):
                for element in d.elements:
                    if type(element) is cst.DictElement and type(element.key) is cst.SimpleString \
                            and element.key.evaluated_value == "pin_memory" and not is_false(element.value):
                        return True
    return False


def _dicts(model: FileModel, values: Values, expr: cst.CSTNode) -> list[cst.Dict]:
    """The dict literals a `**kwargs` argument may come from (through names, `a.update(b)` aside)."""
    out, stack, seen = [], [expr], 0
    while stack and seen < 20:
        seen += 1
        node = stack.pop()
        if type(node) is cst.Dict:
            out.append(node)
        elif type(node) is cst.IfExp:
            stack += [node.body, node.orelse]
        elif type(node) is cst.Name:
            source = values.source(node)
            if source is not None:
                stack.append(source)
            for update in model.calls:  # `train_kwargs.update(cuda_kwargs)`
                if type(update.func) is cst.Attribute and update.func.attr.value == "update" \
                        and type(update.func.value) is cst.Name and update.func.value.value == node.value \
                        and update.args:
                    stack.append(update.args[0].value)
    return out
