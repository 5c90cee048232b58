"""pytest hooks: options, the `perf_budget` marker, the `perf` fixture and pass/fail by budget.

Flow per budgeted test: the marker is parsed once, at collection (a bad key is a collection error), and
the budget kept on the item; the test call runs under a `Recorder` (measure.py),
`perflint.measures.budgets.check` turns the figures into verdicts, a failing verdict fails the test
with attribution lines and a "perf budget" report section, and the verdicts travel on the test report
(`report.perf`, plain JSON, so pytest-xdist carries them to the controller), where the summary table,
the JSON report, GitHub annotations and the baseline file are written.

This module must import without torch: torch is imported only when a budgeted test runs.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import sys
from typing import Any

import pytest

from perflint.measures.budgets import (
    KEYS, MEASURED_SCALING, OPTIONS, PREDICTED_SCALING, SCALING_KEYS, VALUE_SHAPES, Budget, BudgetError, check,
    parse_budget, spec, valid_keys_text)
from pytest_perf import baseline as baselines
from pytest_perf import report

MARKER = "perf_budget"
INSTALL_HINT = "pytest_perf needs torch to measure this test: pip install 'torch-perflint[pytest]' ({})"
SECTION = "perf budget"  # the report section with a test's verdicts
_BUDGET = pytest.StashKey["Budget | None"]()  # the item's merged markers, parsed at collection
_RUN = pytest.StashKey["_Run"]()
_SESSION = pytest.StashKey["_PerfSession"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perf-budget", "profiler budgets for tests (pytest_perf)")
    group.addoption("--perf-budget", action="store_true", default=False,
                    help="measure tests marked perf_budget under torch.profiler and fail those over budget")
    group.addoption("--perf-report", metavar="FILE.json", help="write every measured metric of every budgeted test")
    group.addoption("--perf-trace-dir", metavar="DIR",
                    help="write the Chrome trace (Perfetto, TensorBoard) of each failing budgeted test")
    group.addoption("--perf-trace-all", action="store_true", help="with --perf-trace-dir: trace passing tests too")
    group.addoption("--perf-baseline", metavar="FILE", default=".perf-baseline.json",
                    help="baseline file, relative to the rootdir (default: .perf-baseline.json)")
    group.addoption("--perf-update-baseline", action="store_true",
                    help="record the counts of every marked test into the baseline file (implies --perf-budget)")
    group.addoption("--perf-fail-on-increase", action="store_true",
                    help="fail marked tests whose counts grew past the baseline (implies --perf-budget)")
    group.addoption("--perf-dist-timeout", type=float, default=None, metavar="SECONDS",
                    help="world_size tests: seconds all ranks may take before every rank is killed (default 120; "
                         "the marker's timeout= wins)")
    parser.addini("perf_budget", type="bool", default=False, help="enforce perf_budget markers (like --perf-budget)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", marker_help())
    session = _PerfSession(config)
    config.stash[_SESSION] = session
    config.pluginmanager.register(session, "pytest_perf_session")


def marker_help() -> str:
    """The marker's line in `pytest --markers`, generated from the budget tables so it cannot drift."""
    limits = [f"{k}={VALUE_SHAPES.get(k, VALUE_SHAPES[s.unit])}" for k, s in {**KEYS, **SCALING_KEYS}.items()]
    options = [f"{k}={shape}" for k, (shape, _) in OPTIONS.items()]
    return (f"{MARKER}({', '.join(limits + options)}): fail the test under --perf-budget when a count or size "
            f"goes above a max_* limit or a ratio below a min_* one; SIZE is bytes or a string such as '24 MB'. "
            f"Guide: docs/pytest-perf.md")


# -- collection: a bad marker is a collection error that lists the valid keys ----------------------------
def _marker_budget(item: pytest.Item) -> Budget | None:
    """The merged perf_budget markers of an item (the closest wins per key), validated."""
    marks = list(item.iter_markers(MARKER))
    if not marks:
        return None
    values: dict[str, Any] = {}
    for mark in reversed(marks):
        if mark.args:
            raise BudgetError(f"{MARKER} takes keyword arguments only, got {mark.args!r}; "
                              f"valid keys: {valid_keys_text()}")
        values.update(mark.kwargs)
    return parse_budget(values)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    rep = yield
    if rep.passed:
        errors = []
        for node in rep.result:
            if isinstance(node, pytest.Item):
                try:
                    node.stash[_BUDGET] = _marker_budget(node)
                except BudgetError as e:
                    errors.append(f"{node.nodeid}: invalid @pytest.mark.{MARKER}: {e}")
        if errors:
            rep.outcome, rep.longrepr, rep.result = "failed", "\n".join(errors), []
    return rep


# -- running ---------------------------------------------------------------------------------------------
class _Run:
    """One budgeted (or perf-fixture) test: its Perf object and, when enforced, its budget."""

    def __init__(self, item: pytest.Item, budget: Budget | None, session: "_PerfSession"):
        from pytest_perf import distributed
        from pytest_perf.fixture import Perf
        from pytest_perf.plan import Plan

        self.item, self.budget, self.session = item, budget, session
        # world_size > 1: the controller sends the test to ranks (distributed.py); a rank measures it
        self.rank = distributed.rank_info() if budget is not None and budget.world_size > 1 else None
        self.distributed = budget is not None and budget.world_size > 1 and self.rank is None
        self.enforced = budget is not None and session.enabled
        self.compare_baseline = self.enforced and (budget.baseline or session.fail_on_increase)
        everything = bool(not budget or self.compare_baseline or session.report_path or session.update_baseline
                          or "perf" in item.fixturenames)
        asked = set()
        if budget:
            asked = {spec(k).metric for k in budget.limits} | ({"ops"} if budget.op_limits else set())
        self.plan = Plan.choose(asked, everything, keep_trace=bool(session.trace_dir))
        if self.rank is not None:
            self.plan = dataclasses.replace(self.plan, comm=True, flops=budget.scaling_model is not None)
        self.perf = Perf(self.plan)
        self.entry: dict | None = None
        self.unraised: str | None = None  # the budget failure of a test that failed for its own reason

    def verdicts(self, result) -> tuple[list, str | None]:
        """Check the budget (and baseline); returns verdict entries and the failure message, if any."""
        from pytest_perf.attribution import explain, first_line

        budget, root = self.budget, str(self.session.config.rootpath)
        metrics = result.metrics
        if self.rank is not None and budget.scaling_model:
            from pytest_perf.distributed import predicted

            metric = SCALING_KEYS[PREDICTED_SCALING].metric
            metrics = {**metrics, metric: predicted(result, budget.scaling_model).efficiency}
        checked, reasons = metrics, result.reasons()
        problems: list[str] = []
        if budget.per_step:
            if not result.steps:
                problems.append("per_step=True but the test marked no steps: call perf.step() after each iteration")
            checked = result.worst_step()
            reasons = {**{m: "not measured per step" for m, v in checked.items() if v is None}, **reasons}
        found = check(budget, checked, result.op_counts, unavailable=reasons)
        if self.compare_baseline:
            recorded = self.session.baseline().get(self.item.nodeid)
            found += baselines.compare(recorded, metrics)
        entries, failed = [], []
        for v in found:
            text = v.describe()
            where = None
            if v.status == "fail":
                text = explain(v, result.hits, root=root, top_ops=result.top_ops)
                if budget.per_step and v.metric in checked and not v.key.endswith("@baseline"):
                    worst = max(range(len(result.steps)), key=lambda i: result.steps[i][v.metric])
                    text += f" (worst is step {worst + 1} of {len(result.steps)}; causes counted over all steps)"
                where = first_line(v.metric, result.hits)
                if where and not os.path.relpath(where[0], root).startswith(".."):
                    where = (os.path.relpath(where[0], root), where[1])
                failed.append((v, text))
            entries.append(report.verdict_entry(v, text, where))
        return entries, report.failure_message(failed, problems)

    def finish(self, test_failed: bool) -> str | None:
        """Stop measuring, decide, and keep the report entry; returns the failure message."""
        from pytest_perf.profiler import export_traces

        result = self.perf.finish()
        entries, message = self.verdicts(result)
        failing = message is not None or test_failed
        traces = []
        if self.session.trace_dir and (failing or self.session.trace_all) and result.traces:
            try:
                os.makedirs(self.session.trace_dir, exist_ok=True)
                stem = os.path.join(self.session.trace_dir, report.trace_stem(self.item.nodeid))
                traces = export_traces(result.traces, stem)
            except OSError as e:  # the folder went away or became a file mid-run: keep the verdict
                problem = f"perf trace not written: {e.filename or self.session.trace_dir}: {e.strerror or e}"
                message = f"{message}\n  {problem}" if message else None
                if message is None:
                    self.session.trace_errors.append(f"{self.item.nodeid}: {problem}")
        result.traces.clear()
        self.entry = {"nodeid": self.item.nodeid, "metrics": result.metrics, "verdicts": entries,
                      "per_step": self.budget.per_step, "steps": [dict(s) for s in result.steps],
                      "top_ops": dict(result.top_ops.most_common(20)), "traces": traces,
                      "baseline_counts": baselines.counts(result.metrics)}
        if self.rank is not None:
            from pytest_perf.distributed import rank_figures

            self.entry["distributed"] = rank_figures(result, self.budget.scaling_model)
        self.unraised = message if test_failed else None
        return message


def _torch_missing() -> str | None:
    try:
        import torch  # noqa: F401
    except ImportError as e:
        return INSTALL_HINT.format(e)
    return None


def _run_for(item: pytest.Item) -> _Run:
    run = item.stash.get(_RUN, None)
    if run is None:
        missing = _torch_missing()
        if missing:
            pytest.fail(missing, pytrace=False)
        run = item.stash[_RUN] = _Run(item, None, item.config.stash[_SESSION])
    return run


@pytest.fixture
def perf(request: pytest.FixtureRequest):
    """Measure part of a test: `with perf.region():`, `perf.warmup(fn, n)`, `perf.step()`, `perf.metrics`."""
    run = _run_for(request.node)
    yield run.perf
    if not run.enforced:
        run.perf.finish()  # never leave a profiler running


@pytest.fixture
def perf_rank():
    """In a world_size=N test body: this rank's `rank`, `world_size`, `local_rank`, `device` ("cpu" or
    "cuda:<local rank>") and `backend` ("gloo" or "nccl"); the process group is already set up."""
    from pytest_perf.distributed import rank_info

    return rank_info()


def _budget(item: pytest.Item) -> Budget | None:
    """The item's budget, parsed at collection; None without a marker."""
    return item.stash.get(_BUDGET, None)


def _world_size(item: pytest.Item) -> Budget | None:
    """The item's budget when it asks for world_size > 1."""
    budget = _budget(item)
    return budget if budget is not None and budget.world_size > 1 else None


class _PerfSession:
    """Session-wide state and the hooks that need it, registered as a plugin object."""

    def __init__(self, config: pytest.Config):
        self.config = config
        opt = config.getoption
        self.update_baseline = opt("perf_update_baseline")
        self.fail_on_increase = opt("perf_fail_on_increase")
        self.enabled = bool(opt("perf_budget") or config.getini("perf_budget") or self.update_baseline
                            or self.fail_on_increase)
        self.report_path = opt("perf_report")
        self.trace_dir = opt("perf_trace_dir")
        if self.trace_dir:
            problem = _folder_problem(self.trace_dir)
            if problem:
                raise pytest.UsageError(f"--perf-trace-dir {self.trace_dir}: {problem}")
        self.trace_errors: list[str] = []
        self.trace_all = opt("perf_trace_all")
        self.baseline_path = os.path.join(str(config.rootpath), opt("perf_baseline"))
        self.is_worker = hasattr(config, "workerinput")
        self.entries: dict[str, dict] = {}
        self._baseline: dict | None = None
        self.pools: dict[int, Any] = {}  # world size -> distributed.RankPool
        self.dist_files: dict[int, set[str]] = {}  # world size -> test files the pool's workers collect

    def baseline(self) -> dict:
        if self._baseline is None:
            self._baseline = baselines.load(self.baseline_path)
        return self._baseline

    def pytest_report_header(self, config: pytest.Config) -> str:
        if not self.enabled:
            return "perf budgets: off (pass --perf-budget to enforce @pytest.mark.perf_budget)"
        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            return "perf budgets: on, but torch is not installed: budgeted tests will error"
        return (f"perf budgets: on (torch {version}; on a CPU, syncs and transfers are counted as they would "
                f"happen on an accelerator, see perflint/measures/events.py)")

    # -- world_size=N tests (pytest_perf/distributed.py) ------------------------------------------
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            budget = _world_size(item)
            if budget is not None:
                self.dist_files.setdefault(budget.world_size, set()).add(str(item.path))

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function):
        budget = _world_size(pyfuncitem)
        if budget is None:
            return None
        from pytest_perf import distributed

        info = distributed.rank_info()
        if info is None:
            self._run_on_ranks(pyfuncitem, budget)
            return True
        if distributed.under_torchrun() and info.world_size != budget.world_size:
            pytest.skip(f"needs world_size={budget.world_size}; this torchrun job has {info.world_size} ranks")
        return None  # a rank: run the body here

    def _run_on_ranks(self, item: pytest.Item, budget: Budget) -> None:
        from pytest_perf import distributed

        timeout = budget.timeout or self.config.getoption("perf_dist_timeout") or distributed.DEFAULT_TIMEOUT_S
        results, missing = self._pool(budget.world_size, item).run(item.nodeid, timeout)
        entry, message, skipped = distributed.combine(item.nodeid, results, missing, timeout)
        run = item.stash.get(_RUN, None)
        if run is not None and run.enforced and MEASURED_SCALING in budget.limits and entry and not message:
            single, _ = self._pool(1, item).run(item.nodeid, timeout)
            entry, message = distributed.add_scaling_verdict(entry, single.get(0, {}), budget)
        if run is not None and entry is not None:
            run.entry = entry
        if message:
            raise pytest.fail.Exception(message, pytrace=False)
        if skipped:
            pytest.skip(results[0].get("longrepr") or "skipped on every rank")

    def _pool(self, world_size: int, item: pytest.Item):
        from pytest_perf import distributed

        pool = self.pools.get(world_size)
        if pool is None or not pool.alive:
            files = sorted(set().union(*self.dist_files.values(), {str(item.path)}))
            pool = distributed.RankPool(world_size, distributed.worker_args(self.config) + files,
                                        str(self.config.invocation_params.dir))
            try:
                pool.start()
            except RuntimeError as e:
                raise pytest.fail.Exception(str(e), pytrace=False) from None
            self.pools[world_size] = pool
        return pool

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        from pytest_perf import distributed

        dist_budget = _world_size(item) if distributed.under_torchrun() else None
        if dist_budget is not None:
            info = distributed.rank_info()
            if info.world_size == dist_budget.world_size:  # one group for the whole torchrun job
                distributed.init_group(info, None, dist_budget.timeout or distributed.DEFAULT_TIMEOUT_S)
        if not self.enabled:
            return
        budget = _budget(item)
        if budget is None:
            return
        missing = _torch_missing()
        if missing:
            pytest.fail(missing, pytrace=False)
        item.stash[_RUN] = _Run(item, budget, self)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        run = item.stash.get(_RUN, None)
        if run is None or not run.enforced or run.distributed:
            return (yield)
        from pytest_perf.profiler import ProfilerConflict

        try:
            run.perf.start_implicit()
        except ProfilerConflict as e:
            raise pytest.fail.Exception(str(e), pytrace=False) from None
        try:
            result = yield
        except BaseException:
            self._finish(run, test_failed=True)
            raise
        message = self._finish(run, test_failed=False)
        if message:
            raise pytest.fail.Exception(message, pytrace=False)
        return result

    @staticmethod
    def _finish(run: _Run, test_failed: bool) -> str | None:
        from pytest_perf.profiler import ProfilerConflict

        try:
            return run.finish(test_failed)
        except ProfilerConflict as e:
            raise pytest.fail.Exception(str(e), pytrace=False) from None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        rep = yield
        run = item.stash.get(_RUN, None)
        if call.when == "call" and run is not None and run.entry is not None:
            rep.perf = run.entry
            if run.entry["verdicts"]:
                rep.sections.append((SECTION, report.section(run.entry, run.unraised)))
        if call.when == "teardown" and run is not None:
            del item.stash[_RUN]  # drop the profiler data with the test
        return rep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = getattr(report, "perf", None)
        if entry:
            self.entries[report.nodeid] = entry

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for pool in self.pools.values():
            pool.close()
        self.pools.clear()
        if "torch.distributed" in sys.modules:
            from pytest_perf.distributed import destroy_group, under_torchrun

            if under_torchrun():
                destroy_group()
        if self.is_worker or not self.entries:
            return
        entries = [self.entries[k] for k in sorted(self.entries)]
        if self.report_path:
            meta = {"version": 1, "torch": _torch_version(), "device": _device()}
            report.write_json(self.report_path, entries, meta)
        if self.update_baseline:
            old = baselines.load(self.baseline_path)
            baselines.save(self.baseline_path, {e["nodeid"]: e["baseline_counts"] for e in entries}, old)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        if self.is_worker or not self.entries:
            return
        entries = [self.entries[k] for k in sorted(self.entries)]
        tr = terminalreporter
        tr.write_sep("=", "perf budgets")
        if any(e["verdicts"] for e in entries):
            for line in report.table(entries).splitlines():
                tr.write_line(line)
        if self.report_path:
            tr.write_line(f"perf report: {self.report_path}")
        if self.update_baseline:
            tr.write_line(f"perf baseline: recorded {len(entries)} test(s) in {self.baseline_path}")
        traces = [p for e in entries for p in e.get("traces", [])]
        if traces:
            tr.write_line(f"perf traces: {len(traces)} Chrome trace(s) in {self.trace_dir} (open in ui.perfetto.dev)")
        for problem in self.trace_errors:
            tr.write_line(problem)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in report.github_annotations(entries):
                tr.write_line(line)


def _folder_problem(path: str) -> str | None:
    """Why a folder cannot be created at `path` (an ancestor is a file, or is read-only), else None."""
    here = os.path.abspath(path)
    while not os.path.exists(here):
        here = os.path.dirname(here)
    shown = os.path.relpath(here) if not os.path.relpath(here).startswith("..") else here
    if not os.path.isdir(here):
        return f"{shown} is a file, not a folder"
    if not os.access(here, os.W_OK):
        return f"cannot write in {shown}"
    return None


def _torch_version() -> str | None:
    torch = sys.modules.get("torch")
    return getattr(torch, "__version__", None)


def _device() -> str:
    torch = sys.modules.get("torch")
    return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"
