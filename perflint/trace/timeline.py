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
import sys
from collections import defaultdict
from dataclasses import dataclass

from perflint.trace import intervals
from perflint.trace.hostindex import by_thread, enclosing
from perflint.trace.model import DeviceOp, Trace

KERNEL_WAIT_US = 30.0
HOST_WAIT, KERNEL_WAIT, OTHER = "host wait", "kernel wait", "other"


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


def timeline_figures(trace: Trace, t0: float, launch_ts: dict[int, float], busy: intervals.Intervals,
                     compute_us: float, n_gaps: int = 5) -> TimelineFigures:
    """`busy`: union of device work (kernels, copies, memsets); `compute_us`: length of the union of
    compute kernels (from the kernel figures)."""
    work = sorted((d for d in trace.device if d.kind != "sync"), key=lambda d: d.ts)
    busy_us = intervals.total(busy)
    span = busy[-1][1] - busy[0][0] if busy else 0.0
    split = {HOST_WAIT: 0.0, KERNEL_WAIT: 0.0, OTHER: 0.0}
    starts = [d.ts for d in work]
    classified = []
    for start, end in intervals.gaps(busy):
        cause = _gap_cause(work, starts, start, end, launch_ts)
        split[cause] += end - start
        classified.append((start, end, cause))
    classified.sort(key=lambda g: g[0] - g[1])
    longest = classified[:n_gaps]
    ops_during = _ops_during(trace, [(s, e) for s, e, _ in longest])
    return TimelineFigures(
        span_us=span, busy_us=busy_us, idle_us=span - busy_us, utilisation=busy_us / span if span > 0 else None,
        compute_us=compute_us, non_compute_us=busy_us - compute_us,
        host_wait_us=split[HOST_WAIT], kernel_wait_us=split[KERNEL_WAIT], other_us=split[OTHER],
        streams=stream_idle(work, launch_ts),
        longest_gaps=[IdleGap(s - t0, e - s, c, names) for (s, e, c), names in zip(longest, ops_during)],
    )


def _gap_cause(work: list[DeviceOp], starts: list[float], start: float, end: float,
               launch_ts: dict[int, float]) -> str:
    k = bisect.bisect_left(starts, end)
    launches = []
    while k < len(work) and work[k].ts == end:
        launches.append(launch_ts.get(work[k].correlation))
        k += 1
    known = [t for t in launches if t is not None]
    if known and min(known) > start:
        return HOST_WAIT
    return KERNEL_WAIT if end - start < KERNEL_WAIT_US else OTHER


def stream_idle(work: list[DeviceOp], launch_ts: dict[int, float]) -> list[StreamIdle]:
    """HTA's per-stream idle breakdown (see module docstring); `work` is sorted by start."""
    by_stream: dict[int, list[DeviceOp]] = defaultdict(list)
    for d in work:
        by_stream[d.stream].append(d)
    rows = []
    for stream, ops in sorted(by_stream.items()):
        acc = {HOST_WAIT: 0.0, KERNEL_WAIT: 0.0, OTHER: 0.0}
        prev_end = ops[0].ts + ops[0].dur
        for op in ops[1:]:
            gap = op.ts - prev_end
            launched = launch_ts.get(op.correlation)
            if launched is not None and launched > prev_end:
                acc[HOST_WAIT] += gap
            elif gap < KERNEL_WAIT_US:
                acc[KERNEL_WAIT] += gap
            else:
                acc[OTHER] += gap
            prev_end = op.ts + op.dur
        rows.append(StreamIdle(stream, acc[HOST_WAIT], acc[KERNEL_WAIT], acc[OTHER]))
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
            i = bisect.bisect_left(ops, s, key=_start) if _HAS_KEY else _bisect(ops, s)
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


def _start(op) -> float:
    return op.ts


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
