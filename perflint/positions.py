"""Line and column numbers for reported nodes, computed only for files that have findings.

libcst's PositionProvider costs about 2.4x a parse (measured on 27,782 lines: parse 2.5 s, positions
6.0 s), because it builds two objects per node and splits every token with a regex. This codegen state
keeps plain tuples and counts newlines with str methods; it gives the same syntactic ranges.
"""

from __future__ import annotations

import ast
import re
import warnings
from contextlib import contextmanager
from typing import Iterable, Iterator

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")
# Python's line breaks only (str.splitlines also splits on \f, \v, \x1c, \u2028...), each line with its own.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

Range = tuple[int, int, int, int]  # start line (1-based), start column (0-based), end line, end column


class _PositionState(CodegenState):
    __slots__ = ("line", "column", "ranges", "_stack")

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.line = 1
        self.column = 0
        self.ranges: dict[cst.CSTNode, Range] = {}
        self._stack: list[tuple[int, int]] = []

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
        elif "\r" not in value:
            self.line += value.count("\n")
            self.column = len(value) - value.rfind("\n") - 1
        else:
            parts = _NEWLINE.split(value)
            self.line += len(parts) - 1
            self.column = len(parts[-1])

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self._stack.pop()
        if node not in self.ranges:
            self.ranges[node] = (line, column, self.line, self.column)

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Iterator[None]:
        line, column = self.line, self.column
        try:
            yield
        finally:
            end_line, end_column = self.line, self.column
            if start_node is not None:
                line, column = self.ranges[start_node][:2]
            if end_node is not None:
                end_line, end_column = self.ranges[end_node][2:]
            self.ranges[node] = (line, column, end_line, end_column)


def physical_lines(text: str) -> list[str]:
    """The lines of `text` as Python counts them, with their line breaks: what line numbers index."""
    return _LINE.findall(text)


def node_ranges(module: cst.Module) -> dict[cst.CSTNode, Range]:
    """Syntactic range of every node in the module, as PositionProvider would give it."""
    state = _PositionState(module.default_indent, module.default_newline)
    module._codegen(state)
    return state.ranges


def statement_ranges(module: cst.Module, text: str, paths: Iterable[tuple[int, ...]]) -> dict[cst.CSTNode, Range]:
    """The same ranges, for the nodes of some statements only, each named by its path (`FileModel.
    statement_path`: its index in `module.body`, then in the bodies of the blocks around it).

    Code generation is most of the cost of positions, so a file with a finding in one statement of a long
    method renders only that statement: the stdlib parser (twenty times faster than libcst's) says on which
    line each statement starts. Falls back to the whole module where the two parsers disagree."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return node_ranges(module)
    top = _starts(module.body, tree.body)
    if top is None:
        return node_ranges(module)
    wanted = set(paths)
    state = _PositionState(module.default_indent, module.default_newline)
    for path in sorted(wanted):
        if any(path[:k] in wanted for k in range(1, len(path))):
            continue  # an enclosing statement renders it
        statement, (line, node) = module.body[path[0]], top[path[0]]
        indents: list[str] = []
        for index in path[1:]:
            block = statement.body
            starts = _starts(block.body, node.body) if isinstance(node, _SCOPES) else None
            if starts is None:
                break  # render the enclosing statement whole
            indents.append(module.default_indent if block.indent is None else block.indent)
            statement, (line, node) = block.body[index], starts[index]
        state.indent_tokens = list(indents)
        state.line, state.column = line, 0
        statement._codegen(state)
    return state.ranges


# Statements whose `body` is the same list of statements in both trees.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If,
           ast.With, ast.AsyncWith, ast.Try, getattr(ast, "TryStar", ast.Try))


def _starts(statements, nodes: list[ast.stmt]) -> list[tuple[int, ast.stmt]] | None:
    """For each libcst statement of a body, the line where its code (leading blank and comment lines
    included) starts and the stdlib node of its first statement; None where the two bodies do not match."""
    out, i = [], 0
    for stmt in statements:
        if i >= len(nodes):
            return None
        first = nodes[i]
        i += len(stmt.body) if type(stmt) is cst.SimpleStatementLine else 1
        line = min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", ())])
        decorators = getattr(stmt, "decorators", ())
        lead = len(stmt.leading_lines) + (len(decorators[0].leading_lines) if decorators else 0)
        out.append((line - lead, first))
    return out if i == len(nodes) else None
