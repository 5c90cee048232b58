import libcst as cst

from perflint.context import Context
from perflint.rule import Rule


class PrintTensorInLoop(Rule):
    code = "PFL106"
    name = "print-tensor-in-loop"
    summary = "printing or formatting a tensor inside a loop copies it to the host and syncs every iteration"
    message = "formatting a tensor in a loop copies it to the host and syncs every iteration"
    proof_metric = "syncs"
    why = """
`print(t)`, `f"{t}"`, `str(t)` and `"...".format(t)` need the tensor's values on the host, so each one
is a device-to-host copy plus a wait for all queued kernels; every element is then formatted in Python.
"""
    example = """
for step, (x, y) in enumerate(loader):
    loss = train_step(x, y)
    print(f"step {step} loss {loss}")
"""
    instead = """
for step, (x, y) in enumerate(loader):
    loss = train_step(x, y)
    if step % 100 == 0:              # log every k steps
        print(f"step {step} loss {loss.item():.4f}")
"""
    known_problems = "Quiet in `if step % k == 0:` blocks and for values not known to be tensors."
    valid = ("for i in range(3):\n    print(i)\n", "for s in xs:\n    print(f'{s}')\n",
             "for step in range(9):\n    loss = f(x)\n    if step % 10 == 0:\n        print(loss)\n")
    invalid = ("for x in loader:\n    loss = model(x)\n    print(loss)  # expect: PFL106\n",
               "for x in loader:\n    loss = model(x)\n    msg = f'loss {loss}'  # expect: PFL106\n",
               "for x in loader:\n    loss = model(x)\n    s = 'loss {}'.format(loss)  # expect: PFL106\n")

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        if not ctx.in_hot_loop or ctx.in_compiled:
            return
        func = node.func
        printing = isinstance(func, cst.Name) and func.value in ("print", "str", "repr") and not ctx.known(func.value)
        formatting = isinstance(func, cst.Attribute) and func.attr.value == "format" \
            and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))
        if (printing or formatting) and any(ctx.is_tensor(a.value) for a in node.args):
            self.report(ctx, node)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression, ctx: Context) -> None:
        if ctx.in_hot_loop and not ctx.in_compiled and ctx.is_tensor(node.expression):
            self.report(ctx, node)
