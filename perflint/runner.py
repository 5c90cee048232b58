"""Lint many files: discovery, reading, the size limit, the cache, worker processes, sorted output."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from perflint import pool
from perflint.cache import Cache, digest
from perflint.config import Config
from perflint.files import SourceFile, discover, read
from perflint.model.crossfile import FileResult, Reach
from perflint.model.project import FileFacts, Project, Scan, declares_distribution
from perflint.rule import SYNTAX_ERROR, Finding
from perflint.source import code_text, lint


_CRASHED = "cannot analyse: the worker process linting it"


@dataclass
class Run:
    findings: list[Finding] = field(default_factory=list)
    files: dict[str, SourceFile] = field(default_factory=dict)  # checked, by shown name
    digests: dict[str, str] = field(default_factory=dict)  # shown name -> digest of the bytes linted
    facts: dict[str, FileFacts] = field(default_factory=dict)  # shown name -> what the run knew of it
    skipped: int = 0  # files left out with a notice (over max-file-size)
    reach: Reach | None = None  # the functions other files call every step (for --fix's second look)
    assume_forward: bool = False  # `assume-forward-per-step`: keep the findings marked `assumed`

    def judged(self, file: SourceFile, result: FileResult) -> list[Finding]:
        """A file's findings, with those that hold because another file calls it every step; those that rest
        only on a module's forward running every step (`Finding.assumed`) only when the settings say so."""
        found = self.reach.judged(file.name, result) if self.reach is not None else result.findings
        return found if self.assume_forward else [f for f in found if not f.assumed]


def _lint_one(item: tuple[SourceFile, bytes, FileFacts]) -> FileResult:
    return lint(*item)


def lint_paths(paths: list[str], config: Config, jobs: int = 0, use_cache: bool = True,
               notice: Callable[[str], None] = lambda message: None,
               progress: Callable[[int, int], None] | None = None) -> Run:
    """Findings for the files below `paths`, sorted by file, cell, line and column."""
    run = Run(assume_forward=config.assume_forward_per_step)
    read_files: list[tuple[SourceFile, bytes, str]] = []  # file, content, its code as text
    for file in discover(paths, config, notice):
        try:
            data = read(file.path)
        except OSError as e:
            run.files[file.shown] = file
            if SYNTAX_ERROR.code in file.codes:
                run.findings.append(SYNTAX_ERROR.finding(file.shown, 1, f"cannot read: {e.strerror or e}"))
            continue
        text = code_text(file, data)
        size = len(text.encode("utf-8", "surrogatepass")) if file.notebook else len(data)
        if config.max_file_size and size > config.max_file_size:
            notice(f"{file.shown}: skipped: {_size(size)} of code is over max-file-size ({_size(config.max_file_size)})")
            run.skipped += 1
            continue
        run.files[file.shown] = file
        run.digests[file.shown] = digest(data)
        read_files.append((file, data, text))
    # Facts from the whole run (is it PyTorch code, does the project use a device): a cheap text scan.
    project = Project({file.name: Scan(file.name, text) for file, _, text in read_files},
                      installable=declares_distribution(config.root))
    cache = Cache(config.root / ".perflint_cache", config.enabled_codes()) if use_cache else None
    todo: list[tuple[SourceFile, bytes, FileFacts]] = []
    keys: list[str] = []
    results: dict[str, FileResult] = {}  # by project path
    for file, data, _ in read_files:
        facts = run.facts[file.shown] = project.facts(file.name, tests_as_code=config.lint_tests)
        key = Cache.key(run.digests[file.shown], file.codes, facts.key())
        cached = cache.get(key, file.shown) if cache else None
        if cached is not None:
            results[file.name] = cached
        else:
            todo.append((file, data, facts))
            keys.append(key)
    if todo:
        if jobs <= 0:
            jobs = min(os.cpu_count() or 1, max(1, len(todo) // 8))
        finished = [0]

        def done() -> None:
            finished[0] += 1
            progress(finished[0], len(todo))

        def crashed(index: int, reason: str) -> FileResult:
            file = todo[index][0]
            return FileResult([SYNTAX_ERROR.finding(file.shown, 1, f"{_CRASHED} {reason}")]
                              if SYNTAX_ERROR.code in file.codes else [])

        linted = pool.run(_lint_one, todo, jobs, crashed, done if progress else None,
                          timeout=config.file_timeout or None)
        for (file, _, _), key, result in zip(todo, keys, linted):
            if cache and not any(f.message.startswith(_CRASHED) for f in result.findings):
                cache.put(key, result)  # a crash or a timeout may be the machine's (memory, load): not cached
            results[file.name] = result
    if cache:
        cache.save()
    # Functions that run every step because another file calls them there (model/crossfile.py).
    texts = {file.name: text for file, _, text in read_files}
    names = {file.name: file for file, _, _ in read_files}
    run.reach = Reach(project, {name: r.calls for name, r in results.items()}, texts.__getitem__,
                      lambda name: names[name].shown)
    for name, result in results.items():
        run.findings.extend(run.judged(names[name], result))
    run.findings.sort(key=Finding.sort_key)
    return run


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KiB"
