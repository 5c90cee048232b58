"""Apply the fixes that rules attach to findings, as ruff does: safe ones by default, unsafe ones on request.

A fixed file is re-linted and fixed again until nothing changes (so a fix that exposes another
finding is handled, and a second run changes nothing); a file that does not settle within MAX_PASSES is
left untouched, so every file that is written is at a fixed point. Each pass must still parse (libcst,
and Python's own compiler when the original compiled), or the file keeps the last pass that did. Files
are written atomically (temporary file in the same folder, then rename) with the original mode, owner
and group (where the OS lets us), encoding, byte-order mark and newline style; a file with a syntax
error is never touched. Not written, with a notice: a file that changed since it was linted, a
read-only file, and a file with several hard links (a rename would split them). A temporary file that
a killed run left behind is removed by the next `--fix` that writes in its folder.
"""

from __future__ import annotations

import difflib
import io
import os
import tempfile
import time
import tokenize
import warnings
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO

import libcst as cst

from perflint.cache import digest
from perflint.engine import Linter
from perflint.files import read
from perflint.model.crossfile import FileResult
from perflint.model.project import FileFacts
from perflint.notebook import Notebook
from perflint.positions import physical_lines
from perflint.rule import Finding
from perflint.source import lint, linter_for

if TYPE_CHECKING:
    from perflint.runner import Run

MAX_PASSES = 10
_TMP_SUFFIX = ".perflint-tmp"


def _offsets(text: str) -> list[int]:
    starts, total = [0], 0
    for line in physical_lines(text):
        total += len(line)
        starts.append(total)
    return starts


def _applicable(f: Finding, unsafe: bool) -> bool:
    return f.fix is not None and (f.fix.applicability == "safe" or unsafe)


def apply_edits(text: str, findings: list[Finding], unsafe: bool) -> tuple[str, int]:
    """Apply the non-overlapping applicable edits (earliest wins); return new text and fix count."""
    starts = _offsets(text)
    spans = []
    for f in findings:
        if _applicable(f, unsafe):
            for e in f.fix.edits:
                spans.append((starts[e.start[0] - 1] + e.start[1] - 1, starts[e.end[0] - 1] + e.end[1] - 1,
                              e.content))
    spans.sort()
    chosen, last_end = [], -1
    for start, end, content in spans:
        if start >= last_end:
            chosen.append((start, end, content))
            last_end = end
    for start, end, content in reversed(chosen):
        text = text[:start] + content + text[end:]
    return text, len(chosen)


def _compiles(text: str, path: str) -> bool:
    """Python's compiler catches what a fix can break and libcst accepts (`f(a=1, a=2)`)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def _parses(new: str, original: str, path: str) -> bool:
    try:
        cst.parse_module(new)
    except Exception:
        return False
    return _compiles(new, path) or not _compiles(original, path)


def fix_source(text: str, path: str, linter: Linter, unsafe: bool, facts: FileFacts | None = None,
               judged: Callable[[FileResult], list[Finding]] | None = None) -> tuple[str, int]:
    """Fixed text and number of fixes applied. A pass whose result would not parse is dropped (with the
    passes after it); a file that does not settle within MAX_PASSES comes back unchanged. `judged` keeps
    the findings of a run (those that hold because another file calls this one every step included)."""
    total = 0
    current = text
    for _ in range(MAX_PASSES):
        findings = judged(linter.lint_file(current, path, facts)) if judged is not None \
            else linter.lint_source(current, path, facts)
        if any(f.code == "PFL001" for f in findings):
            return text, 0
        new, count = apply_edits(current, findings, unsafe)
        if count == 0 or new == current:
            return current, total
        if not _parses(new, text, path):
            return current, total
        current, total = new, total + count
    return text, 0  # the fixes keep changing the file (rules undoing each other): touch nothing


def _decode(raw: bytes) -> tuple[str, str, bool]:
    """Text (without BOM), encoding (as the coding cookie or BOM says) and whether it had a BOM."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    bom = raw.startswith(b"\xef\xbb\xbf")
    if encoding == "utf-8-sig":  # encoding with it would add the BOM a second time
        encoding = "utf-8"
    return raw.decode(encoding).lstrip("\ufeff"), encoding, bom


class NotWritten(Exception):
    """Why a fixed file was left as it was."""


def write_atomically(path: Path, data: bytes, original: bytes | None = None) -> None:
    """Temporary file in the same folder, then rename: a crash leaves the old or the new file, never half.
    Writes through a symbolic link to its target, as editors do, and keeps the permission bits, owner and
    group. Refuses a read-only file, a file with several hard links, and (given `original`) a file whose
    content is no longer `original`."""
    path = Path(os.path.realpath(path))
    st = path.stat()
    if st.st_nlink > 1:
        raise NotWritten(f"it has {st.st_nlink} hard links, which a rewrite would split; fix it by hand")
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise NotWritten("it is read-only")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=_TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if hasattr(os, "chown") and (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except PermissionError:
                pass  # only root may give a file away; the group too where we are a member
        os.chmod(tmp, st.st_mode & 0o7777)
        if original is not None and read(path) != original:
            raise NotWritten("it changed while it was being fixed; run again")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_leftovers(folder: Path) -> None:
    """Delete temporary files that a killed `--fix` left in `folder`: those whose process is gone."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(_TMP_SUFFIX)]
    except OSError:
        return
    for name in names:
        path = folder / name
        pid = name[:-len(_TMP_SUFFIX)].rsplit(".", 2)[-2]
        try:
            if pid.isdigit():
                if int(pid) == os.getpid() or _alive(int(pid)):
                    continue
            elif time.time() - path.stat().st_mtime < 3600:
                continue
            path.unlink()
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        return True
    return True


def unified_diff(old: str, new: str, path: str) -> str:
    """A unified diff that `git apply` and `patch` accept, including for a missing final newline."""
    out = []
    for line in difflib.unified_diff(physical_lines(old), physical_lines(new), f"a/{path}", f"b/{path}"):
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def apply_fixes(run: "Run", unsafe: bool, write: bool, out: TextIO | None,
                notice: Callable[[str], None]) -> tuple[list[Finding], int]:
    """Fix (or, without `write`, print a diff for) every file of the run with a fixable finding, with the
    rules and facts it was linted with. Returns the findings that remain and the number of fixes. A file
    that cannot be read, encoded or written is a notice and is left as it was."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for f in run.findings:
        by_path[f.path].append(f)
    remaining: list[Finding] = []
    fixed = 0
    cleaned: set[Path] = set()
    for path, file_findings in by_path.items():
        file = run.files.get(path)
        if file is None or not any(_applicable(f, unsafe) for f in file_findings):
            remaining.extend(file_findings)
            continue
        facts = run.facts.get(path)
        try:
            data = read(file.path)
            if digest(data) != run.digests.get(path):
                raise NotWritten("it changed since it was linted; run again")
            if file.notebook:
                notebook = Notebook(data)
                text = notebook.source
                new, count = fix_source(text, path, linter_for(file.codes), unsafe, facts)
                new_data = notebook.dumps(new) if count else data
            else:
                text, encoding, bom = _decode(data)
                new, count = fix_source(text, path, linter_for(file.codes), unsafe, facts,
                                        lambda result: run.judged(file, result))
                new_data = (("\ufeff" if bom else "") + new).encode(encoding)
            if count and write:
                folder = Path(os.path.realpath(file.path)).parent
                if folder not in cleaned:
                    remove_leftovers(folder)
                    cleaned.add(folder)
                write_atomically(file.path, new_data, data)
        except (OSError, UnicodeError, SyntaxError, LookupError, ValueError, NotWritten) as e:
            notice(f"{path}: not fixed: {e.strerror if isinstance(e, OSError) and e.strerror else e}")
            count = 0
        if count == 0:
            remaining.extend(file_findings)
            continue
        fixed += count
        if write:
            remaining.extend(run.judged(file, lint(file, new_data, facts)))
        else:
            out.write(_diff(file, notebook if file.notebook else None, text, new, path))
            remaining.extend(file_findings)
    remaining.sort(key=Finding.sort_key)
    return remaining, fixed


def _diff(file, notebook: Notebook | None, text: str, new: str, path: str) -> str:
    """The patch of one file; for a notebook one per changed cell, named `path:cell N` (for reading: a
    patch of the JSON would be all escapes)."""
    if notebook is None:
        return unified_diff(text, new, path)
    return "".join(unified_diff(old, changed, f"{path}:cell {index + 1}")
                   for index, (old, changed) in notebook.changed(new).items())
