"""`perflint trace FILE_OR_FOLDER... [--budget KEY=VALUE] [--budget-file FILE] [--steps A:B] [--output-format F]
[--compare AFTER] [--jobs N]`

Exit status: 0 every budget holds, 1 a budget is broken, 2 unreadable input or bad usage (the other
files are still analysed and reported).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from perflint.measures.budgets import KEYS, OPTIONS, Budget, BudgetError, check, parse_budget, size_unit, spec
from perflint.trace.load import TraceError, is_trace_file, load_trace
from perflint.trace.model import Trace
from perflint.trace.steps import StepError, parse_range, select
from perflint.usage import Parser, UsageError

if TYPE_CHECKING:
    from perflint.trace.report import RankResult

if importlib.util.find_spec("numpy") is None:  # checked now: the analysis is imported later, as a file is read
    raise ModuleNotFoundError("No module named 'numpy'", name="numpy")

PROG = "perflint trace"
EXIT_BROKEN_PIPE = 141  # what a shell reports for a writer killed by SIGPIPE
# --budget-file's TOML (perflint.toml), --compare (perflint.trace.compare) and the cross-rank figures
# (perflint.trace.ranks) are imported where they are used: the common run needs none of them. The analysis
# (numpy among it) is imported while a child process reads the second half of the first large trace.
# Budget keys a trace can tell: the metrics, per-op caps and per-step checking (not world_size, timeout,
# baseline or the scaling keys, which belong to a test run).
TRACE_KEYS = (*KEYS, "ops", "per_step")


def _parser() -> Parser:
    p = Parser(prog=PROG, description="Check recorded PyTorch profiler (Kineto) traces against perf budgets.")
    p.add_argument("paths", nargs="+", metavar="FILE_OR_FOLDER",
                   help="trace files (*.json, *.json.gz) or folders of them (e.g. one file per rank)")
    p.add_argument("--budget", action="append", default=[], metavar="KEY=VALUE",
                   help="a budget, as in @pytest.mark.perf_budget: max_syncs=0, max_transfer_bytes=24MB, ...; "
                        "with --compare also relative to the baseline: max_kernels=+10%%, max_syncs=+0")
    p.add_argument("--budget-file", metavar="FILE", help="budgets as TOML or JSON (a [budget] table or top level)")
    p.add_argument("--steps", metavar="A:B", help="analyse ProfilerStep#A..#B only (A:, :B and A also work)")
    p.add_argument("--output-format", choices=("text", "json", "github"), default="text")
    p.add_argument("--compare", metavar="AFTER",
                   help="compare the trace (or saved JSON report) given first, the baseline, with this one")
    p.add_argument("--jobs", "-j", type=int, default=0,
                   help="processes that read one file: 1 this one alone; by default (0) a second process "
                        "reads the second half of a file over 8 MB of JSON, on Linux with two CPUs or more")
    return p


def _value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    from perflint.trace.compare import is_relative

    if is_relative(text):  # "+10%", "+0": relative to the --compare baseline
        return text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def _read_budget_file(path: str) -> dict[str, Any]:
    import json

    from perflint import toml

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"--budget-file {path}: {exc.strerror or exc}") from None
    try:
        table = json.loads(data) if path.endswith(".json") else toml.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise UsageError(f"--budget-file {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(table, dict):
        raise UsageError(f"--budget-file {path}: expected a table of budget keys")
    for key in ("budget", "perf_budget"):
        if isinstance(table.get(key), dict):
            return table[key]
    return table


def _relative(values: dict[str, Any]) -> dict[str, Any]:
    """The budgets relative to the --compare baseline ("+10%"); without budgets, compare is not imported."""
    if not values:
        return {}
    from perflint.trace.compare import is_relative

    return {k: v for k, v in values.items() if is_relative(v)}


class _Budgets:
    """The checked budget, the relative limits for --compare, and the unit each size was written in."""

    def __init__(self, args: argparse.Namespace):
        values: dict[str, Any] = _read_budget_file(args.budget_file) if args.budget_file else {}
        for item in args.budget:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"--budget expects KEY=VALUE, got {item!r}")
            values[key.strip()] = _value(value)
        unknown = [k for k in values if k not in TRACE_KEYS]
        if unknown:
            what = "has no meaning for a trace" if spec(unknown[0]) or unknown[0] in OPTIONS else "is unknown"
            raise UsageError(f"unknown budget key {unknown[0]!r}: it {what}; valid keys for a trace: "
                             + ", ".join(TRACE_KEYS))
        self.relative = _relative(values)
        if self.relative and not args.compare:
            k = next(iter(self.relative))
            raise UsageError(f"--budget {k}={self.relative[k]}: a relative limit needs --compare")
        self.units = {KEYS[k].metric: size_unit(v) for k, v in values.items()
                      if k in KEYS and KEYS[k].unit == "bytes" and size_unit(v)}
        try:
            self.budget = parse_budget({k: v for k, v in values.items() if k not in self.relative})
        except BudgetError as exc:
            raise UsageError(str(exc)) from None


def _expand(paths: Sequence[str]) -> list[str]:
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if is_trace_file(f)) or sorted(
                f for f in p.rglob("*") if is_trace_file(f))
            if not found:
                raise UsageError(f"{p}: no *.json or *.json.gz trace files in this folder")
            files += [str(f) for f in found]
        else:
            files.append(str(p))
    return files


def _check_one(path: str, budget: Budget, steps: tuple[int | None, int | None] | None,
               processes: int) -> tuple[Trace, RankResult]:
    """The analysed part of one file (for the cross-rank figures) and its checked result."""
    trace = load_trace(path, processes=processes, meanwhile=_import_analysis)
    from perflint.trace.figures import analyze, metrics_of, unavailable
    from perflint.trace.report import RankResult

    if not (trace.host_ops or trace.runtime or trace.device):
        dropped = sum(trace.problems.values())
        why = f" ({dropped} malformed: {_problems(trace.problems)})" if dropped else ""
        raise TraceError(path, "no usable events" + why)
    try:
        part = select(trace, *steps) if steps else trace
    except StepError as exc:
        raise TraceError(path, str(exc)) from None
    figures = analyze(part, label="steps " + ":".join("" if s is None else str(s) for s in steps) if steps else None)
    measured = metrics_of(figures)
    op_counts = Counter(h.name for h in part.host_ops if h.kind == "op") if budget.op_limits else None
    result = RankResult(figures, measured, check(budget, measured, op_counts, unavailable(figures)))
    if budget.per_step and len(figures.steps) > 1:
        for step in figures.steps:
            one = metrics_of(analyze(trace, (step.number, step.number)))
            result.step_verdicts[step.number] = check(Budget(limits=budget.limits), one, None,
                                                      unavailable(figures))
    return part, result


def _processes(args: argparse.Namespace) -> int:
    if args.jobs < 0:
        raise UsageError("--jobs must be >= 0")
    return 1 if args.jobs == 1 else 2  # the file is read in two halves at most


def _import_analysis() -> None:
    import perflint.trace.report  # noqa: F401 - imports analyze and the module of every figure (~0.1 s)


def _problems(problems: dict[str, int]) -> str:
    return ", ".join(f"{n} {what}" for what, n in problems.items())


def _analysed(path: str, budget: Budget, steps, processes: int) -> tuple[Trace, RankResult]:
    """_check_one, with any failure on this one file turned into a TraceError (one line, exit 2): a
    malformed file must not stop the others."""
    try:
        return _check_one(path, budget, steps, processes)
    except (TraceError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - a bug or an input we did not foresee: report, go on
        raise TraceError(path, f"cannot be analysed ({type(exc).__name__}: {exc})") from None


def _figures_of(path: str, steps, processes: int) -> list[dict[str, Any]]:
    """--compare input: a saved JSON report's figures, or the figures of a trace file or folder."""
    from perflint.trace.compare import saved_figures

    saved = saved_figures(path)
    if saved is not None:
        return saved
    out = []
    for file in _expand([path]):
        _, result = _analysed(file, Budget(), steps, processes)
        out.append(dict(result.figures.to_dict(), metrics=result.metrics))
    return out


def _compare(args: argparse.Namespace, budgets: _Budgets, steps, processes: int) -> int:
    from perflint.trace.compare import compare

    if len(args.paths) != 1:
        raise UsageError("--compare takes one baseline (a trace, a folder or a saved JSON report) before it")
    before, after = _figures_of(args.paths[0], steps, processes), _figures_of(args.compare, steps, processes)
    if len(before) != len(after):
        raise UsageError(f"--compare: {len(before)} trace(s) before, {len(after)} after; they pair in order")
    comparisons = [compare(b, a, budgets.relative, budgets.budget) for b, a in zip(before, after)]
    from perflint.trace.report import render_comparison

    _print(render_comparison(comparisons, args.output_format))
    return 1 if any(v.status == "fail" for c in comparisons for v in c.verdicts) else 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except BrokenPipeError:  # `perflint trace ... | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        budgets = _Budgets(args)
        steps = parse_range(args.steps) if args.steps else None
        processes = _processes(args)
        if args.compare:
            return _compare(args, budgets, steps, processes)
        files = _expand(args.paths)
    except (UsageError, ValueError, TraceError) as exc:  # CompareError and BudgetError are ValueErrors
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    results, errors, parts = [], [], []
    for path in files:
        try:
            part, result = _analysed(path, budgets.budget, steps, processes)
        except TraceError as exc:
            errors.append(exc)
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            continue
        if result.figures.problems:
            print(f"{PROG}: warning: {path}: {sum(result.figures.problems.values())} malformed event(s): "
                  f"{_problems(result.figures.problems)}", file=sys.stderr)
        results.append(result)
        parts.append((part, result.figures))
    if len(parts) > 1:
        from perflint.trace.ranks import job_figures

        job = job_figures(parts)
    else:
        job = None
    if results:
        from perflint.trace.report import render

        _print(render(results, job, args.output_format, budgets.units))
    if errors:
        return 2
    return 1 if any(r.failed for r in results) else 0


def _print(text: str) -> None:
    print(text)
    sys.stdout.flush()  # a closed pipe raises here, inside main's handler


if __name__ == "__main__":
    sys.exit(main())
