"""Which expressions are elementwise ops on tensors (one kernel each in eager mode)."""

from __future__ import annotations

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import method_name
from perflint.model.program import FileModel
from perflint.model.values import NUMBER, TENSOR

_ELEMENTWISE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)


def elementwise_kind(model: FileModel, node: cst.CSTNode) -> str | None:
    """"call" for an elementwise torch call or tensor method (`torch.tanh(x)`, `F.gelu(x)`, `x.sigmoid()`),
    "operator" for `a + b`, `a * b`, `-a`, ... that is not plain Python arithmetic; None otherwise."""
    if type(node) is cst.Call:
        qual = model.qualname(node.func)
        if qual is not None:
            head, _, last = qual.rpartition(".")
            return "call" if last in api.ELEMENTWISE and head in ("torch", "torch.nn.functional", "torch.special") \
                else None
        method = method_name(node)
        if method is not None and method.rstrip("_") in api.ELEMENTWISE and model.kind(node.func.value) in (TENSOR, None) \
                and not _python_scalar(model, node.func.value):
            return "call"
        return None
    if type(node) is cst.BinaryOperation and type(node.operator) in _ELEMENTWISE_OPERATORS:
        return None if _python_scalar(model, node.left) and _python_scalar(model, node.right) else "operator"
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        return None if _python_scalar(model, node.expression) else "operator"
    return None


def _python_scalar(model: FileModel, node: cst.CSTNode) -> bool:
    """A number, or arithmetic on numbers and `math.*` names: `2 / math.pi`, `math.sqrt(2)`."""
    if type(node) in (cst.Integer, cst.Float):
        return True
    if type(node) is cst.BinaryOperation:
        return _python_scalar(model, node.left) and _python_scalar(model, node.right)
    if type(node) is cst.UnaryOperation:
        return _python_scalar(model, node.expression)
    target = node.func if type(node) is cst.Call else node
    qual = model.qualname(target)
    return qual is not None and qual.startswith("math.") or model.kind(node) == NUMBER
