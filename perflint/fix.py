"""Apply the fixes that rules attach to findings, as ruff does: safe ones by default, unsafe ones on request.

A fixed file is re-linted and fixed again until nothing changes (so a fix that exposes another
finding is handled, and a second run changes nothing); a file that does not settle within MAX_PASSES is
left untouched, so every file that is written is at a fixed point. Each pass must still parse (libcst,
and Python's own compiler when the original compiled), or the file keeps the last pass that did. Files
are written atomically (temporary file in the same folder, then rename) with the original mode,
encoding, byte-order mark and newline style; a file with a syntax error is never touched.
"""

from __future__ import annotations

import difflib
import io
import os
import re
import sys
import tempfile
import tokenize
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Callable, TextIO

import libcst as cst

from perflint.engine import Linter
from perflint.rule import Finding, all_rules

MAX_PASSES = 10
# Python's line breaks, as positions.py counts them (str.splitlines also splits on \f, \v, \x1c, \u2028...).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _lines(text: str) -> list[str]:
    return _LINE.findall(text)


def _offsets(text: str) -> list[int]:
    starts, total = [0], 0
    for line in _lines(text):
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


def fix_source(text: str, path: str, linter: Linter, unsafe: bool,
               ignored: frozenset[str] = frozenset()) -> tuple[str, int]:
    """Fixed text and number of fixes applied. A pass whose result would not parse is dropped (with the
    passes after it); a file that does not settle within MAX_PASSES comes back unchanged."""
    total = 0
    current = text
    for _ in range(MAX_PASSES):
        findings = [f for f in linter.lint_source(current, path) if f.code not in ignored]
        if any(f.code == "PFL001" for f in findings):
            return text, 0
        new, count = apply_edits(current, findings, unsafe)
        if count == 0 or new == current:
            return current, total
        if not _parses(new, text, path):
            return current, total
        current, total = new, total + count
    return text, 0  # the fixes keep changing the file (rules undoing each other): touch nothing


def _read(path: Path) -> tuple[str, str, bool]:
    """Text (without BOM), encoding (as the coding cookie or BOM says) and whether it had a BOM."""
    raw = path.read_bytes()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    bom = raw.startswith(b"\xef\xbb\xbf")
    if encoding == "utf-8-sig":  # encoding with it would add the BOM a second time
        encoding = "utf-8"
    return raw.decode(encoding).lstrip("\ufeff"), encoding, bom


def write_atomically(path: Path, data: bytes) -> None:
    """Temporary file in the same folder, then rename: a crash leaves the old or the new file, never half.
    Writes through a symbolic link to its target, as editors do, and keeps the permission bits."""
    path = Path(os.path.realpath(path))
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".perflint-tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def unified_diff(old: str, new: str, path: str) -> str:
    """A unified diff that `git apply` and `patch` accept, including for a missing final newline."""
    out = []
    for line in difflib.unified_diff(_lines(old), _lines(new), f"a/{path}", f"b/{path}"):
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def apply_fixes(findings: list[Finding], codes: list[str], unsafe: bool, write: bool, out: TextIO,
                ignored_for: Callable[[str], set[str]] | None = None) -> tuple[list[Finding], int]:
    """Fix (or, without `write`, print a diff for) every file with a fixable finding.
    `ignored_for(path)` gives the codes that per-file-ignores switch off there: those are neither fixed
    nor reported. Returns the findings that remain and the number of fixes. A file that cannot be read,
    encoded or written is reported on stderr and left as it was."""
    rules = all_rules()
    linter = Linter(rules[c] for c in codes if c in rules)
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_path[f.path].append(f)
    remaining: list[Finding] = []
    fixed = 0
    for path, file_findings in by_path.items():
        if not any(_applicable(f, unsafe) for f in file_findings):
            remaining.extend(file_findings)
            continue
        ignored = frozenset(ignored_for(path)) if ignored_for else frozenset()
        try:
            text, encoding, bom = _read(Path(path))
            new, count = fix_source(text, path, linter, unsafe, ignored)
            data = (("\ufeff" if bom else "") + new).encode(encoding)
            if count and write:
                write_atomically(Path(path), data)
        except (OSError, UnicodeError, SyntaxError, LookupError) as e:
            print(f"perflint: {path}: not fixed: {e}", file=sys.stderr)
            count = 0
        if count == 0:
            remaining.extend(file_findings)
            continue
        fixed += count
        if write:
            remaining.extend(f for f in linter.lint_source(new, path) if f.code not in ignored)
        else:
            out.write(unified_diff(text, new, path))
            remaining.extend(file_findings)
    remaining.sort(key=Finding.sort_key)
    return remaining, fixed
