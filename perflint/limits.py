"""What perflint will not hand to libcst's parser, and why.

libcst's native parser recurses once per nesting level, so a deep enough expression overflows the C
stack and the process dies (SIGSEGV, libcst issues #619 and #1000), and it slows down super-linearly well
before that. Python's own parser refuses more than 200 nested brackets and 100 indentation levels, but
not long chains: `a + a + ...`, `a.b.c...`, `x.f().g()...`, `not not ...`, `elif` after `elif`. A file
with a statement nested deeper than MAX_DEPTH levels is reported as PFL001 instead of parsed.

Measured on libcst 1.9.0, Python 3.11, the usual 8 MiB stack (`python benchmarks/bench_limits.py`, in
the README under "Limits"): libcst fails from a depth of 3,490 (lambda chains) to 8,364 (`elif`
chains), by crashing or by taking more than a minute; at depth 1,000 every chain tried parses in about
a second or less. The deepest statement in 350,000 lines of real PyTorch code is 90 levels deep.

The check is cheap because almost every file fails its first, crude bound: one `str.count` pass over
blank-line separated paragraphs (joined while brackets stay open) counts the characters that can start a
level. Only a statement where that count passes MAX_DEPTH, even with its strings and comments taken out
(big literal tables of model configs, mostly), is measured level by level: each bracket opens a level,
and a comma closes the chain that ran before it. A file with more than MAX_DEPTH `elif`s is measured by
Python's `ast`. Worker processes are the backstop for what this misses (runner.py, pool.py): a crash
costs its own file, not the run.
"""

from __future__ import annotations

import ast
import re
import warnings

MAX_DEPTH = 1000
_PARAGRAPH = re.compile(r"\n[ \t\f]*\r?\n")
# Every level of an expression starts at one of these: an operator, a dot, a bracket, a quote (libcst
# nests implicitly concatenated strings), `=` (keywords, walrus, comparisons) or one of the words.
_LEVEL_CHARS = ".([{+-*/%@&|^~<>=!\"'"
_LEVEL_WORDS = (" and ", " or ", "not ", " if ", "lambda", "await ")
_STRINGS = re.compile(r"""(?s)[rRbBuUfF]{0,2}(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
                      r"|#[^\n]*|\\\r?\n")
_TOKENS = re.compile(r"[(\[{]|[)\]}]|,|[\n;]|''|[-+*/%@&|^~<>=!.]|\b(?:and|or|not|if|lambda|await)\b")


def too_deep(text: str) -> tuple[int, str] | None:
    """The line and reason why libcst must not parse `text`, or None when it may."""
    if len(text) <= MAX_DEPTH:
        return None
    if text.count("elif") > MAX_DEPTH:
        return _by_ast(text)
    for line, statement in _crowded(text):
        code = _STRINGS.sub("''", statement)
        if _levels(code) > MAX_DEPTH and _nesting(code) > MAX_DEPTH:
            return line, f"nested more than {MAX_DEPTH} levels deep, where libcst's parser can crash"
    return None


def _levels(text: str) -> int:
    return sum(map(text.count, _LEVEL_CHARS)) + sum(map(text.count, _LEVEL_WORDS))


def _crowded(text: str):
    """(first line, text) of each run of statements with more than MAX_DEPTH characters that can start
    a level: blank-line paragraphs, joined while a bracket stays open across the blank line."""
    chunk: list[str] = []
    line = start = 1
    size = balance = 0
    for paragraph in _PARAGRAPH.split(text):
        chunk.append(paragraph)
        size += len(paragraph)
        balance += sum(map(paragraph.count, "([{")) - sum(map(paragraph.count, ")]}"))
        line += paragraph.count("\n") + 2
        if balance > 0:
            continue  # a statement goes on across the blank line
        if size > MAX_DEPTH:
            joined = "\n\n".join(chunk)
            if _levels(joined) > MAX_DEPTH:
                yield start, joined
        chunk, size, balance, start = [], 0, 0, line


def _nesting(code: str) -> int:
    """The deepest level in `code` (strings and comments taken out): a bracket opens a level, and the chain
    tokens before a comma or the end of a statement add up within theirs."""
    chains = [0]  # chain tokens so far in the current element of each open bracket
    depth = deepest = 0
    for m in _TOKENS.finditer(code):
        token = m.group()
        if token in ("(", "[", "{"):
            chains[-1] += 1
            depth += 1
            chains.append(0)
        elif token in (")", "]", "}"):
            if len(chains) > 1:
                depth -= chains.pop()
        elif token == ",":
            depth -= chains[-1]
            chains[-1] = 0
        elif token in ("\n", ";"):
            if len(chains) == 1:
                depth = chains[0] = 0
        else:
            chains[-1] += 1
            depth += 1
        if depth > deepest:
            deepest = depth
    return deepest


def _by_ast(text: str) -> tuple[int, str] | None:
    """Depth by Python's own parser: for `elif` chains, which nest one level per branch across statements."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = compile(text, "<perflint>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                           dont_inherit=True)
    except (RecursionError, MemoryError):
        return 1, "too deeply nested for Python's own parser"
    except (SyntaxError, ValueError):
        return None  # the parser reports it
    deepest = 0
    stack = [(tree, 1)]
    while stack and deepest <= MAX_DEPTH:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return (1, f"nested more than {MAX_DEPTH} levels deep (`elif` after `elif`), where libcst's parser can crash") \
        if deepest > MAX_DEPTH else None
