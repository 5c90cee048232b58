import libcst as cst

from perflint.model.names import dotted
from perflint.model.values import LOADER, MODULE, OPTIMIZER
from perflint.rules.transfers.moves import device_move
from perflint.tree import find_all

from perflint.rule import Rule


class LoopInvariantTransfer(Rule):
    code = "PFL202"
    # Off by default since blind review 26: none of its 4 findings in the reviews was right (buffers and
    # constant tokens already on the device, where `.to()` is a no-op: lerobot, DensePose, torchtune).
    default = False
    call_names = frozenset({"to", "cuda"})
    name = "loop-invariant-transfer"
    summary = "`.to(device)` / `.cuda()` of a value that does not change in the loop: move it once, before the loop"
    message = "`{value}` is not reassigned in this loop, yet it is moved with `.{method}()` every iteration; " \
              "move it once before the loop"
    proof_metric = "transfers"
    why = """
A value that the loop never reassigns is the same on every iteration, so copying it to the device in
the loop repeats the same host-to-device copy (allocation + `cudaMemcpyAsync` + for pageable memory a
host wait for the staging copy) N times. A constant mask, a class-weight vector or position table moved
per step costs a transfer and an allocation per step; moved once before the loop it costs one.
"""
    example = """
weights = torch.tensor(class_weights)
for x, y in loader:
    loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=weights.to(device))
"""
    instead = """
weights = torch.tensor(class_weights).to(device)  # once
for x, y in loader:
    loss = F.cross_entropy(model(x.to(device)), y.to(device), weight=weights)
"""
    known_problems = """
Off by default: the blind reviews judged none of its 4 findings right. Most values it sees are a
module's buffers or tensors made on the device already, where `.to(device)` returns the tensor itself,
and the source rarely says where the value lives. Looks only at names and attributes (`mask`,
`self.pos`) that nothing in the innermost loop rebinds:
not assigned, not the loop target, not changed in place (`m.mul_()`, `xs.append()`), moved to a device
that does not change in the loop either (`for device, grads in grouped.items(): scale.to(device)` moves
the value to a different device each time: quiet). It cannot see a
callee that mutates the value, nor know whether the value already lives on the device (then `.to()` is a
cheap no-op, and the finding only costs a line). Quiet for modules (`model.to(device)`), optimizers and
loaders, for `.to()` whose argument does not look like a device (`.to(torch.float16)`, `.to(other)`),
for `.cpu()` (PFL103), in `if step % k == 0:` blocks and in compiled code.
"""

    def visit_Call(self, node: cst.Call, model) -> None:
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in ("to", "cuda") \
                or not model.in_hot_loop or model.in_compiled:
            return
        value = dotted(func.value)
        if value is None or value in ("self", "cls") or model.kind(func.value) in (MODULE, OPTIMIZER, LOADER):
            return
        move = device_move(model, node)
        if move is None or move.device == "cpu":
            return
        head = value.split(".")
        bound = model.assigned_in(model.loops[-1])
        if any(".".join(head[:i]) in bound for i in range(1, len(head) + 1)):
            return
        if move.expr is not None and any(n.value in bound for n in find_all(move.expr, cst.Name)):
            return  # `for device, grads in grouped.items(): scale.to(device)`: a different device each time
        self.report(model, node, self.message.format(value=value, method=func.attr.value))
