import libcst as cst

from perflint.context import Context
from perflint.rule import Rule


class ScalarCastInLoop(Rule):
    code = "PFL104"
    name = "scalar-cast-in-loop"
    summary = "`float(t)`, `int(t)` or `bool(t)` of a tensor inside a loop syncs every iteration"
    message = "`{func}()` of a tensor in a loop syncs with the device every iteration"
    proof_metric = "syncs"
    why = """
Converting a tensor to a Python number is `.item()` in disguise: the value must come back to the host,
so the host waits for the device. `bool(t)` goes through `aten::is_nonzero`.
"""
    example = """
for x, y in loader:
    loss = criterion(model(x), y)
    running += float(loss)
"""
    instead = """
running = torch.zeros((), device=device)
for x, y in loader:
    loss = criterion(model(x), y)
    running += loss.detach()
"""
    known_problems = """
Reports only when the argument is known to be a tensor (a torch call's result, a module's output, a
loop variable over a data loader, or a name such as `loss`), to stay quiet on ordinary numbers.
"""
    valid = ("for i in range(3):\n    n = int(i)\n", "for s in strs:\n    v = float(s)\n",
             "loss = model(x)\nv = float(loss)\n")
    invalid = ("for x in loader:\n    loss = model(x)\n    total += float(loss)  # expect: PFL104\n",
               "import torch\nfor i in range(3):\n    t = torch.rand(2)\n    n = int(t.sum())  # expect: PFL104\n")

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in ("float", "int", "bool") and len(node.args) == 1 \
                and not ctx.known(func.value) and ctx.in_hot_loop and not ctx.in_compiled \
                and ctx.is_tensor(node.args[0].value):
            self.report(ctx, node, self.message.format(func=func.value))
