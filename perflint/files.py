"""Which files to lint: every `.py` below the given paths, minus hidden folders and `exclude` patterns.

A file named explicitly on the command line is always linted, as in ruff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from perflint.config import Config, ConfigError


def _relparts(path: Path, root: Path) -> tuple[str, ...]:
    try:
        return path.resolve().relative_to(root).parts
    except ValueError:
        return path.parts


def discover(paths: list[str], config: Config) -> Iterator[Path]:
    """Yield files in sorted order, each once."""
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ConfigError(f"{raw}: no such file or directory")
        if path.is_file():
            if path.resolve() not in seen:
                seen.add(path.resolve())
                yield path
            continue
        for directory, dirnames, filenames in os.walk(path):
            base = Path(directory)
            keep = []
            for d in sorted(dirnames):
                if d.startswith(".") or (base / d / "pyvenv.cfg").exists() \
                        or config.excluded(_relparts(base / d, config.root)):
                    continue
                keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                file = base / name
                if config.excluded(_relparts(file, config.root)) or file.resolve() in seen:
                    continue
                seen.add(file.resolve())
                yield file
