import libcst as cst

from perflint.edits import with_keyword
from perflint.model.names import dotted, one_line, target_names
from perflint.model.values import LOADER
from perflint.rules.transfers.moves import device_move

from perflint.rule import Rule


def _loop_parts(loop: cst.CSTNode):
    """(target, iterable) of a for loop or a comprehension; (None, None) for a while loop."""
    if isinstance(loop, cst.For):
        return loop.target, loop.iter
    if hasattr(loop, "for_in"):
        return loop.for_in.target, loop.for_in.iter
    return None, None


def loader_loop(model, loop: cst.CSTNode) -> bool:
    """`for batch in loader:` / `for i, (x, y) in enumerate(train_loader):` / tqdm(loader)."""
    it = _loop_parts(loop)[1]
    if it is None:
        return False
    while isinstance(it, cst.Call) and it.args and (dotted(it.func) or "").rsplit(".", 1)[-1] in ("enumerate", "tqdm"):
        it = it.args[0].value
    name = dotted(it)
    last = name.rsplit(".", 1)[-1].lower() if name is not None else ""
    return model.kind(it) == LOADER or "loader" in last and not last.endswith(("s", "_names", "_list"))


class BlockingHostToDeviceCopy(Rule):
    code = "PFL203"
    name = "blocking-host-to-device-copy"
    summary = "a loader batch moved with `.to(device)` / `.cuda()` without `non_blocking=True`"
    message = "`.{method}()` of a loader batch without `non_blocking=True` makes the host wait for the copy; " \
              "with `pin_memory=True` in the DataLoader, pass `non_blocking=True`"
    default = False
    gpu_only = True
    fix_safety = "unsafe"
    proof_note = ("`non_blocking=True` changes whether the host waits for each copy, not how many copies run "
                  "(the pair makes the same 17 transfers both ways); the CPU has no asynchronous copies, so the "
                  "evidence is the ResNet-50 and AlexNet GPU traces quoted above.")
    why = """
A blocking host-to-device copy returns only when the data is on the device, so the host cannot queue the
next kernels (or fetch the next batch) meanwhile. From pinned memory (`DataLoader(..., pin_memory=True)`)
`non_blocking=True` makes the copy a DMA that overlaps with compute; from pageable memory the driver first
stages the data through a pinned buffer and the host waits either way. Real traces in
/work/shared/traces show the host blocked for the whole copy: in the ResNet-50 training trace
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
The fix adds `non_blocking=True` (or turns `non_blocking=False` into `True`) on calls written on one
line. Off by default: `non_blocking=True` pays off only with pinned host memory (`pin_memory=True`) and code
that does not read the batch on the host right after the copy; with pageable memory it changes almost
nothing, so most findings in example code are correct but small. The fix is unsafe: after a
non-blocking copy to the *host* the data must not be read before a sync (PFL204); host-to-device is
safe because later kernels run on the same stream. Reports only values bound by a loop over something
named like a loader (`loader`, `train_loader`, `enumerate(loader)`, `tqdm(loader)`, or a name assigned
from `DataLoader(...)`), also through `{k: v.to(device) for k, v in batch.items()}`; quiet for
`.to("cpu")`, for `.to()` without a device and in compiled code.
"""

    def visit_Call(self, node: cst.Call, model) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda") \
                or not model.in_loop or model.in_compiled:
            return
        move = device_move(model, node)
        if move is None or move.non_blocking or move.device == "cpu":
            return
        receiver = func.value
        while isinstance(receiver, cst.Subscript):
            receiver = receiver.value
        value = dotted(receiver)
        if value is None:
            return
        name = value.split(".")[0]
        for loop in reversed(model.loops):
            target, iterable = _loop_parts(loop)
            if target is None or name not in target_names(target):
                continue
            if loader_loop(model, loop):
                self.report(model, node, self.message.format(method=func.attr.value),
                            replacement=with_keyword(node, "non_blocking", cst.Name("True")) if one_line(node) else None)
                return
            # `for k, v in batch.items()`: follow v back to the batch it came from
            while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
                    and iterable.func.attr.value in ("items", "values") and not iterable.args:
                iterable = iterable.func.value
            origin = dotted(iterable)
            if origin is None:
                return
            name = origin.split(".")[0]
