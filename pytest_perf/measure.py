"""Run code under torch.profiler and a TorchFunctionMode, and turn what they saw into metrics.

Data flows one way: `Recorder.start()` / `stop()` bracket one segment of measured code; each stop
walks the profiler's event tree once and adds its counts to `Recorder.result`. How an event becomes a
metric is decided by `perflint.events` (the one table); this module only applies it:

* The CPU profiler sees aten ops: top-level ones are `ops` (and `kernels` on a CPU), ops the table
  maps to `syncs` count once per outermost occurrence (`is_nonzero > item > _local_scalar_dense` is
  one sync).
* The function mode sees the Python calls the CPU profiler cannot (`.tolist()`, `.cpu()`, `.to(dev)`,
  ...) and, for the few calls that can sync or transfer, captures the caller's frame and wraps the call
  in a `pytest_perf::site#N` profiler range, so every sync inside it is attributed to that source line
  without collecting stacks for every op.
* torch.compile graph breaks and recompiles come from dynamo's counters and its recompile check.

No pytest import: the plugin, the fixture and the benchmark all use this module.
"""

from __future__ import annotations

import bisect
import gc
import os
import sys
import tempfile
import threading
from time import perf_counter_ns
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.autograd.profiler as _autograd_profiler
from torch.overrides import TorchFunctionMode

from perflint import events
from perflint.scaling import kind_of
from perflint.trace.intervals import Spans, intersect, total, union
from pytest_perf.attribution import Site, skip_library, user_site

skip_library(torch.__file__)

COUNT_METRICS = ("syncs", "ops", "kernels", "transfers", "transfer_bytes", "collectives",
                 "graph_breaks", "recompiles")
ALL_METRICS = (*COUNT_METRICS, "peak_memory", "queue_overlap", "comm_bytes", "comm_overlap")
STEP_METRICS = ("syncs", "ops", "kernels", "transfers", "transfer_bytes", "collectives")
NEEDS_SITES = frozenset({"syncs", "transfers", "transfer_bytes"})
NEEDS_COMPILE = frozenset({"graph_breaks", "recompiles"})

_SITE = "pytest_perf::site#"
_STEP = "pytest_perf::step"
# Around a call torch.utils.data makes on a host tensor of its own (see `_host_bookkeeping`).
_HOST = "pytest_perf::host"
# Recorded first in every segment: a segment without it was ended by another profiler (an all-threads
# session is process-wide, so `_profiler_enabled()` on this thread cannot tell).
_START = "pytest_perf::start"

# Calls that can sync or transfer. Only these pay for a frame walk and a profiler range.
_WATCHED = frozenset({
    "item", "__bool__", "__float__", "__int__", "__index__", "__complex__", "__format__", "__repr__",
    "__str__", "tolist", "numpy", "cpu", "cuda", "to", "nonzero", "argwhere", "masked_select", "unique",
    "unique_consecutive", "repeat_interleave", "__getitem__", "__setitem__", "tensor", "index_put_",
    "masked_scatter", "equal", "allclose",
})
_INDEXING = frozenset({"__getitem__", "__setitem__"})
_DATA_LOADING = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "utils", "data") + os.sep
# Ranges that contain ops but are not ops themselves (the autograd engine's per-node ranges).
_NOT_OPS = ("autograd::", "torch::autograd::", "pytest_perf::")
_CPU_ROWS = {e.name: e for e in events.EVENTS if e.source == "cpu_op" and not e.name.endswith("*")}
# A collective's own event on the backend's worker thread (`gloo:all_reduce`) or annotation (`nccl:...`):
# the same collective as its `c10d::` op, so it is counted only where no c10d op was seen.
_BACKEND_EVENTS = ("gloo:", "nccl:", "mpi:", "ucc:")
# Which argument of a c10d op (and of its backend event) holds what this rank sends.
_SEND_ARG = {"all_reduce": 0, "broadcast": 0, "all_gather": 1, "reduce_scatter": 1, "all_to_all": 1}


class ProfilerConflict(RuntimeError):
    """Another torch profiler ran at the same time: one process has one profiler."""


@dataclass(frozen=True)
class Plan:
    """What to collect. Counting ops needs only the profiler; the rest costs extra and is opt-in."""

    sites: bool = True  # function mode: Python-level syncs/transfers and their source lines
    memory: bool = False  # profile_memory=True for peak_memory (on a CPU: the test's own thread only)
    compile: bool = False  # import torch._dynamo and track graph breaks / recompiles
    keep_trace: bool = False  # keep the profiler to export a Chrome trace afterwards
    comm: bool = False  # record_shapes: collective bytes by kind, comm/compute overlap, wall time (ranks)
    flops: bool = False  # torch.utils.flop_counter: FLOPs of the measured code (predicted scaling)

    @classmethod
    def choose(cls, asked: set[str], everything: bool = False, keep_trace: bool = False) -> "Plan":
        """Collect what the budget asks for, or everything (reports, baselines, the fixture).

        The function mode and torch.compile do not mix: dynamo traces through the mode (extra graph
        breaks) and guards on the mode stack (a recompile after a warm-up without it). So when a test
        budgets compile metrics but no syncs/transfers, the mode stays off even if everything is wanted.
        Peak memory is measured only when budgeted: torch records CPU allocations only in a profiler
        session bound to one thread, and every other count covers all threads of the process."""
        compile_asked = bool(asked & NEEDS_COMPILE)
        return cls(sites=bool(asked & NEEDS_SITES) or (everything and not compile_asked),
                   memory="peak_memory" in asked, compile=compile_asked or everything, keep_trace=keep_trace)

    def unavailable(self) -> dict[str, str]:
        why = "not measured: the function mode is off while this test budgets torch.compile metrics"
        out = {m: why for m in NEEDS_SITES} if not self.sites else {}
        if not self.memory:
            out["peak_memory"] = "measured only in tests that budget max_peak_memory"
        return out

    def measured(self) -> set[str]:
        got = {"ops", "kernels", "collectives"}
        if self.sites:
            got |= NEEDS_SITES
        if self.memory:
            got.add("peak_memory")
        if self.compile:
            got |= NEEDS_COMPILE
        if self.comm:
            got |= {"comm_bytes", "comm_overlap"}
        return got


@dataclass
class Result:
    """Everything measured for one test, summed over its segments (regions)."""

    measured: set[str] = field(default_factory=set)
    counts: Counter = field(default_factory=Counter)
    peak_memory: int = 0
    op_counts: Counter = field(default_factory=Counter)  # every dispatched op, at any depth
    top_ops: Counter = field(default_factory=Counter)  # top-level ops only: what `ops` counts
    hits: Counter = field(default_factory=Counter)  # (metric, Site, rule) -> count
    steps: list[Counter] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    gpu: dict[str, float | None] = field(default_factory=dict)
    traces: list[Any] = field(default_factory=list)
    segments: int = 0
    # With Plan.comm (ranks of a world_size test): collectives and bytes by kind, time in communication
    # and the part of it that overlapped computation, wall time; with Plan.flops, FLOPs.
    comm_counts: Counter = field(default_factory=Counter)
    comm_kind_bytes: Counter = field(default_factory=Counter)
    comm_ns: int = 0
    comm_overlap_ns: int = 0
    wall_ns: int = 0
    flops: int | None = None

    @property
    def metrics(self) -> dict[str, float | None]:
        """Measured figures by metric name; None where not measured (see `unavailable`)."""
        out: dict[str, float | None] = {m: None for m in ALL_METRICS}
        for m in self.measured:
            out[m] = self.peak_memory if m == "peak_memory" else self.counts[m]
        if "comm_bytes" in self.measured:
            out["comm_bytes"] = sum(self.comm_kind_bytes.values())
            out["comm_overlap"] = self.comm_overlap_ns / self.comm_ns if self.comm_ns else None
        out.update({k: v for k, v in self.gpu.items() if v is not None})
        return out

    def reasons(self) -> dict[str, str]:
        why = {"queue_overlap": "needs a GPU", "comm_bytes": "not measured by pytest_perf outside world_size=N tests",
               "comm_overlap": "not measured by pytest_perf outside world_size=N tests"}
        if "comm_bytes" in self.measured:
            why["comm_overlap"] = "no collective ran"
        why.update(self.unavailable)
        return why

    def worst_step(self) -> dict[str, float | None]:
        """Per metric, the largest value over the marked steps: what a per-step budget checks."""
        out: dict[str, float | None] = {m: None for m in ALL_METRICS}
        for m in STEP_METRICS:
            if m in self.measured and self.steps:
                out[m] = max(s[m] for s in self.steps)
        return out


def _api_name(func: Callable, name: str) -> str:
    qual = getattr(func, "__qualname__", name)
    if qual.startswith(("TensorBase.", "Tensor.")):
        return "Tensor." + name
    module = getattr(func, "__module__", None) or "torch"
    if qual.startswith("_VariableFunctionsClass.") or module in ("torch", "torch.functional"):
        return "torch." + name
    return f"{module}.{name}"


def _has_tensor_index(index: Any) -> bool:
    if isinstance(index, torch.Tensor):
        return True
    return isinstance(index, (tuple, list)) and any(isinstance(i, torch.Tensor) for i in index)


def _host_bookkeeping(caller, args: tuple) -> bool:
    """A call that torch.utils.data itself makes on a host tensor: the loader's base seed, the sampler's
    seed and `randperm(n).tolist()`, default_collate's `torch.tensor(...)`. On a CPU-only machine every
    tensor is a host tensor and a call counts as it would cost on the tensors of a GPU run; these
    tensors stay on the host in a GPU run too, so reading them waits for no device. Calls from the
    user's Dataset or collate_fn are the user's code and count as usual."""
    if not caller.f_code.co_filename.startswith(_DATA_LOADING):
        return False
    first = args[0] if args else None
    tensors = first if isinstance(first, (list, tuple)) else (first,)
    return all(t.device.type == "cpu" for t in tensors if isinstance(t, torch.Tensor))


def _target_device(args: tuple, kwargs: dict) -> torch.device | None:
    """The device a `.to(...)` call names, or None for a dtype-only conversion."""
    dev = kwargs.get("device")
    if dev is None:
        for a in args[1:]:
            if isinstance(a, torch.Tensor):
                return a.device
            if isinstance(a, (str, torch.device)) or (isinstance(a, int) and not isinstance(a, bool)):
                dev = a
                break
    if dev is None:
        return None
    try:
        return torch.device(dev)
    except (RuntimeError, TypeError):
        return None


class _SyncSpy(TorchFunctionMode):
    """Sees every torch call made from Python; does work only for the watched ones."""

    def __init__(self, recorder: "Recorder"):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None)
        if (name not in _WATCHED or (name in _INDEXING and not _has_tensor_index(args[1]))
                or not self.recorder.running):  # a thread that outlived the measurement
            return func(*args, **kwargs)
        return self.recorder._watched(func, name, args, kwargs)


class Recorder:
    """Measures one or more segments of code; `result` holds the sum."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.result = self._fresh()
        self._prof = None
        self._mode: _SyncSpy | None = None
        self._undo: list[Callable[[], None]] = []
        self._sites: dict[Site, int] = {}
        self._site_list: list[Site] = []
        self._py_hits: Counter = Counter()  # (metric, site, rule, step) -> n
        self._py_bytes: Counter = Counter()  # (site, rule, step) -> bytes
        self._marks = 0
        self._dynamo_before: tuple[int, Counter] | None = None
        self._break_sites: list[Site] = []
        self._gpu = torch.cuda.is_available()
        self._flop_counter = None
        self._started_ns = 0
        self._lock = threading.Lock()  # Python-level counts come from every thread

    def _fresh(self) -> Result:
        return Result(measured=self.plan.measured(), unavailable=self.plan.unavailable())

    @property
    def running(self) -> bool:
        return self._prof is not None

    # -- segments -------------------------------------------------------------------------------
    def start(self) -> None:
        if self.running:
            raise RuntimeError("measurement already running")
        if torch._C._autograd._profiler_enabled():
            raise ProfilerConflict("a torch profiler is already running; pytest_perf needs the only one in the "
                                   "process (stop it, or drop the perf_budget marker from this test)")
        self._marks = 0
        self._py_hits.clear()
        self._py_bytes.clear()
        try:
            if self.plan.compile:
                self._track_dynamo()
            if self.plan.sites:
                self._patch_cuda_synchronize()
                self._patch_thread_start()
            if self.plan.memory:
                gc.collect()  # garbage freed mid-region by the cycle collector would lower the peak at random
            activities = [torch.profiler.ProfilerActivity.CPU]
            if self._gpu:  # untested here: no GPU on the CI that built this
                activities.append(torch.profiler.ProfilerActivity.CUDA)
                torch.cuda.reset_peak_memory_stats()
            cpu_memory = self.plan.memory and not self._gpu
            prof = torch.profiler.profile(activities=activities, profile_memory=cpu_memory,
                                          record_shapes=self.plan.comm,
                                          experimental_config=None if cpu_memory else _all_threads())
            with _without_profiler_chatter():
                prof.start()
            self._prof = prof
            with _autograd_profiler.record_function(_START):
                pass
            self._started_ns = perf_counter_ns()
            if self.plan.flops:
                from torch.utils.flop_counter import FlopCounterMode

                self._flop_counter = FlopCounterMode(display=False)
                self._flop_counter.__enter__()
            if self.plan.sites:
                self._mode = _SyncSpy(self)
                self._mode.__enter__()
        except BaseException:
            self._teardown()
            raise

    def stop(self) -> None:
        """Stop the profiler and restore every global setting, then add this segment's counts."""
        if not self.running:
            return
        prof = self._prof
        self.result.wall_ns += perf_counter_ns() - self._started_ns
        try:
            if self._mode is not None:
                self._mode.__exit__(None, None, None)
            if self._flop_counter is not None:
                self._flop_counter.__exit__(None, None, None)
                self.result.flops = (self.result.flops or 0) + self._flop_counter.get_total_flops()
        finally:
            self._flop_counter = None
            self._mode = None
            try:
                with _without_profiler_chatter():
                    prof.stop()
            finally:
                self._prof = None
                before = self._dynamo_before
                dynamo = (before, self._dynamo_snapshot()) if before is not None else None
                self._teardown()
        roots = prof.profiler.kineto_results.experimental_event_tree()
        if not any(node.name == _START for node in roots):
            raise ProfilerConflict("the test started its own torch profiler while pytest_perf was measuring, "
                                   "which ended pytest_perf's session; use one or the other (the perf fixture's "
                                   "`perf.metrics` gives the counts, --perf-trace-dir the trace)")
        self._add_segment(prof, roots, dynamo)

    def discard(self) -> None:
        """Stop without keeping anything (the region replaces the implicit whole-test segment)."""
        if not self.running:
            return
        keep = self.result
        self.result = self._fresh()
        try:
            self.stop()
        finally:
            self.result = keep

    def mark_step(self) -> None:
        """End the current step (call at the end of each iteration)."""
        if self.running:
            with _autograd_profiler.record_function(_STEP):
                pass
            self._marks += 1

    def _teardown(self) -> None:
        while self._undo:
            self._undo.pop()()
        self._dynamo_before = None

    # -- Python-level events --------------------------------------------------------------------
    def _site_index(self, site: Site) -> int:
        idx = self._sites.get(site)
        if idx is None:
            idx = self._sites[site] = len(self._site_list)
            self._site_list.append(site)
        return idx

    def _count(self, metric: str, site: Site, rule: str | None, nbytes: int = 0) -> None:
        with self._lock:
            self._py_hits[(metric, site, rule, self._marks)] += 1
            if nbytes and metric == events.TRANSFER:
                self._py_bytes[(site, rule, self._marks)] += nbytes

    def _watched(self, func: Callable, name: str, args: tuple, kwargs: dict) -> Any:
        if _host_bookkeeping(sys._getframe(2), args):
            with _autograd_profiler.record_function(_HOST):
                return func(*args, **kwargs)
        api = _api_name(func, name)
        if api == "Tensor.numpy" and kwargs.get("force"):  # numpy(force=True) copies to the host itself
            api, name = "Tensor.cpu", "cpu"
        site = user_site(api, depth=3)
        row = events.lookup(api, "python")
        if row is not None and row.metric is not None:
            self._count_python(name, row, site, args, kwargs)
        with self._lock:
            index = self._site_index(site)
        with _autograd_profiler.record_function(_SITE + str(index)):
            return func(*args, **kwargs)

    def _count_python(self, name: str, row: events.EventMapping, site: Site, args: tuple, kwargs: dict) -> None:
        """Apply the table's python rows; `.to()` counts only when it names a device. `.cpu()` states a
        device-to-host copy whatever the machine, so it is a sync too; `.to(dev)` is a sync only when it
        really copies device -> host (on a CPU-only machine `.to(DEVICE)` reads as the host-to-device
        copy it is on a GPU)."""
        src = args[0] if args and isinstance(args[0], torch.Tensor) else None
        nbytes = src.numel() * src.element_size() if src is not None else 0
        to_host = name == "cpu"
        if name == "to":
            dev = _target_device(args, kwargs)
            if dev is None:
                return
            blocking = not kwargs.get("non_blocking", False) and not any(a is True for a in args[2:])
            to_host = dev.type == "cpu" and blocking and src is not None and src.device.type != "cpu"
        self._count(row.metric, site, row.rule, nbytes)
        if to_host:  # a copy to the host is both a transfer and (when blocking) a sync
            self._count(events.SYNC if row.metric == events.TRANSFER else events.TRANSFER, site, row.rule, nbytes)

    def _patch_thread_start(self) -> None:
        """Threads started while measuring run under a function mode of their own (the mode stack is
        per thread), so their `.tolist()`, `.cpu()`, ... are counted and their lines named too."""
        original = threading.Thread.start
        recorder = self

        def start(thread, *args, **kwargs):
            run = thread.run

            def run_measured():
                with _SyncSpy(recorder):
                    return run()

            thread.run = run_measured
            return original(thread, *args, **kwargs)

        threading.Thread.start = start
        self._undo.append(lambda: setattr(threading.Thread, "start", original))

    def _patch_cuda_synchronize(self) -> None:
        original = torch.cuda.synchronize
        row = events.lookup("torch.cuda.synchronize", "python")

        def synchronize(*args, **kwargs):
            self._count(row.metric, user_site("torch.cuda.synchronize"), row.rule)
            return original(*args, **kwargs)

        torch.cuda.synchronize = synchronize
        self._undo.append(lambda: setattr(torch.cuda, "synchronize", original))

    # -- torch.compile ----------------------------------------------------------------------------
    def _track_dynamo(self) -> None:
        import torch._dynamo  # noqa: F401  (1 s on first import; only when a compile metric is asked)
        from torch._dynamo import convert_frame

        self._dynamo_before = self._dynamo_snapshot()
        original = getattr(convert_frame, "get_and_maybe_log_recompilation_reasons", None)
        if original is None:
            self.result.unavailable["recompiles"] = "this torch version has no recompile hook"
            self.result.measured.discard("recompiles")
            return

        def recompile_reasons(cache_entries, frame, *args, **kwargs):
            reasons = original(cache_entries, frame, *args, **kwargs)
            code = frame.f_code
            why = reasons[0].splitlines()[0] if reasons else "guard failed"
            self._count("recompiles", Site(code.co_filename, code.co_firstlineno, f"recompile: {why}"), "PFL404")
            return reasons

        convert_frame.get_and_maybe_log_recompilation_reasons = recompile_reasons
        self._undo.append(lambda: setattr(convert_frame, "get_and_maybe_log_recompilation_reasons", original))
        self._track_graph_break_lines()

    def _track_graph_break_lines(self) -> None:
        """Dynamo's counters give the number of graph breaks and their reasons; the user line comes from
        the hook where dynamo logs each break. Only for attribution: counts stay with the counters."""
        from torch._dynamo import symbolic_convert

        cls = getattr(symbolic_convert, "InstructionTranslatorBase", None)
        original = getattr(cls, "log_graph_break", None)
        if original is None:
            return

        def log_graph_break(tx, code_options, reason, exc, *args, **kwargs):
            try:
                if not getattr(exc, "logged", False):
                    stack = getattr(exc, "real_stack", None) or torch._guards.TracingContext.extract_stack()
                    if stack:
                        why = (str(exc) or str(reason)).strip().splitlines()[0]
                        self._break_sites.append(Site(stack[-1].filename, stack[-1].lineno, f"graph break: {why}"))
            except Exception:  # attribution is best effort; never break compilation
                pass
            return original(tx, code_options, reason, exc, *args, **kwargs)

        cls.log_graph_break = log_graph_break
        self._undo.append(lambda: setattr(cls, "log_graph_break", original))

    @staticmethod
    def _dynamo_snapshot() -> tuple[int, Counter]:
        from torch._dynamo.utils import counters

        breaks = Counter({k.splitlines()[0]: v for k, v in counters["graph_break"].items()})
        return sum(counters["graph_break"].values()), breaks

    # -- one segment's profile -> counts ----------------------------------------------------------
    def _add_segment(self, prof, roots, dynamo) -> None:
        res = self.result
        res.segments += 1
        step_events: list[tuple[int, str, int]] = []  # (time, metric, n): profiler counts to bin by step
        mark_times: list[int] = []
        allocs: list[tuple[int, int]] = []
        self._walk(roots, step_events, mark_times, allocs)

        # Python-level counts.
        for (metric, site, rule, _step), n in self._py_hits.items():
            res.counts[metric] += n
            res.hits[(metric, site, rule)] += n
        for (site, rule, _step), n in self._py_bytes.items():
            res.counts["transfer_bytes"] += n
            res.hits[("transfer_bytes", site, rule)] += n
        res.counts["kernels"] = res.counts["ops"]  # on a CPU the kernels are the dispatched ops
        if allocs:
            allocs.sort()
            level = peak = 0
            for _, size in allocs:
                level += size
                peak = max(peak, level)
            res.peak_memory = max(res.peak_memory, peak)
        if dynamo is not None:
            self._add_dynamo(*dynamo)
        self._add_steps(step_events, sorted(mark_times))
        if self._gpu:
            self._add_gpu(prof)
        if self.plan.keep_trace:
            res.traces.append(prof)

    def _walk(self, roots, step_events, mark_times, allocs) -> None:
        """One pass over the profiler's event tree. Recursive and appending to lists, because this runs
        for every event of the test: it is the bulk of the plugin's cost after the profiler's own."""
        res, plan, sites = self.result, self.plan, self._site_list
        with_steps = self._marks > 0
        row_of, lookup = _CPU_ROWS.get, events.lookup
        function_scope = torch._C._profiler.RecordScope.FUNCTION
        op_names: list[str] = []
        top_names: list[str] = []
        syncs: list[tuple[Site, str | None]] = []
        collectives: list = []  # top-level collective op nodes (c10d::*)
        backend: list = []  # the backends' own collective events (gloo:*, nccl:*)
        compute: list | None = [] if plan.comm else None  # top-level op nodes

        def visit(nodes, in_op, in_sync, site, rule, top):
            for node in nodes:
                name = node.name
                if name.startswith("aten::"):
                    row = row_of(name)
                elif name == "[memory]":
                    if plan.memory:
                        allocs.append((node.start_time_ns, node.extra_fields.alloc_size))
                    continue
                elif name.startswith("pytest_perf::"):
                    if name == _STEP:
                        mark_times.append(node.start_time_ns)
                    elif name == _HOST:  # ops inside count; a sync inside is none
                        visit(node.children, in_op, True, site, rule, top)
                    elif name != _START:
                        idx = int(name[len(_SITE):])
                        row = lookup(sites[idx].api, "python")
                        visit(node.children, in_op, in_sync, idx, row.rule if row else None, top)
                    continue
                elif "::" in name and not name.startswith(_NOT_OPS) and node.extra_fields.scope == function_scope:
                    row = lookup(name, "cpu_op")
                elif name.startswith(_BACKEND_EVENTS):
                    backend.append(node)
                    continue
                else:  # a range around ops (autograd engine, record_function): look inside
                    children = node.children
                    if children:
                        visit(children, in_op, in_sync, site, rule, top)
                    continue
                op_names.append(name)
                if not in_op:
                    top = name
                    top_names.append(name)
                    if with_steps:
                        step_events.append((node.start_time_ns, "ops", 1))
                    if row is not None and row.metric == "collectives":
                        collectives.append(node)
                    elif compute is not None:
                        compute.append(node)
                node_rule, node_sync = rule, in_sync
                if row is not None:
                    node_rule = rule or row.rule
                    if row.metric == events.SYNC and not in_sync:
                        node_sync = True
                        if plan.sites:
                            syncs.append((sites[site] if site >= 0 else Site("<torch>", 0, top), node_rule))
                            if with_steps:
                                step_events.append((node.start_time_ns, events.SYNC, 1))
                children = node.children
                if children:
                    visit(children, True, node_sync, site, node_rule, top)

        visit(roots, False, False, -1, None, None)
        res.op_counts.update(op_names)
        res.top_ops.update(top_names)
        res.counts["ops"] += len(top_names)
        counted = _count_collectives(collectives, backend)
        res.counts["collectives"] += len(counted)
        if with_steps:
            step_events.extend((node.start_time_ns, "collectives", 1) for node in counted)
        if compute is not None:
            self._add_comm(counted, backend or collectives, compute)
        if plan.sites:
            res.counts["syncs"] += len(syncs)
            res.hits.update((events.SYNC, where, rule) for where, rule in syncs)

    def _add_comm(self, counted, comm_nodes, compute) -> None:
        """Bytes by kind of the counted collectives, and how much of the communication time (the
        backend's worker events, else the c10d calls) overlapped top-level compute ops."""
        res = self.result
        for node in counted:
            kind = _kind(node.name)
            res.comm_counts[kind] += 1
            res.comm_kind_bytes[kind] += _send_bytes(node, kind)
        comm = _spans(comm_nodes)
        res.comm_ns += int(total(comm))
        res.comm_overlap_ns += int(total(intersect(comm, _spans(compute))))

    def _add_steps(self, step_events, marks: list[int]) -> None:
        """Bin this segment's counts into the steps that perf.step() closed; the rest after the last mark
        belongs to no step."""
        if not self._marks:
            return
        steps = [Counter(dict.fromkeys(STEP_METRICS, 0)) for _ in range(self._marks)]
        for time, metric, n in step_events:
            i = bisect.bisect_left(marks, time)
            if i < len(steps):
                steps[i][metric] += n
        for (metric, _site, _rule, step), n in self._py_hits.items():
            if step < len(steps):
                steps[step][metric] += n
        for (_site, _rule, step), n in self._py_bytes.items():
            if step < len(steps):
                steps[step]["transfer_bytes"] += n
        for s in steps:
            s["kernels"] = s["ops"]
        self.result.steps.extend(steps)

    def _add_dynamo(self, before: tuple[int, Counter], after: tuple[int, Counter]) -> None:
        res = self.result
        res.counts["graph_breaks"] += after[0] - before[0]
        if self._break_sites:
            for site in self._break_sites:
                res.hits[("graph_breaks", site, "PFL402")] += 1
        else:
            for reason, n in (after[1] - before[1]).items():
                res.hits[("graph_breaks", Site("<dynamo>", 0, f"graph break: {reason}"), "PFL402")] += n
        self._break_sites.clear()

    def _add_gpu(self, prof) -> None:  # pragma: no cover - needs a GPU; untested on the CPU CI
        """On a GPU, kernels, transfers and syncs come from the CUDA trace (perflint.trace) instead."""
        from perflint.trace import load_trace, metrics as trace_metrics

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            gpu = trace_metrics(load_trace(path))
        gpu["peak_memory"] = torch.cuda.max_memory_allocated()
        self.result.gpu.update(gpu)
        self.result.measured |= {k for k, v in gpu.items() if v is not None and k in ALL_METRICS}


# What the profiler's C++ prints on fd 2 at every start and stop (no log level silences it), and the
# warning it adds when another profiler ended our session (reported as a ProfilerConflict instead).
_CHATTER = (b"USDT:", b"disableProfiler called but no active profiling session found")


@contextmanager
def _without_profiler_chatter():
    """Send fd 2 to a temporary file for the call and pass on every line but the profiler's chatter,
    which would otherwise break pytest's progress line and repeat under every failure's stderr."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2: nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [line for line in tmp.read().splitlines(keepends=True)
                    if not any(mark in line for mark in _CHATTER)]
            if kept:
                os.write(2, b"".join(kept))


def _all_threads():
    """The profiler option that records ops on every thread of the process, not only on the one that
    started it (torch >= 2.7); None where this torch lacks it."""
    try:
        return torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
    except (AttributeError, TypeError):  # pragma: no cover - older torch
        return None


def _kind(name: str) -> str:
    return kind_of(name) or name.rsplit(":", 1)[-1].strip("_")


def _count_collectives(calls: list, backend: list) -> list:
    """Each collective once: per kind, the c10d calls, or the backend's events where it saw more (a
    collective issued below the dispatcher, or a backend that records no c10d op)."""
    by_kind: dict[str, tuple[list, list]] = {}
    for i, nodes in enumerate((calls, backend)):
        for node in nodes:
            by_kind.setdefault(_kind(node.name), ([], []))[i].append(node)
    out = []
    for c10d, own in by_kind.values():
        out.extend(own if len(own) > len(c10d) else c10d)
    return out


def _send_bytes(node, kind: str) -> int:
    """Bytes this rank passes in: the send argument's tensors (record_shapes); 0 when not recorded."""
    inputs = getattr(node.extra_fields, "inputs", None) or []
    if node.name.startswith(_BACKEND_EVENTS):
        arg = inputs[0] if inputs else None
    else:
        i = _SEND_ARG.get(kind, 0)
        arg = inputs[i] if i < len(inputs) else None
    tensors = arg if isinstance(arg, list) else [arg]
    nbytes = 0
    for t in tensors:
        sizes, dtype = getattr(t, "sizes", None), getattr(t, "dtype", None)
        if sizes is not None and dtype is not None:
            n = 1
            for d in sizes:
                n *= d
            nbytes += n * dtype.itemsize
    return nbytes


def measure(fn: Callable[[], Any], plan: Plan | None = None) -> Result:
    """Run fn once under a fresh Recorder: the simplest use, for scripts and the benchmark."""
    rec = Recorder(plan or Plan.choose(set(), everything=True))
    rec.start()
    try:
        fn()
    finally:
        rec.stop()
    return rec.result


def export_traces(result: Result, path_stem: str) -> list[str]:
    """Write each kept segment as Chrome trace JSON (`<stem>.pt.trace.json`, which Perfetto and
    TensorBoard's profiler plugin both open); returns the paths."""
    paths = []
    for i, prof in enumerate(result.traces):
        path = f"{path_stem}{'' if i == 0 else f'-{i + 1}'}.pt.trace.json"
        prof.export_chrome_trace(path)
        paths.append(path)
    return paths


def _spans(nodes) -> Spans:
    """The time the profiler nodes cover."""
    starts = [n.start_time_ns for n in nodes]
    return union(starts, [s + n.duration_time_ns for s, n in zip(starts, nodes)])
