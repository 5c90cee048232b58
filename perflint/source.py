"""How one file is linted, in a worker process or while fixing: the code it holds (a notebook's code
cells), the depth guard in front of libcst's parser, the linter for its rules, and its findings in its
own terms (notebook cells)."""

from __future__ import annotations

from perflint.engine import Linter
from perflint.files import SourceFile
from perflint.limits import too_deep
from perflint.model.project import FileFacts
from perflint.notebook import Notebook, NotebookError
from perflint.rule import SYNTAX_ERROR, Finding, all_rules

_linters: dict[tuple[type, ...], Linter] = {}


def linter_for(codes: tuple[str, ...]) -> Linter:
    """One linter per set of rules, built once per process."""
    rules = all_rules()
    classes = tuple(rules[c] for c in codes if c in rules)
    linter = _linters.get(classes)
    if linter is None:
        linter = _linters[classes] = Linter(classes)
    return linter


def decode(data: bytes) -> str:
    """Text good enough to scan and measure; the parser decodes by the file's coding cookie itself."""
    try:
        return data.decode("utf-8").lstrip("\ufeff")
    except UnicodeError:
        return data.decode("latin-1")


def code_text(file: SourceFile, data: bytes) -> str:
    """The Python a file holds: what the project scan reads and the size limit measures."""
    if file.notebook:
        try:
            return Notebook(data).source
        except NotebookError:
            return ""
    return decode(data)


def lint_code(source: bytes | str, file: SourceFile, facts: FileFacts | None) -> list[Finding]:
    """lint_source behind the depth guard (limits.py)."""
    deep = too_deep(source if isinstance(source, str) else decode(source))
    if deep is not None:
        line, reason = deep
        return [SYNTAX_ERROR.finding(file.shown, line, f"cannot parse: {reason}")]
    return linter_for(file.codes).lint_source(source, file.shown, facts)


def lint(file: SourceFile, data: bytes, facts: FileFacts | None) -> list[Finding]:
    """The findings of one file's content, for the rules that apply to it."""
    if file.notebook:
        try:
            notebook = Notebook(data)
        except NotebookError as e:
            findings = [SYNTAX_ERROR.finding(file.shown, 1, f"cannot read: {e}")]
        else:
            findings = notebook.findings(lint_code(notebook.source, file, facts), file.shown)
    else:
        findings = lint_code(data, file, facts)
    return [f for f in findings if f.code in file.codes]
