"""Settings: `[tool.perflint]` in the nearest pyproject.toml (or `--config FILE`), then the command line.

Selection works as in ruff: `select` (default: every rule that is on by default) plus `extend-select`,
minus `ignore`; entries are codes, prefixes such as `PFL1`, rule names such as `item-in-loop`, or `ALL`.
Selecting a code or prefix explicitly also turns on rules that are off by default.

The project root is the folder of the settings file, else the nearest folder above the linted paths that
holds `.git`, else the working directory: patterns are relative to it and the cache lives in it.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from perflint import toml
from perflint.rule import TOOL_RULES, all_rules
from perflint.usage import UsageError


class ConfigError(UsageError):
    """A configuration mistake: reported in one line, exit code 2."""


# Tool folders, build outputs, and the output folders of training runs (log, logs, runs, outputs,
# lightning_logs, mlruns), where a run may save a snapshot of the code it ran (PointNet++ copies its model files
# into log/): no program imports those copies.
DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
                   "node_modules", "site-packages", ".eggs", "*.egg-info", ".perflint_cache", ".mypy_cache",
                   ".pytest_cache", ".ruff_cache", "__pypackages__", ".ipynb_checkpoints",
                   "log", "logs", "runs", "outputs", "lightning_logs", "mlruns")
_KEYS = {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude", "max-file-size",
         "file-timeout", "lint-tests", "assume-forward-per-step"}
# Files bigger than this are skipped with a notice: libcst needs about 4.5 s and 400 MiB per MiB of
# hand-written code and up to 11 s and 1.4 GiB per MiB of generated tables (README, "Limits").
DEFAULT_MAX_FILE_SIZE = 1024 * 1024
# Seconds one file may take before its worker is stopped: 10x what 1 MiB of real code takes on a loaded
# 2-core machine, so only a pathological file (super-linear analysis) reaches it (README, "Limits").
DEFAULT_FILE_TIMEOUT = 60.0
_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 1000 ** 2, "mib": 1024 ** 2, "gb": 1000 ** 3,
          "gib": 1024 ** 3}


@dataclass
class Config:
    root: Path = field(default_factory=Path.cwd)  # paths in patterns are relative to this
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes of code; 0: no limit
    file_timeout: float = DEFAULT_FILE_TIMEOUT  # seconds per file; 0: no limit
    lint_tests: bool = False  # judge test files (tests/, test_*.py, ...) like training code (Rule.in_tests)
    # Count every module's `forward` as run every step, also where no loop the linter sees runs it (a library
    # of modules whose training loops live elsewhere): the findings marked `Finding.assumed`.
    assume_forward_per_step: bool = False
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


def code_of(entry: str) -> str:
    """A rule name (`item-in-loop`) as its code; anything else upper-cased, as codes are written."""
    entry = entry.strip()
    for rule in (*TOOL_RULES, *all_rules().values()):
        if rule.name == entry.lower():
            return rule.code
    return entry.upper()


def _expand(entries: list[str], codes: list[str], key: str) -> set[str]:
    out: set[str] = set()
    for entry in entries:
        entry = code_of(entry)
        if entry == "ALL":
            out |= set(codes)
            continue
        hits = {c for c in codes if c.startswith(entry)}
        if not hits:
            raise ConfigError(f"{key}: unknown rule code or prefix {entry!r} (codes, prefixes and rule names: see `perflint --list-rules`)")
        out |= hits
    return out


def _size(value) -> int:
    """Bytes from an integer or a string such as "2MB" or "512 KiB"."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", value.lower()) if isinstance(value, str) else None
    if type(value) is int and value >= 0:
        return value
    if m is None or m.group(2) not in _UNITS:
        raise ConfigError(f"max-file-size must be a number of bytes or a size such as \"2MB\", not {value!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def _strings(value, key: str) -> list[str]:
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key} must be a list of strings")
    return value


def _nearest(start: Path, name: str, exists=os.path.exists) -> Path | None:
    for directory in (start, *start.parents):
        if exists(directory / name):
            return directory / name
    return None


def start_folder(paths: list[str]) -> Path:
    """Where settings are looked for: the folder that holds every linted path (or the working directory)."""
    try:
        common = Path(os.path.commonpath([os.path.abspath(p) for p in paths])) if paths else Path.cwd()
    except ValueError:  # different drives
        return Path.cwd()
    return common if common.is_dir() else common.parent


def load(path: Path | None = None, start: Path | None = None) -> Config:
    """Settings from an explicit file, or from the nearest pyproject.toml above `start` that exists."""
    start = (start or Path.cwd()).resolve()
    if path is None:
        path = _nearest(start, "pyproject.toml", os.path.isfile)
        if path is None:
            git = _nearest(start, ".git")
            return Config(root=git.parent if git else Path.cwd().resolve())
    from perflint.files import read  # never blocks on a FIFO; files.py needs this module first

    try:
        data = toml.loads(read(path).decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except (OSError, UnicodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror if isinstance(e, OSError) and e.strerror else e}") \
            from None
    except toml.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    if path.name == "pyproject.toml" or "tool" in data:
        tool = data.get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(f"{path}: [tool] must be a table")
        table = tool.get("perflint", {})
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
    if "max-file-size" in table:
        config.max_file_size = _size(table["max-file-size"])
    if "file-timeout" in table:
        value = table["file-timeout"]
        if type(value) not in (int, float) or value < 0:
            raise ConfigError(f"file-timeout must be a number of seconds (0: no limit), not {value!r}")
        config.file_timeout = float(value)
    for key in ("lint-tests", "assume-forward-per-step"):
        if key in table:
            if type(table[key]) is not bool:
                raise ConfigError(f"{key} must be true or false, not {table[key]!r}")
            setattr(config, key.replace("-", "_"), table[key])
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: per-file-ignores must be a table of glob = [codes]")
    config.per_file_ignores = {k: _strings(v, f"per-file-ignores.{k}") for k, v in pfi.items()}
    config.enabled_codes()  # validate every code now, so a typo is a configuration error
    config.ignored_for("")
    return config
