"""Lines per second of perflint against bare `libcst.parse_module` over the same files, in one run.

Usage: python benchmarks/bench_lint_speed.py CORPUS_DIR [--repeat N]

Reports: bare parse (one core), perflint with every rule on one core (no cache), perflint --jobs 2,
and a warm re-run over the unchanged tree (cache). In-process figures are CPU seconds, with parse and
lint alternating file by file so that both see the same machine load; command-line figures are wall
seconds (what --jobs changes). Each figure is the median of N runs; the ratios compare figures taken in
this same run, so they hold on any machine.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import libcst as cst


def _median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = sorted(p for p in args.corpus.rglob("*.py") if ".git" not in p.parts)
    sources = [p.read_bytes() for p in files]
    lines = sum(s.count(b"\n") for s in sources)
    print(f"corpus: {args.corpus} ({len(files)} files, {lines:,} lines)")

    from perflint.engine import Linter
    from perflint.rule import all_rules

    linter = Linter(all_rules().values())

    def interleaved() -> tuple[float, float]:
        parse = lint = 0.0
        for p, s in zip(files, sources):
            start = time.process_time()
            try:
                cst.parse_module(s)
            except Exception:
                pass
            middle = time.process_time()
            linter.lint_source(s, str(p))
            parse += middle - start
            lint += time.process_time() - middle
        return parse, lint

    work = Path(tempfile.mkdtemp())
    tree = work / "tree"
    shutil.copytree(args.corpus, tree, ignore=shutil.ignore_patterns(".git"))

    def cli(*extra):
        return subprocess.run([sys.executable, "-m", "perflint", "-q", "--exit-zero", "--select", "ALL",
                               *extra, str(tree)], cwd=work, capture_output=True, check=True)

    def cold(jobs):  # (the cache sits at the project root: the tree's own when it has settings)
        cli("--no-cache", "--jobs", str(jobs))

    pairs = [interleaved() for _ in range(args.repeat)]
    parse = statistics.median(p for p, _ in pairs)
    lint = statistics.median(l for _, l in pairs)
    cold1 = _median_seconds(lambda: cold(1), args.repeat)
    cold2 = _median_seconds(lambda: cold(2), args.repeat)
    cli("--jobs", "1")  # fill the cache
    warm = _median_seconds(lambda: cli("--jobs", "1"), args.repeat)
    shutil.rmtree(work)

    rows = [("libcst.parse_module only (CPU s)", parse), ("perflint, all rules, in process (CPU s)", lint),
            ("perflint CLI --jobs 1, cold (wall s)", cold1),
            ("perflint CLI --jobs 2, cold (wall s)", cold2), ("perflint CLI, warm cache (wall s)", warm)]
    for name, seconds in rows:
        print(f"{name:42s} {seconds:7.2f} s  {lines / seconds:10,.0f} lines/s")
    print(f"all rules / bare parse: {lint / parse:.2f}x   jobs 1 / jobs 2: {cold1 / cold2:.2f}x   "
          f"cold / warm: {cold1 / warm:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
