import libcst as cst

from perflint.context import Context, truth_tested
from perflint.rule import Rule


class TensorAsCondition(Rule):
    code = "PFL105"
    name = "tensor-as-condition"
    summary = "a tensor used as a condition (`if t`, `while loss > eps`, `assert`) inside a loop syncs every iteration"
    message = "this condition reads a tensor's value on the host: a device sync every iteration"
    proof_metric = "syncs"
    why = """
Python needs a real `True`/`False` to branch, so `if t:` calls `bool(t)`, which runs
`aten::is_nonzero > aten::item > aten::_local_scalar_dense`: a device-to-host copy and a wait for all
queued work. `while loss > eps:` pays it on every iteration of the loop it controls.
"""
    example = """
for x in loader:
    loss = step(x)
    if torch.isnan(loss):
        raise FloatingPointError
"""
    instead = """
bad = torch.zeros((), dtype=torch.bool, device=device)
for x in loader:
    loss = step(x)
    bad |= torch.isnan(loss)   # stays on the device
if bad:                        # one sync
    raise FloatingPointError
"""
    known_problems = """
Reports only conditions known to be tensors (see PFL104). `if t is None` and `if len(t)` are fine.
A `while` condition runs every iteration, so it is reported even outside another loop.
"""
    valid = ("for x in xs:\n    if x is None:\n        continue\n", "loss = model(x)\nif loss > 0:\n    pass\n",
             "for i in range(3):\n    if i % 10 == 0:\n        pass\n")
    invalid = ("while loss > eps:  # expect: PFL105\n    loss = step()\n",
               "import torch\nfor x in xs:\n    if torch.isnan(x).any():  # expect: PFL105\n        break\n",
               "import torch\nfor x in loader:\n    loss = model(x)\n    assert not torch.isinf(loss)  # expect: PFL105\n")

    def _check(self, node: cst.CSTNode, test: cst.BaseExpression, ctx: Context) -> None:
        if not ctx.in_compiled and not ctx.in_logging_gate \
                and any(ctx.is_tensor(t) for t in truth_tested(test)):
            self.report(ctx, node)

    def visit_If(self, node: cst.If, ctx: Context) -> None:
        if ctx.in_loop:
            self._check(node.test, node.test, ctx)

    def visit_While(self, node: cst.While, ctx: Context) -> None:
        self._check(node, node.test, ctx)

    def visit_Assert(self, node: cst.Assert, ctx: Context) -> None:
        if ctx.in_loop:
            self._check(node, node.test, ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx: Context) -> None:
        if ctx.in_loop:
            self._check(node.test, node.test, ctx)
