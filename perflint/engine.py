"""Lint one file: parse once, build its program model in one walk (calling the rules' node hooks on the
way), let the rules decide with the whole model, then place and filter the findings.

libcst's own visitor dispatch costs about as much as the parse (measured: 2.0 s to visit vs 2.5 s to
parse 27,782 lines); the model's walk reads each node type's child fields directly and calls only the
rule methods registered for that type. Line numbers are computed only when a file has findings (see
positions.py). A file that is not PyTorch code (see model/project.py) is not parsed at all. The engine
never imports or runs the analysed code.
"""

from __future__ import annotations

import ast
import gc
import re
import sys
import warnings
from dataclasses import replace
from typing import Callable, Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState

from perflint.model.crossfile import FileResult, calls_out
from perflint.model.program import FileModel, Walker
from perflint.model.project import FileFacts
from perflint.model.steps import Steps
from perflint.limits import too_deep
from perflint.positions import node_ranges, physical_lines, statement_ranges
from perflint.tree import children
from perflint.rule import RULE_CRASHED, SYNTAX_ERROR, Edit, Finding, Fix, Pending, Rule

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"^\s*#\s*perflint\s*:\s*noqa\s*$", re.IGNORECASE | re.MULTILINE)
_EVIDENCE_CODE = 48  # characters of code quoted in an evidence line


class Linter:
    """Runs a fixed set of rules over files. Build once, lint many."""

    def __init__(self, rules: Iterable[type[Rule]]) -> None:
        self.rules = [rule() for rule in rules]
        self.codes = {rule.code for rule in self.rules}
        self._tables = {(torch, test): _hooks(self._applying(torch, test)) for torch in (True, False)
                        for test in (True, False)}

    def _applying(self, torch: bool, test: bool) -> list[Rule]:
        """The rules for a file: torch rules only on PyTorch code, most rules not on tests (`Rule.in_tests`)."""
        return [r for r in self.rules if (torch or not r.torch_only) and (r.in_tests or not test)]

    def lint_source(self, source: bytes | str, path: str, facts: FileFacts | None = None) -> list[Finding]:
        """Findings for one file's content; never raises for bad input. `facts` come from the whole run
        (model/project.py); without them the file is judged on its own text. Findings that depend on
        other files calling this one every step are left out: see `lint_file`."""
        return self.lint_file(source, path, facts, calls=False).findings

    def lint_file(self, source: bytes | str, path: str, facts: FileFacts | None = None,
                  calls: bool = True) -> FileResult:
        """`lint_source`, plus what the run needs to judge this file together with the others: the
        findings that hold if another file calls one of its functions every step, and its own calls
        out (model/crossfile.py).

        Python's cyclic garbage collector is paused while one file is linted: the parse and the model
        allocate hundreds of thousands of objects that collections mid-lint would walk again and again. The
        model breaks its own cycles when it is done (`FileModel.release`), so the young-generation collection
        after the file finds little (README, "Speed")."""
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            return self._lint_file(source, path, facts, calls)
        finally:
            if paused:
                gc.collect(0)  # the model's cycles, while they are the youngest objects
                gc.enable()

    def _lint_file(self, source: bytes | str, path: str, facts: FileFacts | None, calls: bool) -> FileResult:
        text = _decoded(source)
        if facts is None:
            facts = FileFacts.alone(text, path)
        rules = self._applying(facts.torch, facts.test_file)
        if not rules or _FILE_NOQA.search(text):
            return FileResult()
        deep = too_deep(text)  # libcst's parser would crash or crawl on it (limits.py)
        if deep is not None:
            return FileResult([self._tool_finding(SYNTAX_ERROR, path, deep[0], 1, f"cannot parse: {deep[1]}")])
        try:
            module = cst.parse_module(source)
        except Exception as e:  # the parser's errors are not all ParserSyntaxError (NUL bytes, bad cookies)
            return FileResult([self._syntax_error(source, path, e)])
        if isinstance(source, bytes):
            try:
                text = source.decode(module.encoding).lstrip("\ufeff")
            except (UnicodeError, LookupError):
                pass
        model = FileModel(path, module, facts, text)
        broken: dict[Rule, str] = {}
        visits, leaves, calls_by_name = self._tables[(facts.torch, facts.test_file)]
        walker = Walker(model, visits, leaves, broken, calls_by_name)
        try:
            walker.walk(module)
            model.walked()
            for rule in rules:
                finish = getattr(rule, "finish", None)
                if finish is not None and rule not in broken:
                    walker.call(rule, finish, model)
            # A test file is not the training run: its loops make no function of another file per step. (They did
            # only when a rule that runs on tests was selected, so `--select ALL` reported more than the defaults
            # for the same rule: KAIR's `main_test_usrnet.py` made `USRNet.forward` per step for PFL201.)
            out = calls_out(model) if calls and not facts.test_file else []
        except RecursionError:
            return FileResult([self._tool_finding(SYNTAX_ERROR, path, 1, 1,
                                                  "cannot analyse: the code is nested too deeply")])
        result = FileResult([self._tool_finding(RULE_CRASHED, path, 1, 1, f"{rule.code} ({rule.name}) raised {error}")
                             for rule, error in broken.items()])
        pending = [p for p in model.findings if p.rule not in broken and (calls or not p.requires or p.assumed)]
        if pending:
            for f in self._place(model, pending, text, path):
                if f.requires and not calls:  # alone, an assumed finding stays assumed
                    f = replace(f, requires=())
                (result.conditional if f.requires else result.findings).append(f)
        result.calls = out
        model.release()
        return result

    def _syntax_error(self, source: bytes | str, path: str, error: Exception) -> Finding:
        """Python's own compiler says best where and why a file is broken; libcst's message is the
        fallback for what Python accepts but libcst does not."""
        if isinstance(error, RecursionError):
            return self._tool_finding(SYNTAX_ERROR, path, 1, 1, "cannot parse: the code is nested too deeply")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as e:
            return self._tool_finding(SYNTAX_ERROR, path, e.lineno or 1, max(e.offset or 1, 1), f"cannot parse: {e.msg}")
        except (ValueError, UnicodeError, RecursionError, MemoryError) as e:
            return self._tool_finding(SYNTAX_ERROR, path, 1, 1, f"cannot parse: {_first_line(e)}")
        line = getattr(error, "raw_line", None) or 1
        return self._tool_finding(SYNTAX_ERROR, path, line, 1, f"cannot parse: {_first_line(error)}")

    @staticmethod
    def _tool_finding(tool, path: str, line: int, col: int, message: str) -> Finding:
        return Finding(path, line, col, line, col, tool.code, tool.name, message, tool.severity)

    def _place(self, model: FileModel, pending: list[Pending], text: str, path: str) -> list[Finding]:
        module = model.module
        wanted = {_statement_of(model, n) for p in pending
                  for n in (p.node, p.fix_node, p.end_node, *(node for _, node in p.evidence)) if n is not None}
        ranges = {} if not module.body else node_ranges(module) if None in wanted \
            else statement_ranges(module, text, wanted)
        if any(p.node not in ranges for p in pending):  # a path the model got wrong: never a missing line
            ranges = node_ranges(module)
        lines = physical_lines(text)
        indents = None  # enclosing block indentation of fix targets, computed at the first fix
        out = []
        steps = Steps.of(model)
        for p in pending:
            line, col, end_line, end_col = ranges[p.node]
            if p.end_node is not None and p.end_node in ranges:
                end_line, end_col = ranges[p.end_node][2:]
            if _suppressed(lines, (line, end_line), p.rule.code):
                continue
            fix = None
            if p.replacement is not None:
                target = p.fix_node or p.node
                t_line, t_col, t_end_line, t_end_col = ranges[target]
                if indents is None:
                    indents = _block_indents(module, {q.fix_node or q.node for q in pending if q.replacement})
                content = _code_in_block(module, p.replacement, indents[target])
                fix = Fix(p.rule.fix_safety if p.rule.fix_safety != "none" else "unsafe",
                          f"Replace with `{content}`" if "\n" not in content else "Apply the rewrite",
                          (Edit(content, (t_line, t_col + 1), (t_end_line, t_end_col + 1)),))
            evidence = tuple(_evidence(module, ranges, text, node) for text, node in p.evidence
                             if node is None or node in ranges)
            out.append(Finding(path, line, col + 1, end_line, end_col + 1, p.rule.code, p.rule.name,
                               p.message, p.rule.severity, fix, evidence, p.requires, assumed=p.assumed,
                               within="" if p.requires else steps.uncalled_function(p.node)))
        return out


def _hooks(rules: list[Rule]) -> tuple[dict, dict, dict]:
    """The rules' visit_<Node> and leave_<Node> methods by node type, and the `visit_Call` methods of rules
    with `call_names` by callee name."""
    visits: dict[type, list[Callable]] = {}
    leaves: dict[type, list[Callable]] = {}
    by_name: dict[str, list[Callable]] = {}
    for rule in rules:
        for attr in dir(type(rule)):
            if attr.startswith("visit_") or attr.startswith("leave_"):
                node_type = getattr(cst, attr[6:], None)
                if node_type is None:
                    raise RuntimeError(f"{rule.code}: {attr} names no libcst node type")
                if attr == "visit_Call" and rule.call_names is not None:
                    for name in rule.call_names:
                        by_name.setdefault(name, []).append(rule.visit_Call)
                    continue
                table = visits if attr[0] == "v" else leaves
                table.setdefault(node_type, []).append(getattr(rule, attr))
    return visits, leaves, by_name


def _block_indents(module: cst.Module, targets: set[cst.CSTNode]) -> dict[cst.CSTNode, list[str]]:
    """The indentation tokens of the blocks enclosing each target (one fast walk, only for fixes)."""
    found: dict[cst.CSTNode, list[str]] = {}
    indents: list[str] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:  # the block's children are done
            indents.pop()
            continue
        if node in targets:
            found[node] = list(indents)
        if type(node) is cst.IndentedBlock:
            indents.append(module.default_indent if node.indent is None else node.indent)
            stack.append((node, True))
        stack.extend((child, False) for child in reversed(list(children(node))))
    return found


def _code_in_block(module: cst.Module, node: cst.CSTNode, indent_tokens: list[str]) -> str:
    """A node's code as it reads inside its block. `Module.code_for_node` alone drops the block's
    indentation from continuation lines inside brackets (libcst emits it only through the indent stack)."""
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens = list(indent_tokens)
    node._codegen(state)
    return "".join(state.tokens)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _statement_of(model: FileModel, node: cst.CSTNode) -> tuple[int, ...] | None:
    """The statement holding a node (its path, `FileModel.statement_path`), through its first descendant
    the walk placed (a `WithItem` is not placed, its call is); None if there is none."""
    todo = [node]
    while todo:
        current = todo.pop()
        if current in model.sites:
            return model.statement_path(current)
        todo.extend(reversed(list(children(current))))
    return None


def _suppressed(lines: list[str], rows: tuple[int, int], code: str) -> bool:
    for row in set(rows):
        if 0 < row <= len(lines) and "noqa" in lines[row - 1].lower():
            m = _NOQA.search(lines[row - 1])
            if m and (m.group("codes") is None or code in re.split(r"[,\s]+", m.group("codes").upper())):
                return True
    return False


def _evidence(module: cst.Module, ranges: dict, text: str, node: cst.CSTNode) -> str:
    """One line of evidence: the text with the node's code in place of "{}", and the node's line."""
    if node is None:
        return text
    if "{}" in text:
        code = " ".join(module.code_for_node(node).split())
        if len(code) > _EVIDENCE_CODE:
            code = code[:_EVIDENCE_CODE - 1] + "\u2026"
        text = text.replace("{}", code)
    return f"{text} (line {ranges[node][0]})"


def _decoded(source: bytes | str) -> str:
    if isinstance(source, str):
        return source
    try:
        return source.decode("utf-8").lstrip("\ufeff")
    except UnicodeError:
        return source.decode("latin-1")


sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
