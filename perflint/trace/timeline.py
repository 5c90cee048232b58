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

from dataclasses import dataclass

import numpy as np

from perflint.measures import intervals
from perflint.trace.hostindex import by_thread, enclosing
from perflint.trace.model import Trace
from perflint.trace.device_columns import Work, device_work

KERNEL_WAIT_US = 30.0
HOST_WAIT, KERNEL_WAIT, OTHER = "host wait", "kernel wait", "other"
_CAUSES = (HOST_WAIT, KERNEL_WAIT, OTHER)


@dataclass
class StreamIdle:
    """One stream's idle time split by cause."""

    stream: int
    host_wait_us: float
    kernel_wait_us: float
    other_us: float


@dataclass
class IdleGap:
    """One stretch of device idle time, its cause and the host ops that ran meanwhile."""

    start_us: float  # from the first event of the trace
    dur_us: float
    cause: str
    cpu_ops: list[str]  # aten ops that ran on the host during the gap, most overlapping first


@dataclass
class TimelineFigures:
    """Device busy and idle time over the window, idle split by cause (HTA's temporal breakdown)."""

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


def timeline_figures(trace: Trace, t0: float, compute_us: float, n_gaps: int = 5) -> TimelineFigures:
    """`compute_us`: length of the union of compute kernels (from the kernel figures)."""
    work = device_work(trace)
    busy = work.busy
    busy_us = intervals.total(busy)
    span = float(busy.ends[-1] - busy.starts[0]) if len(busy.starts) else 0.0
    starts, ends = intervals.gaps(busy)
    causes = _gap_causes(work, starts, ends)
    split = np.bincount(causes, weights=ends - starts, minlength=3)
    longest = np.argsort(starts - ends, kind="stable")[:n_gaps]  # longest first, earliest on ties
    chosen = [(float(starts[k]), float(ends[k]), _CAUSES[causes[k]]) for k in longest]
    ops_during = _ops_during(trace, [(s, e) for s, e, _ in chosen])
    return TimelineFigures(
        span_us=span, busy_us=busy_us, idle_us=span - busy_us, utilisation=busy_us / span if span > 0 else None,
        compute_us=compute_us, non_compute_us=busy_us - compute_us,
        host_wait_us=float(split[0]), kernel_wait_us=float(split[1]), other_us=float(split[2]),
        streams=stream_idle(work),
        longest_gaps=[IdleGap(s - t0, e - s, c, names) for (s, e, c), names in zip(chosen, ops_during)],
    )


def _gap_causes(work: Work, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The cause (index into _CAUSES) of each idle gap, judged by the earliest launch of the operations
    starting at its end (an idle gap always ends where some operation starts)."""
    if not len(starts):
        return np.empty(0, dtype=np.intp)
    ts = work.ts
    group_start = np.flatnonzero(np.concatenate(([True], ts[1:] != ts[:-1])))  # operations starting together
    earliest_in_group = np.minimum.reduceat(np.where(np.isnan(work.launch), np.inf, work.launch), group_start)
    group = np.searchsorted(group_start, np.searchsorted(ts, ends), side="right") - 1
    earliest = earliest_in_group[group]
    host = np.isfinite(earliest) & (earliest > starts)
    return np.where(host, 0, np.where(ends - starts < KERNEL_WAIT_US, 1, 2))


def stream_idle(work: Work) -> list[StreamIdle]:
    """HTA's per-stream idle breakdown (see module docstring)."""
    order = np.argsort(work.stream, kind="stable")  # by stream, start order within
    stream, ts, end, launch = work.stream[order], work.ts[order], work.end[order], work.launch[order]
    same = stream[1:] == stream[:-1]  # pairs of consecutive operations on one stream
    gap = ts[1:] - end[:-1]
    cause = np.where(launch[1:] > end[:-1], 0, np.where(gap < KERNEL_WAIT_US, 1, 2))  # NaN > x is False
    streams, first = np.unique(stream, return_index=True)
    group = np.searchsorted(first, np.arange(1, len(stream)), side="right") - 1  # stream of each pair
    cells = np.bincount(group[same] * 3 + cause[same], weights=gap[same], minlength=3 * len(streams))
    return [StreamIdle(int(s), *map(float, cells[3 * k: 3 * k + 3])) for k, s in enumerate(streams)]


def _ops_during(trace: Trace, gaps: list[tuple[float, float]], per_gap: int = 3) -> list[list[str]]:
    """Per gap, the aten ops overlapping it: those enclosing its start on some thread, then those
    starting inside it; longest overlap first."""
    threads = by_thread(trace)
    queries = [(tid, s, s) for s, _ in gaps for tid in threads]
    around = enclosing(trace, queries)
    result = []
    for k, (s, e) in enumerate(gaps):
        hits = [op for chain in around[k * len(threads):(k + 1) * len(threads)] for op in chain]
        for thread in threads.values():
            hits += thread.started_between(s, e)
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
