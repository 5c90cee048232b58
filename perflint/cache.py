"""Content-hash cache: a file whose bytes and settings are unchanged is not parsed again.

One JSON file per settings fingerprint (perflint version + enabled rules) in `.perflint_cache/`, mapping a
file's BLAKE2 digest to its findings. Written atomically, so an interrupted run never leaves a broken
cache; a cache that cannot be read is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from perflint import __version__
from perflint.rule import Edit, Finding, Fix


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _encode(f: Finding) -> list:
    return [f.line, f.col, f.end_line, f.end_col, f.code, f.name, f.message, f.severity,
            asdict(f.fix) if f.fix else None]


def _decode(path: str, row: list) -> Finding:
    fix = row[8]
    if fix is not None:
        fix = Fix(fix["applicability"], fix["message"],
                  tuple(Edit(e["content"], tuple(e["start"]), tuple(e["end"])) for e in fix["edits"]))
    return Finding(path, *row[:8], fix)


class Cache:
    def __init__(self, directory: Path, codes: list[str]) -> None:
        self.directory = directory
        key = digest(json.dumps([__version__, codes]).encode())
        self.file = directory / f"findings-{key}.json"
        self.entries: dict[str, list] = {}
        self.dirty = False
        try:
            self.entries = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.entries = {}

    def get(self, key: str, path: str) -> list[Finding] | None:
        rows = self.entries.get(key)
        return None if rows is None else [_decode(path, r) for r in rows]

    def put(self, key: str, findings: list[Finding]) -> None:
        self.entries[key] = [_encode(f) for f in findings]
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.directory.mkdir(exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by perflint\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self.entries, out, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            pass  # a read-only tree lints fine without a cache
