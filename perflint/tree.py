"""Fast iteration over the meaningful children of libcst nodes.

libcst's visitor machinery costs about as much as parsing; reading each node type's dataclass fields
directly, minus whitespace and punctuation, costs about a twentieth. The engine's walk and the rules'
subtree searches both use this.
"""

from __future__ import annotations

import dataclasses
from typing import Iterator

import libcst as cst

# Fields that hold only whitespace, punctuation or parentheses: no rule needs to look inside them.
_SKIP_FIELDS = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header",
                "footer", "newline", "equal", "colon", "dot", "star", "default_indent", "default_newline",
                "encoding", "has_trailing_newline", "asynchronous", "operator", "trailing_whitespace"}
_FIELDS: dict[type, tuple[str, ...]] = {}
_NODE_TYPES: dict[type, bool] = {}
_CONCRETE: dict = {}  # find_all's node_type -> whether it names only classes without subclasses


def is_node_type(value_type: type) -> bool:
    """issubclass(value_type, CSTNode), cached: CSTNode is an ABC, and isinstance on it is slow."""
    known = _NODE_TYPES.get(value_type)
    if known is None:
        known = _NODE_TYPES[value_type] = issubclass(value_type, cst.CSTNode)
    return known


def fields(node_type: type) -> tuple[str, ...]:
    """Names of a node type's fields that can hold child nodes worth visiting."""
    names = _FIELDS.get(node_type)
    if names is None:
        names = _FIELDS[node_type] = tuple(
            f.name for f in dataclasses.fields(node_type)
            if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace"))
    return names


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Direct child nodes in source order, whitespace and punctuation left out."""
    for name in fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for child in value:
                if is_node_type(type(child)):
                    yield child
        elif is_node_type(kind):
            yield value


def find_all(node: cst.CSTNode, node_type: type | tuple[type, ...]) -> list:
    """Every node of the given type(s) in a subtree, the root included, in source order."""
    concrete = _CONCRETE.get(node_type)
    if concrete is None:
        wanted = node_type if type(node_type) is tuple else (node_type,)
        concrete = _CONCRETE[node_type] = all(not t.__subclasses__() for t in wanted)
    # `type(...) in`, not isinstance, where no subclass can match: libcst's node classes are ABCs, whose
    # isinstance is a Python call.
    wanted = (node_type if type(node_type) is tuple else (node_type,)) if concrete else ()
    found = []
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) in wanted if concrete else isinstance(current, node_type):
            found.append(current)
        stack.extend(reversed(list(children(current))))
    return found
