"""How one file is linted, in a worker process or while fixing: the code it holds (a notebook's code
cells), the linter for its rules, and its findings in its own terms (notebook cells)."""

from __future__ import annotations

from perflint.engine import Linter
from perflint.model.crossfile import FileResult
from perflint.files import SourceFile
from perflint.model.project import FileFacts
from perflint.notebook import Notebook, NotebookError
from perflint.rule import SYNTAX_ERROR, all_rules

_linters: dict[tuple[type, ...], Linter] = {}


def linter_for(codes: tuple[str, ...]) -> Linter:
    """One linter per set of rules, built once per process."""
    rules = all_rules()
    classes = tuple(rules[c] for c in codes if c in rules)
    linter = _linters.get(classes)
    if linter is None:
        linter = _linters[classes] = Linter(classes)
    return linter


def code_text(file: SourceFile, data: bytes) -> str:
    """The Python a file holds: what the project scan reads and the size limit measures."""
    if file.notebook:
        try:
            return Notebook(data).source
        except NotebookError:
            return ""
    return data.decode("utf-8", "replace")  # good enough to scan; the parser honours the coding cookie


def lint(file: SourceFile, data: bytes, facts: FileFacts | None) -> FileResult:
    """What linting one file's content gives the run (its findings, for the rules that apply to it; those
    that hold if another file calls it every step; its calls out). A notebook is imported by no one: its
    findings are all it gives."""
    if file.notebook:
        try:
            notebook = Notebook(data)
        except NotebookError as e:
            findings = [SYNTAX_ERROR.finding(file.shown, 1, f"cannot read: {e}")]
        else:
            findings = notebook.findings(linter_for(file.codes).lint_source(notebook.source, file.shown, facts),
                                         file.shown)
        return FileResult([f for f in findings if f.code in file.codes])
    result = linter_for(file.codes).lint_file(data, file.shown, facts)
    result.findings = [f for f in result.findings if f.code in file.codes]
    result.conditional = [f for f in result.conditional if f.code in file.codes]
    return result
