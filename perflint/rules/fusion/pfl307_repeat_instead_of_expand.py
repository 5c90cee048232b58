import libcst as cst

from perflint.model.names import method_name

from perflint.rule import Rule

_BROADCASTING = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide, cst.Modulo)


def _int(node) -> int | None:
    if type(node) is cst.Integer:
        return int(node.value)
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus \
            and type(node.expression) is cst.Integer:
        return -int(node.expression.value)
    return None


def _expandable(call: cst.Call) -> bool:
    """`x.unsqueeze(-1).repeat(1, 1, n)`, `x.unsqueeze(0).repeat(n, 1)`, `x[:, None].repeat(1, n)`: every
    factor other than 1 falls on a dimension that is certainly of size 1 (or new), so `.expand()` gives
    the same values without a copy."""
    if not call.args or any(a.keyword is not None or a.star for a in call.args):
        return False
    factors = [a.value for a in call.args]
    if len(factors) == 1 and type(factors[0]) in (cst.Tuple, cst.List):
        factors = [e.value for e in factors[0].elements]
    k = len(factors)
    tiled = {p for p, f in enumerate(factors) if _int(f) != 1}
    if not tiled:
        return False
    receiver = call.func.value
    if type(receiver) is cst.Call and method_name(receiver) == "unsqueeze" and len(receiver.args) == 1:
        d = _int(receiver.args[0].value)
        if d is None:
            return False
        if d < 0:
            return tiled == {k + d}  # counted from the right: the same dimension whatever the rank
        return d == 0 and tiled == {0}  # position 0 is the new dimension or a new leading one
    if type(receiver) is cst.Subscript and len(receiver.slice) == k:
        nones = set()
        for p, element in enumerate(receiver.slice):
            s = element.slice
            if type(s) is cst.Index and type(s.value) is cst.Name and s.value.value == "None":
                nones.add(p)
            elif not (type(s) is cst.Slice and s.lower is None and s.upper is None and s.step is None):
                return False
        return bool(nones) and tiled <= nones
    return False


class RepeatInsteadOfExpand(Rule):
    code = "PFL307"
    name = "repeat-instead-of-expand"
    summary = "`.repeat()` along a size-1 dimension whose result only feeds a broadcasting op: `.expand()` " \
              "(or plain broadcasting) would not copy"
    message = "`.repeat()` copies the tensor {what}; it only feeds an elementwise op, where `.expand()` " \
              "(same arguments, -1 for the 1s) or plain broadcasting gives the same result without a copy"
    default = False
    fix_safety = "none"
    proof_metric = "peak_memory"
    why = """
`.repeat()` allocates a new tensor n times larger and copies the data n times. `.expand()` returns a
view with stride 0 along the expanded dimension: no allocation, no copy. An elementwise op broadcasts a
size-1 dimension by itself, so before `+`, `*`, ... the repeat only costs memory and bandwidth.
"""
    example = """
scores = feats * weights.unsqueeze(-1).repeat(1, 1, feats.shape[-1])
"""
    instead = """
scores = feats * weights.unsqueeze(-1)          # broadcasting
scores = feats * weights.unsqueeze(-1).expand(-1, -1, feats.shape[-1])   # or explicitly
"""
    known_problems = """
Off by default, and deliberately narrow, because `.repeat()` tiles (a size-3 dimension repeated twice
has 6 different positions) and only a size-1 dimension can be expanded instead; the rule cannot see
shapes. It reports only a `.repeat()` used directly as an operand of an arithmetic operator, whose
factors other than 1 fall on a dimension that is size 1 by construction: `x.unsqueeze(-k).repeat(...)`
with the factor at position -k, `x.unsqueeze(0).repeat(n, 1, ...)`, or `x[:, None].repeat(1, n)` with
as many factors as index entries. No automatic fix: dropping the repeat is right only when the other
operand already has the full shape (`x.unsqueeze(-1).repeat(1, 1, n) * 2.0` needs it), and
`.expand(-1, ..., n)` fails where the repeat adds leading dimensions; an in-place write to an expanded
view would also write every repeated position at once.
"""

    def visit_BinaryOperation(self, node: cst.BinaryOperation, model) -> None:
        if type(node.operator) not in _BROADCASTING:
            return
        for operand in (node.left, node.right):
            if type(operand) is cst.Call and method_name(operand) == "repeat" and _expandable(operand):
                self.report(model, operand, self.message.format(what="along a size-1 dimension"))
