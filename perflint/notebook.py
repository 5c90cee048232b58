"""Jupyter notebooks: their code cells as one Python source, and the way back (as ruff does).

The code cells are joined into one source, a marker line between cells, so the linter reads a notebook
like a module (a name defined in one cell is known in the next). Findings come back as (cell, line):
cells are numbered from 1 among all cells, markdown included, as Jupyter and ruff count them. A cell
run by a cell magic (`%%bash`, `%%writefile`) is not Python and is skipped; `%%time` and its kin run
the Python below them. Line magics and shell escapes (`%timeit f()`, `!pip install x`, `x = !ls`,
`obj?`) become `pass` while linting, but only in a cell that does not compile as it is. A cell that does
not compile either way is PFL001 at its line, and the other cells are still linted. Fixes are applied to
the joined source and split back at the markers: outputs, metadata and every other cell stay as they
were. Only the standard library's json is used.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import json
import re
import warnings
from dataclasses import replace

from perflint.rule import SYNTAX_ERROR, Edit, Finding

_MAGIC = re.compile(r"[ \t]*(?:[%!?]|[\w.,\[\] \t]+=[ \t]*[%!])|[^#\n]*\?\??[ \t]*$")
_PYTHON_CELL_MAGICS = {"capture", "debug", "prun", "python", "python3", "pypy", "time", "timeit", "ipytest"}
_EVIDENCE_LINE = re.compile(r"\(line (\d+)\)$")
_JSON_LINE = re.compile(r"[^\n]*\n|[^\n]+$")  # how Jupyter splits a source into a list of lines


class NotebookError(ValueError):
    """Not a notebook perflint can read."""


def _text(source) -> str:
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return source if isinstance(source, str) else ""


def _compiles(code: str) -> tuple[int, str] | None:
    """None when the cell compiles, else the line and message of Python's complaint."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as e:
        return e.lineno or 1, e.msg
    except (ValueError, RecursionError, MemoryError) as e:
        return 1, str(e) or type(e).__name__
    return None


class Notebook:
    """One notebook's code, linted as one source with a marker line between cells."""

    def __init__(self, data: bytes) -> None:
        try:
            raw = json.loads(data)
        except (ValueError, UnicodeError, RecursionError) as e:
            raise NotebookError(f"not a notebook: {e}") from None
        cells = raw.get("cells") if isinstance(raw, dict) else None
        if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
            raise NotebookError("not a notebook: no list of cells")
        self.raw, self.data = raw, data
        self.marker = f"# perflint: cell {hashlib.blake2b(data, digest_size=4).hexdigest()}"
        self.cells: list[int] = []  # the notebook index of each linted cell, in order
        self.starts: list[int] = []  # the row of the joined source where each linted cell begins
        self.errors: list[tuple[int, int, str]] = []  # (cell index, line, message) of cells that do not compile
        self.masked: dict[str, str] = {}  # stand-in line -> the magic it stands for
        parts: list[str] = []
        row = 1
        if self._python(raw.get("metadata")):
            for index, cell in enumerate(cells):
                code = self._code(index, cell)
                if code is None:
                    continue
                parts.append(self.marker + "\n")
                self.cells.append(index)
                self.starts.append(row + 1)
                parts.append(code)
                row += 1 + code.count("\n")
        self.source = "".join(parts)

    @staticmethod
    def _python(metadata) -> bool:
        if not isinstance(metadata, dict):
            return True
        for key, field in (("language_info", "name"), ("kernelspec", "language")):
            info = metadata.get(key)
            if isinstance(info, dict) and isinstance(info.get(field), str):
                return info[field].lower() == "python"
        return True

    def _code(self, index: int, cell: dict) -> str | None:
        """The cell's code as linted (ending in a newline), or None when it is not Python."""
        if cell.get("cell_type") != "code":
            return None
        vscode = cell.get("metadata", {}).get("vscode") if isinstance(cell.get("metadata"), dict) else None
        if isinstance(vscode, dict) and vscode.get("languageId", "python") != "python":
            return None
        code = _text(cell.get("source"))
        lines = code.split("\n")
        first = lines[0].split()
        if first and first[0].startswith("%%"):
            if first[0][2:] not in _PYTHON_CELL_MAGICS:
                return None
            lines[0] = self._mask(lines[0], index, 0)
        code = "\n".join(lines)
        error = _compiles(code)
        if error is not None:
            masked = "\n".join(self._mask(line, index, i) if _MAGIC.match(line) else line
                               for i, line in enumerate(lines))
            if _compiles(masked) is None:
                code = masked
            else:
                self.errors.append((index, *error))
                return None
        return code if code.endswith("\n") else code + "\n"

    def _mask(self, line: str, index: int, row: int) -> str:
        indent = line[:len(line) - len(line.lstrip())]
        stand_in = f"{indent}pass  # perflint: magic {index}.{row}"
        self.masked[stand_in] = line
        return stand_in

    # ---- findings: joined rows -> (cell, row) ----------------------------------------------------------
    def locate(self, row: int) -> tuple[int, int]:
        """(cell number from 1, row in the cell from 1) of a row of the joined source."""
        k = max(0, bisect.bisect_right(self.starts, row) - 1)
        if not self.starts:
            return 1, row
        return self.cells[k] + 1, max(1, row - self.starts[k] + 1)

    def place(self, finding: Finding) -> Finding:
        cell, line = self.locate(finding.line)
        _, end_line = self.locate(finding.end_line)
        fix = finding.fix
        if fix is not None:
            fix = replace(fix, edits=tuple(Edit(e.content, (self.locate(e.start[0])[1], e.start[1]),
                                                (self.locate(e.end[0])[1], e.end[1])) for e in fix.edits))
        evidence = tuple(_EVIDENCE_LINE.sub(lambda m: "(cell {}, line {})".format(*self.locate(int(m[1]))), e)
                         for e in getattr(finding, "evidence", ()))
        return replace(finding, line=line, end_line=end_line, fix=fix, cell=cell,
                       **({"evidence": evidence} if evidence else {}))

    def findings(self, findings: list[Finding], path: str) -> list[Finding]:
        """Findings of the joined source placed in their cells, plus one PFL001 per cell that does not compile."""
        return [self.place(f) for f in findings] + [
            SYNTAX_ERROR.finding(path, line, f"cannot parse: {message}", cell=index + 1)
            for index, line, message in self.errors]

    # ---- fixes: joined source -> notebook ----------------------------------------------------------------
    def cell_sources(self, source: str) -> dict[int, str]:
        """Each linted cell's text as it reads in `source` (a fixed version of self.source)."""
        chunks = source.split(self.marker + "\n")[1:]
        if len(chunks) != len(self.cells):
            raise NotebookError("a fix moved a cell boundary")
        out = {}
        for index, chunk in zip(self.cells, chunks):
            lines = [self.masked.get(line, line) for line in chunk.split("\n")]
            out[index] = "\n".join(lines)
        return out

    def changed(self, source: str) -> dict[int, tuple[str, str]]:
        """(old text, new text) of every cell that `source` changes."""
        out = {}
        for index, text in self.cell_sources(source).items():
            old = _text(self.raw["cells"][index].get("source"))
            new = text if old.endswith("\n") else text[:-1] if text.endswith("\n") else text
            if new != old:
                out[index] = (old, new)
        return out

    def dumps(self, source: str) -> bytes:
        """The notebook with `source`'s cells, written as it was: same indent, key order, escaping and
        final newline, so only the changed cells' lines differ in a notebook written by Jupyter."""
        raw = json.loads(self.data)
        for index, (_, new) in self.changed(source).items():
            cell = raw["cells"][index]
            cell["source"] = _JSON_LINE.findall(new) if isinstance(cell.get("source"), list) else new
        text = self.data.decode("utf-8-sig", "replace")
        indent = re.search(r"\n([ \t]+)\S", text)
        out = json.dumps(raw, indent=indent.group(1) if indent else 1,
                         ensure_ascii=text.isascii() and "\\u" in text)
        return (out + ("\n" if text.endswith("\n") else "")).encode("utf-8")
