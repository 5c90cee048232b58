"""Small syntactic helpers on libcst nodes: dotted names, call arguments, assignment targets."""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a chain of Names and Attributes, else None."""
    # `type(...) is`, not isinstance: libcst's node classes are ABCs, whose isinstance is a Python call,
    # and this runs for most nodes of a file (Name and Attribute have no subclasses).
    kind = type(node)
    if kind is cst.Name:
        return node.value
    parts = []
    while kind is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
        kind = type(node)
    if kind is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def built_by(node: cst.CSTNode) -> str | None:
    """The name whose call starts a method chain: "Net" for `Net(...).to(device).eval()`; None when the
    chain does not start with a call of a plain name."""
    while type(node) is cst.Call and type(node.func) is cst.Attribute:
        node = node.func.value
    return node.func.value if type(node) is cst.Call and type(node.func) is cst.Name else None


def method_name(call: cst.Call) -> str | None:
    """For `x.foo(...)`, "foo"."""
    func = call.func
    return func.attr.value if type(func) is cst.Attribute else None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index] if index < len(args) else None


def factory_sizes(qual: str, call: cst.Call) -> list[cst.BaseExpression] | None:
    """The dimensions given to a sized factory: `torch.zeros(b, 3)`, `torch.randn((b,))`, `size=(b, d)`,
    `torch.full((b, d), v)`; None for other calls (`arange`, `randint`: their first arguments are no size)."""
    if qual not in _SIZED_FACTORIES:
        return None
    args = [a for a in call.args if a.keyword is not None and a.keyword.value == "size"] or \
        [a for a in call.args if a.keyword is None and not a.star]
    if qual == "torch.full":
        args = args[:1]
    if len(args) == 1 and type(args[0].value) in (cst.Tuple, cst.List):
        return [e.value for e in args[0].value.elements]
    return [a.value for a in args]


_SIZED_FACTORIES = {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full"}


def is_true(node: cst.CSTNode | None) -> bool:
    return type(node) is cst.Name and node.value == "True"


def is_false(node: cst.CSTNode | None) -> bool:
    return type(node) is cst.Name and node.value in ("False", "None")


def target_names(target: cst.BaseExpression) -> set[str]:
    """Plain names an assignment or loop target binds: `i, (x, y)` -> {"i", "x", "y"}."""
    out: set[str] = set()
    stack = [target]
    while stack:
        t = stack.pop()
        if type(t) in (cst.Tuple, cst.List):
            stack += [e.value for e in t.elements]
        elif type(t) is cst.StarredElement:
            stack.append(t.value)
        elif type(t) is cst.Name:
            out.add(t.value)
    return out


def truth_tested(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The sub-expressions whose truth value a condition takes: `a and not b` -> [a, b]."""
    out, stack = [], [test]
    while stack:
        node = stack.pop()
        if type(node) is cst.BooleanOperation:
            stack += [node.left, node.right]
        elif type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
            stack.append(node.expression)
        else:
            out.append(node)
    return out


def string_value(node: cst.CSTNode) -> str | None:
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def int_value(node: cst.CSTNode) -> int | None:
    if type(node) is cst.Integer:
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        inner = int_value(node.expression)
        return -inner if inner is not None else None
    return None


def conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a and b and c` -> [a, b, c]: each must hold for the block to run."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return conjuncts(test.left) + conjuncts(test.right)
    return [test]


def one_line(node: cst.CSTNode) -> bool:
    """Whether a node is written on one line. Fixes rebuild a node outside its block, which would lose the
    indentation of a multi-line argument list: such findings get no fix."""
    return "\n" not in cst.Module(body=[]).code_for_node(node)
