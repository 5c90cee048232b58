import libcst as cst

from perflint.model.names import dotted, target_names
from perflint.model.values import NDARRAY, OTHER, TENSOR
from perflint.tree import find_all

from perflint.rule import Rule

_MATMUL = {"torch.matmul", "torch.mm", "torch.bmm", "torch.mv"}


class PerItemMatmulLoop(Rule):
    code = "PFL304"
    call_names = frozenset({"matmul", "mm", "bmm", "mv"})
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

    def visit_BinaryOperation(self, node: cst.BinaryOperation, model) -> None:
        if type(node.operator) is cst.MatrixMultiply:
            self._check(node, node.left, node.right, model)

    def visit_Call(self, node: cst.Call, model) -> None:
        if model.call_name(node) in _MATMUL and len(node.args) == 2:
            self._check(node, node.args[0].value, node.args[1].value, model)
        elif type(node.func) is cst.Attribute and node.func.attr.value in ("matmul", "mm") \
                and model.qualname(node.func) is None and len(node.args) == 1:
            self._check(node, node.func.value, node.args[0].value, model)

    def _check(self, node, left, right, model) -> None:
        if not model.in_hot_loop or model.in_compiled:
            return
        loop = model.loops[-1]
        target, iterable = (loop.target, loop.iter) if type(loop) is cst.For else \
            (loop.for_in.target, loop.for_in.iter) if hasattr(loop, "for_in") else (None, None)
        if target is None:
            return
        names = target_names(target)
        indexed = type(iterable) is cst.Call and dotted(iterable.func) == "range"
        zipped = type(iterable) is cst.Call and dotted(iterable.func) == "zip" and bool(iterable.args) \
            and all(model.kind(a.value) == TENSOR for a in iterable.args)
        bound = model.assigned_in(loop)
        kinds = [_operand(model, _definition(loop, e), names, indexed, zipped, bound) for e in (left, right)]
        if "item" in kinds and None not in kinds:
            self.report(model, node, self.message.format(target=", ".join(sorted(names))))


def _operand(model, expr, names: set[str], indexed: bool, zipped: bool, bound: set[str]) -> str | None:
    """"item" for a per-item operand, "fixed" for a loop-invariant one, None for anything else. An item
    is `a[i]` in a `range` loop, or `a[..., i]` / `t[i]` of something that is surely a tensor (a tuple
    index, a known tensor): `states[i]` in `for i, p in enumerate(params)` is a list of differently
    shaped tensors that cannot be stacked."""
    if type(expr) is cst.Subscript:
        base = dotted(expr.value)
        if base is None or base.split(".")[0] in bound - names or _not_tensors(model.value(expr.value)):
            return None
        indices = [e.slice.value for e in expr.slice if type(e.slice) is cst.Index]
        if any(type(i) is cst.Name and i.value in names for i in indices):
            surely_tensor = len(expr.slice) > 1 or model.kind(expr.value) == TENSOR
            return "item" if indexed or surely_tensor else None
        return "fixed" if not any(n.value in bound for i in indices for n in _all_names(i)) else None
    name = dotted(expr)
    if name is None:
        return None
    if name.split(".")[0] in names:
        return "item" if zipped and "." not in name else None
    return None if name.split(".")[0] in bound else "fixed"


def _not_tensors(v) -> bool:
    """An array, or a list not known to hold tensors (vjepa2's list of SciPy rotation matrices, multiplied with
    NumPy's `@` one pair at a time: no kernel at all, blind review 53)."""
    return v.kind == NDARRAY or v.kind == OTHER and (v.element is None or v.element.kind != TENSOR)


def _definition(loop, expr):
    """For a name assigned exactly once in the loop from a subscript (`h_i = h[:, i]`), that subscript."""
    if type(expr) is not cst.Name:
        return expr
    values = [a.value for a in find_all(loop, cst.Assign)
              if any(type(t.target) is cst.Name and t.target.value == expr.value for t in a.targets)]
    return values[0] if len(values) == 1 and type(values[0]) is cst.Subscript else expr


def _all_names(expr) -> list[cst.Name]:
    return find_all(expr, cst.Name)
