import libcst as cst

from perflint.context import LOADER, MODULE, OPTIMIZER, find_all, device_move, dotted
from perflint.rule import Rule


class LoopInvariantTransfer(Rule):
    code = "PFL202"
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
Looks only at names and attributes (`mask`, `self.pos`) that nothing in the innermost loop rebinds:
not assigned, not the loop target, not changed in place (`m.mul_()`, `xs.append()`), moved to a device
that does not change in the loop either (`for device, grads in grouped.items(): scale.to(device)` moves
the value to a different device each time: quiet). It cannot see a
callee that mutates the value, nor know whether the value already lives on the device (then `.to()` is a
cheap no-op, and the finding only costs a line). Quiet for modules (`model.to(device)`), optimizers and
loaders, for `.to()` whose argument does not look like a device (`.to(torch.float16)`, `.to(other)`),
for `.cpu()` (PFL103), in `if step % k == 0:` blocks and in compiled code.
"""
    valid = (
        "for x in loader:\n    x = x.to(device)\n",
        "for x, y in loader:\n    y = y.cuda()\n",
        "for i in range(3):\n    m = make()\n    m2 = m.to(device)\n",
        "for i in range(3):\n    model.to(device)\n",
        "for i in range(3):\n    m = mask.to(torch.float16)\n",
        "for i in range(3):\n    mask.mul_(2)\n    m = mask.to(device)\n",
        "for (device, _), grads in grouped.items():\n    s = scale.to(device)\n",
    )
    invalid = (
        "mask = torch.ones(4)\nfor x in loader:\n    y = model(x.to(device)) * mask.to(device)  # expect: PFL202\n",
        "for i in range(10):\n    w = self.weights.cuda()  # expect: PFL202\n",
        "outs = [m @ w.to(dev) for m in ms]  # expect: PFL202\n",
    )

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda") \
                or not ctx.in_hot_loop or ctx.in_compiled:
            return
        value = dotted(func.value)
        if value is None or value in ("self", "cls") or ctx.kind(func.value) in (MODULE, OPTIMIZER, LOADER):
            return
        move = device_move(ctx, node)
        if move is None or move.device == "cpu":
            return
        head = value.split(".")
        bound = ctx.assigned_in(ctx.loops[-1])
        if any(".".join(head[:i]) in bound for i in range(1, len(head) + 1)):
            return
        if move.expr is not None and any(n.value in bound for n in find_all(move.expr, cst.Name)):
            return  # `for device, grads in grouped.items(): scale.to(device)`: a different device each time
        self.report(ctx, node, self.message.format(value=value, method=func.attr.value))
