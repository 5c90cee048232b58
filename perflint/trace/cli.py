"""`perflint trace FILE_OR_FOLDER... [--budget KEY=VALUE] [--budget-file FILE] [--steps A:B] [--output-format F]`

Exit status: 0 every budget holds, 1 a budget is broken, 2 unreadable input or bad usage (the other
files are still analysed and reported).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from perflint.measures.budgets import Budget, BudgetError, check, parse_budget
from perflint.trace.analyze import analyze, metrics_of, unavailable
from perflint.trace.load import TraceError, is_trace_file, load_trace
from perflint.trace.ranks import job_figures
from perflint.trace.report import RankResult, render
from perflint.trace.model import Trace
from perflint.trace.steps import StepError, parse_range, select

PROG = "perflint trace"


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit; we want one line and code 2
        raise UsageError(message)


def _parser() -> _Parser:
    p = _Parser(prog=PROG, description="Check recorded PyTorch profiler (Kineto) traces against perf budgets.")
    p.add_argument("paths", nargs="+", metavar="FILE_OR_FOLDER",
                   help="trace files (*.json, *.json.gz) or folders of them (e.g. one file per rank)")
    p.add_argument("--budget", action="append", default=[], metavar="KEY=VALUE",
                   help="a budget, as in @pytest.mark.perf_budget: max_syncs=0, max_transfer_bytes=24MB, ...")
    p.add_argument("--budget-file", metavar="FILE", help="budgets as TOML or JSON (a [budget] table or top level)")
    p.add_argument("--steps", metavar="A:B", help="analyse ProfilerStep#A..#B only (A:, :B and A also work)")
    p.add_argument("--output-format", choices=("text", "json", "github"), default="text")
    return p


def _value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def _read_budget_file(path: str) -> dict[str, Any]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"--budget-file {path}: {exc.strerror or exc}") from None
    try:
        table = json.loads(data) if path.endswith(".json") else _toml(data)
    except ValueError as exc:
        raise UsageError(f"--budget-file {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(table, dict):
        raise UsageError(f"--budget-file {path}: expected a table of budget keys")
    for key in ("budget", "perf_budget"):
        if isinstance(table.get(key), dict):
            return table[key]
    return table


def _toml(data: bytes) -> Any:
    try:
        import tomllib  # Python >= 3.11
    except ImportError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            return json.loads(data)  # no TOML parser: accept JSON content
    return tomllib.loads(data.decode("utf-8"))


def _budget(args: argparse.Namespace) -> Budget:
    values: dict[str, Any] = _read_budget_file(args.budget_file) if args.budget_file else {}
    for item in args.budget:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--budget expects KEY=VALUE, got {item!r}")
        values[key.strip()] = _value(value)
    try:
        return parse_budget(values)
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


def _check_one(path: str, budget: Budget, steps: tuple[int | None, int | None] | None) -> tuple[Trace, RankResult]:
    """The analysed part of one file (for the cross-rank figures) and its checked result."""
    trace = load_trace(path)
    try:
        part = select(trace, *steps) if steps else trace
    except StepError as exc:
        raise TraceError(path, str(exc)) from None
    figures = analyze(part)
    if steps:
        figures.selection = "steps " + ":".join("" if s is None else str(s) for s in steps)
    measured = metrics_of(figures)
    op_counts = Counter(h.name for h in part.host_ops if h.kind == "op") if budget.op_limits else None
    result = RankResult(figures, measured, check(budget, measured, op_counts, unavailable(figures)))
    if budget.per_step and len(figures.steps) > 1:
        for step in figures.steps:
            one = metrics_of(analyze(trace, (step.number, step.number)))
            result.step_verdicts[step.number] = check(Budget(limits=budget.limits), one, None,
                                                      unavailable(figures))
    return part, result


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
        budget = _budget(args)
        steps = parse_range(args.steps) if args.steps else None
        files = _expand(args.paths)
    except (UsageError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    results, errors, parts = [], [], []
    for path in files:
        try:
            part, result = _check_one(path, budget, steps)
        except TraceError as exc:
            errors.append(exc)
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            continue
        results.append(result)
        parts.append((part, result.figures))
    job = job_figures(parts) if len(parts) > 1 else None
    if results:
        print(render(results, job, args.output_format))
    if errors:
        return 2
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
