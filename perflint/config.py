"""Settings: `[tool.perflint]` in the nearest pyproject.toml (or `--config FILE`), then the command line.

Selection works as in ruff: `select` (default: every rule that is on by default) plus `extend-select`,
minus `ignore`; entries are codes or prefixes such as `PFL1`, or `ALL`. Selecting a code or prefix
explicitly also turns on rules that are off by default.
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from perflint.rule import TOOL_RULES, all_rules


class ConfigError(Exception):
    """A configuration or usage mistake: reported in one line, exit code 2."""


DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
                   "node_modules", "site-packages", ".eggs", "*.egg-info", ".perflint_cache", ".mypy_cache",
                   ".pytest_cache", ".ruff_cache", "__pypackages__", ".ipynb_checkpoints")
_KEYS = {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude"}


@dataclass
class Config:
    root: Path = field(default_factory=Path.cwd)  # paths in patterns are relative to this
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    source: Path | None = None  # the file the settings came from

    def enabled_codes(self) -> list[str]:
        rules = all_rules()
        codes = [*(t.code for t in TOOL_RULES), *rules]
        chosen = set(t.code for t in TOOL_RULES)
        if self.select is None:
            chosen |= {c for c, r in rules.items() if r.default}
        else:
            chosen |= _expand(self.select, codes, "select")
        chosen |= _expand(self.extend_select, codes, "extend-select")
        chosen -= _expand(self.ignore, codes, "ignore")
        return sorted(chosen)

    def ignored_for(self, relpath: str) -> set[str]:
        """Codes switched off for one file by `per-file-ignores`."""
        out: set[str] = set()
        name = relpath.rsplit("/", 1)[-1]
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatch(relpath, pattern) or fnmatch.fnmatch(name, pattern):
                out |= _expand(codes, [*(t.code for t in TOOL_RULES), *all_rules()], "per-file-ignores")
        return out

    def excluded(self, relparts: tuple[str, ...]) -> bool:
        relpath = "/".join(relparts)
        for pattern in (*self.exclude, *self.extend_exclude):
            pattern = pattern.rstrip("/")
            if fnmatch.fnmatch(relpath, pattern) or any(fnmatch.fnmatch(p, pattern) for p in relparts):
                return True
        return False


def _expand(entries: list[str], codes: list[str], key: str) -> set[str]:
    out: set[str] = set()
    for entry in entries:
        entry = entry.strip().upper()
        if entry == "ALL":
            out |= set(codes)
            continue
        hits = {c for c in codes if c.startswith(entry)}
        if not hits:
            raise ConfigError(f"{key}: unknown rule code or prefix {entry!r} (see `perflint --list-rules`)")
        out |= hits
    return out


def _strings(value, key: str) -> list[str]:
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} must be a list of strings")
    return value


def find_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(path: Path | None = None, start: Path | None = None) -> Config:
    """Settings from an explicit file, or from the nearest pyproject.toml above `start` that exists."""
    if path is None:
        path = find_pyproject((start or Path.cwd()).resolve())
        if path is None:
            return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    if path.name == "pyproject.toml" or "tool" in data:
        table = data.get("tool", {}).get("perflint", {})
    else:
        table = data  # a standalone perflint.toml
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.perflint] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r} in [tool.perflint] (valid: {', '.join(sorted(_KEYS))})")
    config = Config(root=path.parent.resolve(), source=path)
    if "select" in table:
        config.select = _strings(table["select"], "select")
    config.ignore = _strings(table.get("ignore", []), "ignore")
    config.extend_select = _strings(table.get("extend-select", []), "extend-select")
    if "exclude" in table:
        config.exclude = _strings(table["exclude"], "exclude")
    config.extend_exclude = _strings(table.get("extend-exclude", []), "extend-exclude")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: per-file-ignores must be a table of glob = [codes]")
    config.per_file_ignores = {k: _strings(v, f"per-file-ignores.{k}") for k, v in pfi.items()}
    config.enabled_codes()  # validate every code now, so a typo is a configuration error
    config.ignored_for("")
    return config
