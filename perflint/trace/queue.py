"""The launch queue: device operations launched by the host but not yet started, per stream, and how
far the CPU runs ahead of the GPU.

Queue length follows HTA's get_queue_length_time_series: +1 when a launch call starts, -1 when its
operation starts on the device (so it counts operations waiting, not running). Our mean is weighted by
time (HTA's summary averages the change points instead). The CUDA launch queue holds 1024 entries;
at that length the next launch blocks the host.

`queue_overlap` (the `min_overlap` budget) is the share of device busy time during which at least one
more operation had already been launched and was waiting: 1.0 means the CPU always kept the GPU fed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from perflint.trace import intervals
from perflint.trace.model import Trace
from perflint.trace.timeline import device_work

QUEUE_LIMIT = 1024


@dataclass
class StreamQueue:
    stream: int
    launches: int
    max: int
    mean: float
    time_full_us: float  # time at the 1024-entry limit


@dataclass
class QueueFigures:
    streams: list[StreamQueue]
    queue_overlap: float | None
    lead_median_us: float | None  # launch call start -> device start
    lead_p90_us: float | None


def queue_figures(trace: Trace, launches: dict[int, float], busy: intervals.Intervals,
                  graph_launches: frozenset[int] = frozenset()) -> QueueFigures:
    """`launches`: correlation -> start of the launch call; `busy`: union of device work;
    `graph_launches`: correlations of cudaGraphLaunch calls, whose nodes are not counted in the queue
    (as in HTA; the queue limit applies to individual launches) but do count as queued work for
    queue_overlap."""
    pending = []
    per_stream: dict[int, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    counted = set()
    leads = []
    launched_at = launches.get
    # In start order, the first operation seen of a launch is its earliest: the one the queue counts.
    for _, ts, _, stream, corr, _, _, _ in device_work(trace):  # unpacking beats 5 attribute reads
        if stream < 0:
            continue
        launched = launched_at(corr)
        if launched is None:
            continue
        if ts > launched:
            pending.append((launched, ts))
        if corr in graph_launches or corr in counted:
            continue
        counted.add(corr)
        launched_list, started_list = per_stream[stream]
        launched_list.append(launched)
        started_list.append(ts)
        lead = ts - launched
        leads.append(lead if lead > 0.0 else 0.0)
    streams = [_stream_queue(s, *times) for s, times in sorted(per_stream.items())]
    busy_us = intervals.total(busy)
    waiting = intervals.total(intervals.intersect(busy, intervals.union(pending)))
    leads.sort()
    return QueueFigures(streams, waiting / busy_us if busy_us > 0 and leads else None,
                        leads[len(leads) // 2] if leads else None,
                        leads[min(len(leads) - 1, int(len(leads) * 0.9))] if leads else None)


def _stream_queue(stream: int, launched: list[float], started: list[float]) -> StreamQueue:
    """Walks the stream's launch (+1) and start (-1) times in time order, a start before a launch at
    equal times; two sorted lists merged here rather than one sort of (time, delta) tuples."""
    launched.sort()
    started.sort()
    n = len(launched)
    i = j = 0
    length = peak = 0
    area = full = 0.0
    first = prev = started[0] if started[0] <= launched[0] else launched[0]
    while i < n or j < n:
        if j < n and (i == n or started[j] <= launched[i]):
            ts = started[j]
            j += 1
            step = -1
        else:
            ts = launched[i]
            i += 1
            step = 1
        area += length * (ts - prev)
        if length >= QUEUE_LIMIT:
            full += ts - prev
        prev = ts
        length += step
        if length > peak:
            peak = length
    span = prev - first
    return StreamQueue(stream, n, peak, area / span if span > 0 else 0.0, full)
