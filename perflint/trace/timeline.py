"""GPU utilisation and idle time, idle split by cause, and the longest idle gaps with the CPU ops that
ran during them.

Definitions (HTA 0.5.0 names in brackets):
- busy: union of kernel, memcpy and memset intervals on all streams; span: first start to last end
  [kernel_time]; idle = span - busy [idle_time]; compute = union of compute kernels [compute_time].
  HTA also counts `cuda_sync` records (a stream waiting on the host) as device work; we do not.
- a device idle gap is classified by the first operation that ends it: *host wait* when the CPU launched
  it after the gap began (the GPU starved for work), *kernel wait* when it was already queued and the gap
  is shorter than 30 us (launch latency between back-to-back kernels), *other* otherwise (waiting on
  another stream, an event, a collective peer).
- per stream the same three categories follow HTA's get_idle_time_breakdown exactly: the gap between
  consecutive operations in start order, host wait when the operation's launch call started after the
  previous one ended, kernel wait when the gap is below 30 (HTA's consecutive_kernel_delay, in the
  trace's microseconds).
"""

from __future__ import annotations

import bisect
import heapq
import sys
from collections import defaultdict
from dataclasses import dataclass
from operator import attrgetter

from perflint.trace import intervals
from perflint.trace.hostindex import by_thread, enclosing
from perflint.trace.model import DeviceOp, Trace

KERNEL_WAIT_US = 30.0
HOST_WAIT, KERNEL_WAIT, OTHER = "host wait", "kernel wait", "other"
_START = attrgetter("ts")


@dataclass
class StreamIdle:
    stream: int
    host_wait_us: float
    kernel_wait_us: float
    other_us: float


@dataclass
class IdleGap:
    start_us: float  # from the first event of the trace
    dur_us: float
    cause: str
    cpu_ops: list[str]  # aten ops that ran on the host during the gap, most overlapping first


@dataclass
class TimelineFigures:
    span_us: float
    busy_us: float
    idle_us: float
    utilisation: float | None
    compute_us: float
    non_compute_us: float
    host_wait_us: float
    kernel_wait_us: float
    other_us: float
    streams: list[StreamIdle]
    longest_gaps: list[IdleGap]


def device_work(trace: Trace) -> list[DeviceOp]:
    """Kernels, copies and memsets (not `cuda_sync` records) in start order, file order on ties;
    sorted once per trace and shared by every figure that sweeps the device timeline."""
    work = trace.cache.get("work")
    if work is None:
        work = trace.cache["work"] = sorted((d for d in trace.device if d.kind != "sync"), key=_START)
    return work


def timeline_figures(trace: Trace, t0: float, launch_ts: dict[int, float], busy: intervals.Intervals,
                     compute_us: float, n_gaps: int = 5) -> TimelineFigures:
    """`busy`: union of device work (kernels, copies, memsets); `compute_us`: length of the union of
    compute kernels (from the kernel figures)."""
    work = device_work(trace)
    busy_us = intervals.total(busy)
    span = busy[-1][1] - busy[0][0] if busy else 0.0
    split = {HOST_WAIT: 0.0, KERNEL_WAIT: 0.0, OTHER: 0.0}
    classified = _gap_causes(work, intervals.gaps(busy), launch_ts)
    for start, end, cause in classified:
        split[cause] += end - start
    longest = heapq.nsmallest(n_gaps, classified, key=lambda g: g[0] - g[1])  # = sorted(...)[:n_gaps]
    ops_during = _ops_during(trace, [(s, e) for s, e, _ in longest])
    return TimelineFigures(
        span_us=span, busy_us=busy_us, idle_us=span - busy_us, utilisation=busy_us / span if span > 0 else None,
        compute_us=compute_us, non_compute_us=busy_us - compute_us,
        host_wait_us=split[HOST_WAIT], kernel_wait_us=split[KERNEL_WAIT], other_us=split[OTHER],
        streams=stream_idle(work, launch_ts),
        longest_gaps=[IdleGap(s - t0, e - s, c, names) for (s, e, c), names in zip(longest, ops_during)],
    )


def _gap_causes(work: list[DeviceOp], gaps: intervals.Intervals,
                launch_ts: dict[int, float]) -> list[tuple[float, float, str]]:
    """(start, end, cause) per idle gap, judged by the earliest launch of the operations starting at
    its end (one loop rather than a call per gap: a busy trace has tens of thousands of gaps)."""
    starts = [d.ts for d in work]
    n = len(work)
    launched_at = launch_ts.get
    bisect_left = bisect.bisect_left
    out = []
    for start, end in gaps:
        k = bisect_left(starts, end)
        earliest = None
        while k < n and starts[k] == end:
            t = launched_at(work[k].correlation)
            if t is not None and (earliest is None or t < earliest):
                earliest = t
            k += 1
        if earliest is not None and earliest > start:
            out.append((start, end, HOST_WAIT))
        else:
            out.append((start, end, KERNEL_WAIT if end - start < KERNEL_WAIT_US else OTHER))
    return out


def stream_idle(work: list[DeviceOp], launch_ts: dict[int, float]) -> list[StreamIdle]:
    """HTA's per-stream idle breakdown (see module docstring); `work` is sorted by start."""
    by_stream: dict[int, list[DeviceOp]] = defaultdict(list)
    for d in work:
        by_stream[d.stream].append(d)
    launched_at = launch_ts.get
    rows = []
    for stream, ops in sorted(by_stream.items()):
        host = kernel = other = 0.0
        prev_end = ops[0].ts + ops[0].dur
        for _, ts, dur, _, corr, _, _, _ in ops[1:]:
            gap = ts - prev_end
            launched = launched_at(corr)
            if launched is not None and launched > prev_end:
                host += gap
            elif gap < KERNEL_WAIT_US:
                kernel += gap
            else:
                other += gap
            prev_end = ts + dur
        rows.append(StreamIdle(stream, host, kernel, other))
    return rows


def _ops_during(trace: Trace, gaps: list[tuple[float, float]], per_gap: int = 3) -> list[list[str]]:
    """Per gap, the aten ops overlapping it: those enclosing its start on some thread, then those
    starting inside it; longest overlap first."""
    threads = by_thread(trace)
    queries = [(tid, s, s) for s, _ in gaps for tid in threads]
    around = enclosing(trace, queries)
    result = []
    for k, (s, e) in enumerate(gaps):
        hits = [op for chain in around[k * len(threads):(k + 1) * len(threads)] for op in chain]
        for ops in threads.values():
            i = bisect.bisect_left(ops, s, key=_START) if _HAS_KEY else _bisect(ops, s)
            while i < len(ops) and ops[i].ts < e:
                hits.append(ops[i])
                i += 1
        ranked = sorted((op for op in hits if op.kind == "op"),
                        key=lambda op: (-(min(op.ts + op.dur, e) - max(op.ts, s)), op.dur))
        names: list[str] = []
        for op in ranked:
            if op.name not in names:
                names.append(op.name)
            if len(names) == per_gap:
                break
        result.append(names)
    return result


_HAS_KEY = sys.version_info >= (3, 10)


def _bisect(ops, ts):  # pragma: no cover - only before Python 3.10
    lo, hi = 0, len(ops)
    while lo < hi:
        mid = (lo + hi) // 2
        if ops[mid].ts < ts:
            lo = mid + 1
        else:
            hi = mid
    return lo
