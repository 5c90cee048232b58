"""One segment's profiler event tree -> counts, in one pass.

How an event becomes a metric is decided by `perflint.measures.events` (the one table); this module
only applies it: top-level ops are `ops` (and `kernels` on a CPU), ops the table maps to `syncs` count
once per outermost occurrence (`is_nonzero > item > _local_scalar_dense` is one sync) and are charged
to the source line of the `pytest_perf::site#N` range around them, collectives count once each, and
`[memory]` events give the peak. The plugin's own ranges are named in `pytest_perf.profiler`.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field

import torch

from perflint.measures import events
from perflint.measures.intervals import Spans, intersect, total, union
from perflint.measures.metrics import PER_STEP
from pytest_perf.attribution import Site
from pytest_perf.plan import Plan
from pytest_perf.profiler import HOST, SITE, START, STEP
from pytest_perf.python_counts import PythonCounts
from pytest_perf.result import Result

# Ranges that contain ops but are not ops themselves (the autograd engine's per-node ranges).
_NOT_OPS = ("autograd::", "torch::autograd::", "pytest_perf::")
_CPU_ROWS = {e.name: e for e in events.EVENTS if e.source == "cpu_op" and not e.name.endswith("*")}
# Which argument of a c10d op (and of its backend event) holds what this rank sends.
_SEND_ARG = {"all_reduce": 0, "broadcast": 0, "all_gather": 1, "reduce_scatter": 1, "all_to_all": 1}


@dataclass
class _Seen:
    """What one walk collected, before it is added to the Result."""

    op_names: list = field(default_factory=list)
    top_names: list = field(default_factory=list)
    syncs: list = field(default_factory=list)  # (Site, rule)
    collectives: list = field(default_factory=list)  # top-level collective op nodes (c10d::*)
    backend: list = field(default_factory=list)  # the backends' own collective events (gloo:*, nccl:*)
    compute: list = field(default_factory=list)  # top-level op nodes, with Plan.comm
    step_events: list = field(default_factory=list)  # (time, metric, n): profiler counts to bin by step
    mark_times: list = field(default_factory=list)
    allocs: list = field(default_factory=list)  # (time, bytes)


def add_segment(roots, plan: Plan, counts: PythonCounts, result: Result) -> None:
    """Add one segment (its event tree and the Python-level counts made while it ran) to `result`."""
    result.segments += 1
    seen = _walk(roots, plan, counts.sites, with_steps=counts.step > 0)
    result.op_counts.update(seen.op_names)
    result.top_ops.update(seen.top_names)
    result.counts["ops"] += len(seen.top_names)
    counted = _count_collectives(seen.collectives, seen.backend)
    result.counts[events.COLLECTIVES] += len(counted)
    if counts.step:
        seen.step_events.extend((node.start_time_ns, events.COLLECTIVES, 1) for node in counted)
    if plan.comm:
        _add_comm(result, counted, seen.backend or seen.collectives, seen.compute)
    if plan.sites:
        result.counts[events.SYNC] += len(seen.syncs)
        result.hits.update((events.SYNC, where, rule) for where, rule in seen.syncs)
    for (metric, site, rule, _step), n in counts.hits.items():
        result.counts[metric] += n
        result.hits[(metric, site, rule)] += n
    for (site, rule, _step), n in counts.bytes.items():
        result.counts["transfer_bytes"] += n
        result.hits[("transfer_bytes", site, rule)] += n
    result.counts["kernels"] = result.counts["ops"]  # on a CPU the kernels are the dispatched ops
    if seen.allocs:
        result.peak_memory = max(result.peak_memory, _peak(seen.allocs))
    _add_steps(result, counts, seen.step_events, sorted(seen.mark_times))


def _walk(roots, plan: Plan, sites: list[Site], with_steps: bool) -> _Seen:
    """One pass over the profiler's event tree. Recursive and appending to lists, because this runs
    for every event of the test: it is the bulk of the plugin's cost after the profiler's own."""
    seen = _Seen()
    row_of, lookup = _CPU_ROWS.get, events.lookup
    function_scope = torch._C._profiler.RecordScope.FUNCTION
    op_names, top_names, syncs, step_events = seen.op_names, seen.top_names, seen.syncs, seen.step_events
    compute = seen.compute if plan.comm else None

    def visit(nodes, in_op, in_sync, site, rule, top):
        for node in nodes:
            name = node.name
            if name.startswith("aten::"):
                row = row_of(name)
            elif name == "[memory]":
                if plan.memory:
                    seen.allocs.append((node.start_time_ns, node.extra_fields.alloc_size))
                continue
            elif name.startswith("pytest_perf::"):
                if name == STEP:
                    seen.mark_times.append(node.start_time_ns)
                elif name == HOST:  # ops inside count; a sync inside is none
                    visit(node.children, in_op, True, site, rule, top)
                elif name != START:
                    idx = int(name[len(SITE):])
                    row = lookup(sites[idx].api, "python")
                    visit(node.children, in_op, in_sync, idx, row.rule if row else None, top)
                continue
            elif "::" in name and not name.startswith(_NOT_OPS) and node.extra_fields.scope == function_scope:
                row = lookup(name, "cpu_op")
            elif name.startswith(events.COLLECTIVE_BACKENDS):
                seen.backend.append(node)
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
                if row is not None and row.metric == events.COLLECTIVES:
                    seen.collectives.append(node)
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
    return seen


def _peak(allocs: list[tuple[int, int]]) -> int:
    """The highest level the allocations and frees reach above the level at the start."""
    level = peak = 0
    for _, size in sorted(allocs):
        level += size
        peak = max(peak, level)
    return peak


def _add_steps(result: Result, counts: PythonCounts, step_events, marks: list[int]) -> None:
    """Bin this segment's counts into the steps that perf.step() closed; the rest after the last mark
    belongs to no step."""
    if not counts.step:
        return
    steps = [Counter(dict.fromkeys(PER_STEP, 0)) for _ in range(counts.step)]
    for time, metric, n in step_events:
        i = bisect.bisect_left(marks, time)
        if i < len(steps):
            steps[i][metric] += n
    for (metric, _site, _rule, step), n in counts.hits.items():
        if step < len(steps):
            steps[step][metric] += n
    for (_site, _rule, step), n in counts.bytes.items():
        if step < len(steps):
            steps[step]["transfer_bytes"] += n
    for s in steps:
        s["kernels"] = s["ops"]
    result.steps.extend(steps)


def _add_comm(result: Result, counted, comm_nodes, compute) -> None:
    """Bytes by kind of the counted collectives, and how much of the communication time (the
    backend's worker events, else the c10d calls) overlapped top-level compute ops."""
    for node in counted:
        kind = _kind(node.name)
        result.comm_counts[kind] += 1
        result.comm_kind_bytes[kind] += _send_bytes(node, kind)
    comm = _spans(comm_nodes)
    result.comm_ns += int(total(comm))
    result.comm_overlap_ns += int(total(intersect(comm, _spans(compute))))


def _kind(name: str) -> str:
    from perflint.scaling import kind_of  # only where collectives ran: the scaling model is not the plugin's

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
    if node.name.startswith(events.COLLECTIVE_BACKENDS):
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


def _spans(nodes) -> Spans:
    """The time the profiler nodes cover."""
    starts = [n.start_time_ns for n in nodes]
    return union(starts, [s + n.duration_time_ns for s, n in zip(starts, nodes)])
