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

from dataclasses import dataclass

import numpy as np

from perflint.measures import intervals
from perflint.trace.model import Trace
from perflint.trace.device_columns import device_work

QUEUE_LIMIT = 1024


@dataclass
class StreamQueue:
    """Launch-queue depth on one stream."""

    stream: int
    launches: int
    max: int
    mean: float
    time_full_us: float  # time at the 1024-entry limit


@dataclass
class QueueFigures:
    """How far the host runs ahead of the device (HTA's queue length and lead time)."""

    streams: list[StreamQueue]
    queue_overlap: float | None
    lead_median_us: float | None  # launch call start -> device start
    lead_p90_us: float | None


def queue_figures(trace: Trace) -> QueueFigures:
    """Operations launched by cudaGraphLaunch are not counted in the queue (as in HTA; the queue limit
    applies to individual launches) but do count as queued work for queue_overlap."""
    work = device_work(trace)
    known = (work.stream >= 0) & ~np.isnan(work.launch)
    ts, launched = work.ts[known], work.launch[known]
    waiting_spans = ts > launched
    waiting = intervals.total(intervals.intersect(
        work.busy, intervals.union(launched[waiting_spans], ts[waiting_spans])))
    # In start order, the first operation seen of a launch is its earliest: the one the queue counts.
    counted = np.flatnonzero(known & ~work.graph)
    counted = counted[np.unique(work.corr[counted], return_index=True)[1]]
    counted.sort()
    stream, ts, launched = work.stream[counted], work.ts[counted], work.launch[counted]
    # return_index: np.unique without it imports numpy.ma (~10 ms) to check for a masked array
    streams = [_stream_queue(int(s), launched[stream == s], ts[stream == s])
               for s in np.unique(stream, return_index=True)[0]]
    leads = np.sort(np.maximum(ts - launched, 0.0))
    n = len(leads)
    busy_us = intervals.total(work.busy)
    return QueueFigures(streams, waiting / busy_us if busy_us > 0 and n else None,
                        float(leads[n // 2]) if n else None, float(leads[min(n - 1, int(n * 0.9))]) if n else None)


def _stream_queue(stream: int, launched: np.ndarray, started: np.ndarray) -> StreamQueue:
    """The queue length over time: +1 at each launch, -1 at each start, a start before a launch at
    equal times."""
    times = np.concatenate((started, launched))
    step = np.concatenate((-np.ones(len(started), dtype=np.int64), np.ones(len(launched), dtype=np.int64)))
    order = np.lexsort((step, times))
    times = times[order]
    length = np.cumsum(step[order])
    before, elapsed = length[:-1], np.diff(times)  # the length held during each interval between events
    span = float(times[-1] - times[0])
    return StreamQueue(stream, len(launched), max(int(length.max()), 0),
                       float(np.sum(before * elapsed)) / span if span > 0 else 0.0,
                       float(np.sum(elapsed[before >= QUEUE_LIMIT])))
