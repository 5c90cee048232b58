"""Which files to lint: every `.py` and `.ipynb` below the given paths, minus hidden folders, virtual
environments and `exclude` patterns. A file named explicitly is always linted, as in ruff.

Each file found becomes one `SourceFile` that travels unchanged to the report: its path, its name relative
to the project root (what patterns and per-file-ignores match), its name as shown (relative to the working
directory) and the rules that apply to it. Only regular files are read (a FIFO would block forever); a
folder that cannot be listed is skipped with a notice, and the walk goes on.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from perflint.config import Config, ConfigError

SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class SourceFile:
    path: Path  # as found: what is read and written
    name: str  # relative to the project root, forward slashes: what exclude and per-file-ignores match
    shown: str  # relative to the working directory when below it: what reports print
    codes: tuple[str, ...]  # the rules that apply here: the selection minus per-file-ignores

    @property
    def notebook(self) -> bool:
        return self.path.suffix == ".ipynb"


def read(path: Path) -> bytes:
    """A regular file's bytes. Opened without blocking, so a FIFO or device that took the place of a file
    since it was listed is refused rather than waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return f.read()


class _Namer:
    """Names paths relative to the project root and to the working directory, and gives each file its rules."""

    def __init__(self, config: Config) -> None:
        self.root = str(config.root)
        self.cwd = os.getcwd()
        self.enabled = tuple(config.enabled_codes())
        self.config = config
        self._codes: dict[frozenset, tuple[str, ...]] = {}

    def name(self, path: Path) -> str:
        """Relative to the root, symbolic links resolved (os.path.realpath never raises on a loop)."""
        return _below(os.path.realpath(path), self.root) or path.as_posix()

    def shown(self, path: Path) -> str:
        return _below(os.path.abspath(path), self.cwd) or path.as_posix()

    def excluded(self, name: str) -> bool:
        return self.config.excluded(tuple(name.split("/")))

    def source(self, path: Path, name: str) -> SourceFile:
        ignored = frozenset(self.config.ignored_for(name))
        codes = self._codes.get(ignored)
        if codes is None:
            codes = self._codes[ignored] = tuple(c for c in self.enabled if c not in ignored)
        return SourceFile(path, name, self.shown(path), codes)


def _below(path: str, folder: str) -> str | None:
    """`path` relative to `folder` with forward slashes, or None when it is not below it."""
    if path.startswith(folder.rstrip(os.sep) + os.sep):
        return Path(os.path.relpath(path, folder)).as_posix()
    return None


def discover(paths: list[str], config: Config, notice: Callable[[str], None]) -> Iterator[SourceFile]:
    """Files in sorted order, each once. A path named on the command line that is missing or is neither a
    folder nor a regular file is a usage error; trouble below a folder is a notice."""
    namer = _Namer(config)
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw)
        try:
            mode = path.stat().st_mode
        except OSError as e:
            reason = "no such file or directory" if e.errno == errno.ENOENT else (e.strerror or str(e)).lower()
            raise ConfigError(f"{raw}: {reason}") from None
        if stat.S_ISDIR(mode):
            yield from _walk(path, namer, seen, notice)
        elif not stat.S_ISREG(mode):
            raise ConfigError(f"{raw}: not a regular file or folder")
        elif _first(path, seen):
            yield namer.source(path, namer.name(path))


def _first(path: Path, seen: set[str]) -> bool:
    real = os.path.realpath(path)
    if real in seen:
        return False
    seen.add(real)
    return True


def _walk(directory: Path, namer: _Namer, seen: set[str], notice: Callable[[str], None]) -> Iterator[SourceFile]:
    """Depth first, a folder's files before its subfolders, both sorted. Symbolic links to folders are not
    followed; those to files are. A Python-named entry whose target cannot be reached (a dangling link, a
    link loop) is still yielded: reading it fails, and that becomes a PFL001 finding with the reason."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as e:
        notice(f"{namer.shown(directory)}: skipped: {e.strerror or e}")
        return
    folders = []
    for entry in entries:
        path = directory / entry.name
        if entry.is_dir(follow_symlinks=False):
            if not (entry.name.startswith(".") or os.path.exists(path / "pyvenv.cfg")
                    or namer.excluded(namer.name(path))):
                folders.append(path)
            continue
        if not entry.name.endswith(SUFFIXES):
            continue
        name = namer.name(path)
        if namer.excluded(name) or not _first(path, seen):
            continue
        if not _regular_or_unreachable(path):
            if not os.path.isdir(path):  # a link to a folder is not followed, as always
                notice(f"{namer.shown(path)}: skipped: not a regular file")
            continue
        yield namer.source(path, name)
    for folder in folders:
        yield from _walk(folder, namer, seen, notice)


def _regular_or_unreachable(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True
