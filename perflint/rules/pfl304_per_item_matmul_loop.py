import libcst as cst

from perflint.context import TENSOR, dotted, find_all, target_names
from perflint.rule import Rule

_MATMUL = {"torch.matmul", "torch.mm", "torch.bmm", "torch.mv"}


class PerItemMatmulLoop(Rule):
    code = "PFL304"
    name = "per-item-matmul-loop"
    summary = "a matmul per loop item (`[a[i] @ b[i] for i in range(n)]`): one batched matmul does them all"
    message = "one matmul per item of the loop over `{target}`; a single batched `@` / `torch.bmm` / " \
              "`torch.einsum` on the stacked operands does all of them in one kernel"
    proof_metric = "ops"
    why = """
Each small matmul is one kernel launch plus Python and dispatcher overhead (several microseconds on the
host), and small matrices use a fraction of the device. `a @ b` on 3-D tensors (or `torch.bmm`,
`torch.einsum`) runs all n products as one batched GEMM kernel: one launch, full occupancy, and no
`torch.stack` of the n results afterwards.
"""
    example = """
out = torch.stack([a[i] @ b[i] for i in range(a.shape[0])])
"""
    instead = """
out = a @ b                      # (n, p, q) @ (n, q, r) -> (n, p, r), or torch.bmm(a, b)
out = torch.einsum("npq,nqr->npr", a, b)
"""
    known_problems = """
Reports `x @ y`, `torch.matmul/mm/bmm/mv` and `.matmul()/.mm()` in a loop when one operand is indexed by
the loop variable (`a[i]`, `a[:, i]`, or a name assigned once in the loop from such a subscript) or is a
loop variable bound by `zip(...)` of known tensors, and the other is the same or does not change in the
loop. A plain `a[i]` counts only in a `for i in range(...)` loop or when `a` is known to be a tensor:
`state[i]` in `for i, p in enumerate(params)` indexes a list of differently shaped tensors (optimizer
state), which cannot be stacked; `zip` of lists is quiet for the same reason. Quiet when
an operand is rebuilt in the loop (`h = h @ w[i]` is a sequential chain, not a batch) or is any other
expression. It cannot see shapes: items of different sizes cannot be stacked (use padding or nested
tensors there, or leave the loop).
"""
    valid = (
        "for i in range(n):\n    h = h @ w[i]\n",
        "out = a @ b\n",
        "for layer in layers:\n    x = layer(x)\n",
        "for w in weights:\n    outs.append(x @ w)\n",
        "for i, p in enumerate(params):\n    v = row_vars[i] @ col_vars[i]\n",
        "for x, w in zip(xs, ws):\n    ys.append(x.mm(w))\n",
    )
    invalid = (
        "out = [a[i] @ b[i] for i in range(n)]  # expect: PFL304\n",
        "import torch\nfor i in range(n):\n    out[i] = torch.matmul(q[i], k)  # expect: PFL304\n",
        "import torch\nxs = torch.randn(4, 2, 3)\nws = torch.randn(4, 3, 2)\nfor x, w in zip(xs, ws):\n"
        "    ys.append(x.mm(w))  # expect: PFL304\n",
        "import torch\nfor i in range(n):\n    h_i = h[:, i, :]\n    w_i = self.w[i, :, :]\n"
        "    out[:, i, :] = torch.matmul(h_i, w_i)  # expect: PFL304\n",
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        if isinstance(node.operator, cst.MatrixMultiply):
            self._check(node, node.left, node.right, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.call_name(node) in _MATMUL and len(node.args) == 2:
            self._check(node, node.args[0].value, node.args[1].value, ctx)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("matmul", "mm") \
                and ctx.qualname(node.func) is None and len(node.args) == 1:
            self._check(node, node.func.value, node.args[0].value, ctx)

    def _check(self, node, left, right, ctx) -> None:
        if not ctx.in_hot_loop or ctx.in_compiled:
            return
        loop = ctx.loops[-1]
        target, iterable = (loop.target, loop.iter) if isinstance(loop, cst.For) else \
            (loop.for_in.target, loop.for_in.iter) if hasattr(loop, "for_in") else (None, None)
        if target is None:
            return
        names = target_names(target)
        indexed = isinstance(iterable, cst.Call) and dotted(iterable.func) == "range"
        zipped = isinstance(iterable, cst.Call) and dotted(iterable.func) == "zip" and bool(iterable.args) \
            and all(ctx.kind(a.value) == TENSOR for a in iterable.args)
        bound = ctx.assigned_in(loop)
        kinds = [_operand(ctx, _definition(loop, e), names, indexed, zipped, bound) for e in (left, right)]
        if "item" in kinds and None not in kinds:
            self.report(ctx, node, self.message.format(target=", ".join(sorted(names))))


def _operand(ctx, expr, names: set[str], indexed: bool, zipped: bool, bound: set[str]) -> str | None:
    """"item" for a per-item operand, "fixed" for a loop-invariant one, None for anything else. An item
    is `a[i]` in a `range` loop, or `a[..., i]` / `t[i]` of something that is surely a tensor (a tuple
    index, a known tensor): `states[i]` in `for i, p in enumerate(params)` is a list of differently
    shaped tensors that cannot be stacked."""
    if isinstance(expr, cst.Subscript):
        base = dotted(expr.value)
        if base is None or base.split(".")[0] in bound - names:
            return None
        indices = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
        if any(isinstance(i, cst.Name) and i.value in names for i in indices):
            surely_tensor = len(expr.slice) > 1 or ctx.kind(expr.value) == TENSOR
            return "item" if indexed or surely_tensor else None
        return "fixed" if not any(n.value in bound for i in indices for n in _all_names(i)) else None
    name = dotted(expr)
    if name is None:
        return None
    if name.split(".")[0] in names:
        return "item" if zipped and "." not in name else None
    return None if name.split(".")[0] in bound else "fixed"


def _definition(loop, expr):
    """For a name assigned exactly once in the loop from a subscript (`h_i = h[:, i]`), that subscript."""
    if not isinstance(expr, cst.Name):
        return expr
    values = [a.value for a in find_all(loop, cst.Assign)
              if any(isinstance(t.target, cst.Name) and t.target.value == expr.value for t in a.targets)]
    return values[0] if len(values) == 1 and isinstance(values[0], cst.Subscript) else expr


def _all_names(expr) -> list[cst.Name]:
    return find_all(expr, cst.Name)
