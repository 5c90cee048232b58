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
    changes: dict[int, list[tuple[float, int]]] = defaultdict(list)
    pending = []
    first: dict[int, float] = {}  # launch -> start of its (first) op
    stream_of: dict[int, int] = {}
    for d in trace.device:
        launched = launches.get(d.correlation)
        if d.kind == "sync" or d.stream < 0 or launched is None:
            continue
        if d.ts > launched:
            pending.append((launched, d.ts))
        if d.correlation in graph_launches:
            continue
        if d.correlation not in first or d.ts < first[d.correlation]:
            first[d.correlation] = d.ts
            stream_of[d.correlation] = d.stream
    leads = []
    for corr, start in first.items():
        changes[stream_of[corr]] += [(launches[corr], 1), (start, -1)]
        leads.append(max(0.0, start - launches[corr]))
    streams = [_stream_queue(s, ev) for s, ev in sorted(changes.items())]
    busy_us = intervals.total(busy)
    waiting = intervals.total(intervals.intersect(busy, intervals.union(pending)))
    leads.sort()
    return QueueFigures(streams, waiting / busy_us if busy_us > 0 and leads else None,
                        leads[len(leads) // 2] if leads else None,
                        leads[min(len(leads) - 1, int(len(leads) * 0.9))] if leads else None)


def _stream_queue(stream: int, events: list[tuple[float, int]]) -> StreamQueue:
    events.sort()  # at equal times a start (-1) sorts before a launch (+1)
    length = peak = 0
    area = full = 0.0
    prev = events[0][0]
    for ts, delta in events:
        area += length * (ts - prev)
        if length >= QUEUE_LIMIT:
            full += ts - prev
        prev = ts
        length += delta
        peak = max(peak, length)
    span = events[-1][0] - events[0][0]
    return StreamQueue(stream, len(events) // 2, peak, area / span if span > 0 else 0.0, full)
