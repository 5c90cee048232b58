"""Apply the fixes that rules attach to findings, as ruff does: safe ones by default, unsafe ones on request.

A fixed file is re-linted and fixed again until nothing changes (so a fix that exposes another
finding is handled, and a second run changes nothing). The result must parse, or the file is left
untouched. Files are written atomically (temporary file in the same folder, then rename) with the
original mode, encoding, byte-order mark and newline style; a file with a syntax error is never touched.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import TextIO

import libcst as cst

from perflint.engine import Linter
from perflint.rule import Finding, all_rules

MAX_PASSES = 10


def _offsets(text: str) -> list[int]:
    starts, total = [0], 0
    for line in text.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def apply_edits(text: str, findings: list[Finding], unsafe: bool) -> tuple[str, int]:
    """Apply the non-overlapping applicable edits (earliest wins); return new text and fix count."""
    starts = _offsets(text)
    spans = []
    for f in findings:
        if f.fix is None or (f.fix.applicability != "safe" and not unsafe):
            continue
        for e in f.fix.edits:
            spans.append((starts[e.start[0] - 1] + e.start[1] - 1, starts[e.end[0] - 1] + e.end[1] - 1, e.content))
    spans.sort()
    chosen, last_end = [], -1
    for start, end, content in spans:
        if start >= last_end:
            chosen.append((start, end, content))
            last_end = end
    for start, end, content in reversed(chosen):
        text = text[:start] + content + text[end:]
    return text, len(chosen)


def fix_source(text: str, path: str, linter: Linter, unsafe: bool) -> tuple[str, int]:
    """Fixed text and number of fixes applied; the input unchanged if a result would not parse."""
    total = 0
    current = text
    for _ in range(MAX_PASSES):
        findings = linter.lint_source(current, path)
        if any(f.code == "PFL001" for f in findings):
            return text, 0
        new, count = apply_edits(current, findings, unsafe)
        if count == 0 or new == current:
            break
        try:
            cst.parse_module(new)
        except Exception:
            return text, 0
        current, total = new, total + count
    return current, total


def _read(path: Path) -> tuple[str, str, bool, bytes]:
    raw = path.read_bytes()
    encoding = cst.parse_module(raw).encoding
    bom = raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode(encoding)
    return text.lstrip("\ufeff"), encoding, bom, raw


def write_atomically(path: Path, data: bytes) -> None:
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".perflint-tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def apply_fixes(findings: list[Finding], codes: list[str], unsafe: bool, write: bool,
                out: TextIO) -> tuple[list[Finding], int]:
    """Fix (or, without `write`, print a diff for) every file with a fixable finding.
    Returns the findings that remain and the number of fixes."""
    rules = all_rules()
    linter = Linter(rules[c] for c in codes if c in rules)
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_path[f.path].append(f)
    remaining: list[Finding] = []
    fixed = 0
    for path, file_findings in by_path.items():
        fixable = any(f.fix and (f.fix.applicability == "safe" or unsafe) for f in file_findings)
        if not fixable:
            remaining.extend(file_findings)
            continue
        text, encoding, bom, _ = _read(Path(path))
        new, count = fix_source(text, path, linter, unsafe)
        if count == 0:
            remaining.extend(file_findings)
            continue
        fixed += count
        if write:
            write_atomically(Path(path), (("\ufeff" if bom else "") + new).encode(encoding))
            remaining.extend(linter.lint_source(new, path))
        else:
            out.writelines(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                                f"a/{path}", f"b/{path}"))
            remaining.extend(file_findings)
    remaining.sort(key=Finding.sort_key)
    return remaining, fixed
