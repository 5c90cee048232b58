"""Host events per thread, as arrays, for the questions the figures ask of them: which CPU ops and
Python frames enclose a runtime call, which ops start inside an idle gap, and which ops are top-level.
Built once per trace and cached; each question is then a binary search and a short array scan."""

from __future__ import annotations

from operator import itemgetter
from typing import NamedTuple, Sequence

import numpy as np

from perflint.trace.columns import times
from perflint.trace.model import HostOp, Trace

_TID, _KIND = itemgetter(3), itemgetter(4)


class Thread(NamedTuple):
    """One thread's host events sorted by start, longest first on ties (so parents precede children)."""

    ops: list[HostOp]
    starts: np.ndarray
    ends: np.ndarray
    reach: np.ndarray  # running maximum of `ends`: no event before index j ends after reach[j - 1]
    is_op: np.ndarray  # an aten op (not an annotation or a Python frame)

    def started_between(self, start: float, end: float) -> list[HostOp]:
        """The events starting in [start, end)."""
        lo, hi = np.searchsorted(self.starts, (start, end))
        return self.ops[lo:hi]


def by_thread(trace: Trace) -> dict[object, Thread]:
    threads = trace.cache.get("threads")
    if threads is None:
        threads = trace.cache["threads"] = _threads(trace.host_ops, *times(trace, "host_ops"))
    return threads


def _threads(host_ops: list[HostOp], ts: np.ndarray, dur: np.ndarray) -> dict[object, Thread]:
    n = len(host_ops)
    tid = list(map(_TID, host_ops))
    tids = {t: k for k, t in enumerate(dict.fromkeys(tid))}
    tid_ids = np.fromiter(map(tids.__getitem__, tid), np.intp, n)
    order = np.argsort(ts, kind="stable")  # linear: Kineto writes events nearly in start order
    if np.any(ts[order[1:]] == ts[order[:-1]]):  # equal starts: the longer event is the parent
        order = np.lexsort((-dur, ts))
    order = order[np.argsort(tid_ids[order], kind="stable")]
    bounds = np.searchsorted(tid_ids[order], np.arange(len(tids) + 1))
    ends, is_op = ts + dur, np.fromiter(map("op".__eq__, map(_KIND, host_ops)), bool, n)
    threads = {}
    for t, k in tids.items():
        rows = order[bounds[k]:bounds[k + 1]]
        threads[t] = Thread(list(map(host_ops.__getitem__, rows.tolist())), ts[rows], ends[rows],
                            np.maximum.accumulate(ends[rows]), is_op[rows])
    return threads


def has_stacks(trace: Trace) -> bool:
    """The trace places host events in the code: Python frames (with_stack=True) or legacy call stacks."""
    return _flags(trace)[0]


def has_inputs(trace: Trace) -> bool:
    """Some op carries record_shapes' Input Dims (or with_flops' flops)."""
    return _flags(trace)[1]


def _flags(trace: Trace) -> tuple[bool, bool]:
    found = trace.cache.get("flags")
    if found is None:
        stacks = inputs = False
        for h in trace.host_ops:
            stacks = stacks or h.kind == "python" or h.stack is not None
            inputs = inputs or h.inputs is not None
            if stacks and inputs:
                break
        found = trace.cache["flags"] = (stacks, inputs)
    return found


def top_level_ops(trace: Trace) -> int:
    """aten ops not nested in another aten op (what the plugin calls dispatched compute ops): those
    starting at or after the end of every earlier op on their thread."""
    count = 0
    for thread in by_thread(trace).values():
        starts, ends = thread.starts[thread.is_op], thread.ends[thread.is_op]
        if len(starts):
            count += 1 + int(np.count_nonzero(starts[1:] >= np.maximum.accumulate(ends)[:-1]))
    return count


def enclosing(trace: Trace, queries: Sequence[tuple[object, float, float]]) -> list[list[HostOp]]:
    """For each (tid, start, end): the host events on that thread that contain it (started by `start`,
    ending at or after `end`), outermost first."""
    threads = by_thread(trace)
    result: list[list[HostOp]] = []
    for tid, start, end in queries:
        thread = threads.get(tid)
        if thread is None:
            result.append([])
            continue
        last = int(np.searchsorted(thread.starts, start, side="right"))  # events started by `start`
        first = int(np.searchsorted(thread.reach[:last], end))  # none before this one lasts until `end`
        ops = thread.ops
        result.append([ops[first + j] for j in np.flatnonzero(thread.ends[first:last] >= end).tolist()])
    return result
