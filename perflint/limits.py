"""What perflint will not hand to libcst's parser, and why.

libcst's native parser recurses once per nesting level, so a deep enough expression overflows the C
stack and the process dies (SIGSEGV, libcst issues #619 and #1000), and it slows down super-linearly well
before that. Python's own parser refuses more than 200 nested brackets and 100 indentation levels, but
not long chains: `a + a + ...`, `a.b.c...`, `x.f().g()...`, `not not ...`, `elif` after `elif`. A file
whose syntax tree is deeper than MAX_DEPTH is reported as PFL001 instead of parsed.

Measured on libcst 1.9.0, Python 3.11, the usual 8 MiB stack (`benchmarks/bench_limits.py`): libcst
crashes at a depth of 5,900 (attribute chain) to 8,300 (unary chains); at depth 1,000 the slowest chain
(subscripts) parses in about a second. The deepest file in 350,000 lines of real PyTorch code is 76 deep.

The check costs about 0.2% of a parse: one pass of `str.count` over blank-line separated paragraphs
(joined while brackets stay open) bounds the depth by the number of characters that can start a level;
only a file where that bound passes MAX_DEPTH (2 of 1,065 real files) is parsed by Python's `ast` to
measure its depth. Worker processes are the backstop for what this misses (runner.py): a crash costs its
own file, not the run.
"""

from __future__ import annotations

import ast
import re
import warnings

MAX_DEPTH = 1000
_PARAGRAPH = re.compile(r"\n[ \t\f]*\r?\n")
# Every level of an expression tree starts at one of these: an operator, a dot, a bracket, a quote (libcst
# nests implicitly concatenated strings), `=` (keywords, walrus, comparisons) or one of the words below.
_LEVEL_CHARS = ".([{+-*/%@&|^~<>=!\"'"
_LEVEL_WORDS = (" and ", " or ", "not ", " if ", "lambda", "await ")


def too_deep(text: str) -> tuple[int, str] | None:
    """The line and reason why libcst must not parse `text`, or None when it may."""
    if len(text) <= MAX_DEPTH or not _may_be_deep(text):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = compile(text, "<perflint>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                           dont_inherit=True)
    except (RecursionError, MemoryError):
        return 1, "too deeply nested for Python's own parser"
    except SyntaxError as e:  # and deep-looking: libcst could crash where Python stops
        return e.lineno or 1, e.msg
    except ValueError:
        return None  # NUL bytes: libcst reports those itself
    depth = _depth(tree)
    if depth > MAX_DEPTH:
        return 1, f"nested more than {MAX_DEPTH} levels deep, where libcst's parser can crash"
    return None


def _may_be_deep(text: str) -> bool:
    """Cheap upper bound: could one statement, or one `elif` chain, be deeper than MAX_DEPTH?"""
    if text.count("elif") > MAX_DEPTH:
        return True
    chunk: list[str] = []
    size = balance = 0
    for paragraph in _PARAGRAPH.split(text):
        chunk.append(paragraph)
        size += len(paragraph)
        balance += sum(map(paragraph.count, "([{")) - sum(map(paragraph.count, ")]}"))
        if balance > 0:
            continue  # a statement goes on across the blank line
        if size > MAX_DEPTH:
            joined = "".join(chunk)
            if sum(map(joined.count, _LEVEL_CHARS)) + sum(map(joined.count, _LEVEL_WORDS)) > MAX_DEPTH:
                return True
        chunk, size, balance = [], 0, 0
    return False


def _depth(tree: ast.AST) -> int:
    """The depth of the syntax tree as libcst builds it: `a and b and c` nests one level per operator."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 2
        if depth > deepest:
            deepest = depth
            if deepest > MAX_DEPTH:
                break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest
