"""Lint many files: discovery, cache, worker processes, per-file ignores, sorted output."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from perflint.cache import Cache, digest
from perflint.config import Config
from perflint.engine import Linter
from perflint.files import discover
from perflint.model.project import FileFacts, Project, Scan
from perflint.rule import SYNTAX_ERROR, Finding, all_rules

_linter: Linter | None = None


def _init_worker(codes: list[str]) -> None:
    global _linter
    rules = all_rules()
    _linter = Linter(rules[c] for c in codes if c in rules)


def _lint_one(item: tuple[str, bytes, FileFacts]) -> list[Finding]:
    path, data, facts = item
    return _linter.lint_source(data, path, facts)


def display_path(path: Path) -> str:
    """Relative to the working directory when below it, with forward slashes."""
    try:
        return path.absolute().relative_to(Path.cwd().absolute()).as_posix()
    except ValueError:
        return path.as_posix()


def lint_paths(paths: list[str], config: Config, jobs: int = 0, use_cache: bool = True) -> tuple[list[Finding], int]:
    """All findings for the files below `paths`, sorted by file, line and column, and the file count."""
    codes = config.enabled_codes()
    cache = Cache(config.root / ".perflint_cache", codes) if use_cache else None
    findings: list[Finding] = []
    read: list[tuple[str, bytes, str]] = []  # shown path, content, root-relative path
    files = 0
    for file in discover(paths, config):
        files += 1
        shown = display_path(file)
        try:
            data = file.read_bytes()
        except OSError as e:
            findings.append(Finding(shown, 1, 1, 1, 1, SYNTAX_ERROR.code, SYNTAX_ERROR.name,
                                    f"cannot read: {e.strerror or e}", SYNTAX_ERROR.severity))
            continue
        read.append((shown, data, _relative_to_root(shown, config.root)))
    # Facts from the whole run (is it PyTorch code, does the project use a device): a cheap text scan.
    project = Project({rel: Scan(rel, data.decode("utf-8", "replace")) for _, data, rel in read})
    todo: list[tuple[str, bytes, str, FileFacts]] = []
    for shown, data, rel in read:
        facts = project.facts(rel)
        key = digest(data) + facts.key()
        cached = cache.get(key, shown) if cache else None
        if cached is not None:
            findings.extend(cached)
        else:
            todo.append((shown, data, key, facts))
    if jobs <= 0:
        jobs = min(os.cpu_count() or 1, max(1, len(todo) // 8))
    items = [(shown, data, facts) for shown, data, _, facts in todo]
    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(codes,)) as pool:
            results = list(pool.map(_lint_one, items, chunksize=max(1, len(items) // (jobs * 8))))
    else:
        _init_worker(codes)
        results = [_lint_one(item) for item in items]
    for (shown, _, key, _), result in zip(todo, results):
        if cache:
            cache.put(key, result)
        findings.extend(result)
    if cache:
        cache.save()
    kept = []
    ignored: dict[str, set[str]] = {}
    for f in findings:
        if f.path not in ignored:
            ignored[f.path] = config.ignored_for(_relative_to_root(f.path, config.root))
        if f.code not in ignored[f.path]:
            kept.append(f)
    kept.sort(key=Finding.sort_key)
    return kept, files


def per_file_ignores(config: Config):
    """`path -> codes that per-file-ignores switch off there`, for shown paths as findings carry them."""
    return lambda shown: config.ignored_for(_relative_to_root(shown, config.root))


def _relative_to_root(shown: str, root: Path) -> str:
    try:
        return Path(shown).resolve().relative_to(root).as_posix()
    except ValueError:
        return shown
