"""Content-hash cache: a file whose bytes, rules and facts are unchanged is not parsed again.

One JSON file per settings fingerprint (perflint version, the linter's own source files, enabled rules) in
`.perflint_cache/`, mapping
a key (the file's BLAKE2 digest, its rules and its facts) to what linting it gave: its findings (those
that hold only if another file calls it every step among them) and its calls out, so that a cached file
still takes part in the run's cross-file per-step path (model/crossfile.py). Written atomically, so an
interrupted run never leaves a broken cache. A cache that cannot be read, or whose content does not have
the shape written here (another version, a hand edit, a truncated copy), is ignored and rebuilt: each
entry is checked field by field when it is used, and one bad entry is one cache miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from perflint import __version__
from perflint.model.crossfile import SITES, CallOut, FileResult
from perflint.rule import Edit, Finding, Fix


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _encode(f: Finding) -> list:
    return [f.line, f.col, f.end_line, f.end_col, f.code, f.name, f.message, f.severity,
            asdict(f.fix) if f.fix else None, list(f.evidence), list(f.requires), f.cell, f.assumed, f.within]


def _int(value) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(value)
    return value


def _str(value) -> str:
    if type(value) is not str:
        raise ValueError(value)
    return value


def _position(value) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(value)
    return _int(value[0]), _int(value[1])


def _decode(path: str, row) -> Finding:
    """A finding from a cache row; ValueError (or a KeyError/TypeError inside a fix) when it is not one."""
    if not isinstance(row, list) or len(row) != 14:
        raise ValueError(row)
    line, col, end_line, end_col, code, name, message, severity, fix, evidence, requires, cell, assumed, within = row
    if fix is not None:
        fix = Fix(_str(fix["applicability"]), _str(fix["message"]),
                  tuple(Edit(_str(e["content"]), _position(e["start"]), _position(e["end"])) for e in fix["edits"]))
    if not isinstance(evidence, list) or not isinstance(requires, list) or type(assumed) is not bool:
        raise ValueError(row)
    return Finding(path, _int(line), _int(col), _int(end_line), _int(end_col), _str(code), _str(name),
                   _str(message), _str(severity), fix, tuple(map(_str, evidence)), tuple(map(_str, requires)),
                   None if cell is None else _int(cell), assumed, _str(within))


def _encode_call(c: CallOut) -> list:
    return [c.level, c.module, c.name, list(c.member), list(c.requires), list(c.where), c.assumed, c.site]


def _decode_call(row) -> CallOut:
    if not isinstance(row, list) or len(row) != 8:
        raise ValueError(row)
    level, module, name, member, requires, where, assumed, site = row
    if not isinstance(member, list) or not isinstance(requires, list) or not isinstance(where, list) \
            or len(where) != 4 or type(assumed) is not bool or site not in SITES:
        raise ValueError(row)
    return CallOut(_int(level), _str(module), None if name is None else _str(name), tuple(map(_str, member)),
                   tuple(map(_str, requires)), (_str(where[0]), _str(where[1]), _int(where[2]), _int(where[3])),
                   assumed, site)


def _linter_stamp() -> list:
    """Size and mtime of each of the linter's own .py files: a checkout edited in place (an editable install,
    the same version number) must not be answered from findings an older rule made."""
    root = Path(__file__).resolve().parent
    out = []
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                out.append((os.path.relpath(os.path.join(folder, name), root), st.st_size, st.st_mtime_ns))
    return sorted(out)


class Cache:
    def __init__(self, directory: Path, codes: list[str]) -> None:
        self.directory = directory
        self.file = directory / f"findings-{digest(json.dumps([__version__, _linter_stamp(), codes]).encode())}.json"
        self.dirty = False
        try:
            entries = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            entries = {}
        self.entries: dict[str, list] = entries if isinstance(entries, dict) else {}

    @staticmethod
    def key(content: str, codes: tuple[str, ...], facts: str) -> str:
        """The entry key of a file: its content digest, the rules that apply to it and its facts."""
        return digest(f"{content}|{','.join(codes)}|{facts}".encode())

    def get(self, key: str, path: str) -> FileResult | None:
        entry = self.entries.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("findings"), list) \
                or not isinstance(entry.get("calls"), list):
            return None
        try:
            findings = [_decode(path, r) for r in entry["findings"]]
            calls = [_decode_call(r) for r in entry["calls"]]
        except (ValueError, KeyError, TypeError):
            return None
        return FileResult([f for f in findings if not f.requires], [f for f in findings if f.requires], calls)

    def put(self, key: str, result: FileResult) -> None:
        self.entries[key] = {"findings": [_encode(f) for f in (*result.findings, *result.conditional)],
                             "calls": [_encode_call(c) for c in result.calls]}
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
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(self.entries, out, separators=(",", ":"))
                os.replace(tmp, self.file)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # a read-only tree lints fine without a cache
