"""Nesting of host events: which CPU ops and Python frames enclose a runtime call, and which ops are
top-level. One sweep per thread over events sorted by start (longest first on ties) with a stack,
done once per trace and cached."""

from __future__ import annotations

import bisect
from collections import defaultdict
from operator import itemgetter
from typing import NamedTuple, Sequence

from perflint.trace.model import HostOp, Trace


_TS = itemgetter(1)


def _start_longest_first(op: HostOp) -> tuple[float, float]:
    return op.ts, -op.dur


def by_thread(trace: Trace) -> dict[object, list[HostOp]]:
    """Host events per thread, sorted by start, longest first on ties (so parents precede children)."""
    threads = trace.cache.get("by_thread")
    if threads is None:
        ops = sorted(trace.host_ops, key=_TS)  # linear: Kineto writes events nearly in start order
        if len(set(map(_TS, ops))) < len(ops):  # equal starts (rare): the longer one is the parent
            ops.sort(key=_start_longest_first)
        threads = defaultdict(list)
        for op in ops:
            threads[op.tid].append(op)
        trace.cache["by_thread"] = threads
    return threads


def top_level_ops(trace: Trace) -> int:
    """aten ops not nested in another aten op: what the plugin calls dispatched compute ops."""
    count = 0
    for ops in by_thread(trace).values():
        open_end = float("-inf")
        for _, ts, dur, _, kind, _ in ops:
            if kind != "op":
                continue
            end = ts + dur
            if ts >= open_end:
                count += 1
                open_end = end
            elif end > open_end:  # overlaps without nesting (clock rounding): still inside
                open_end = end
    return count


class _Nesting(NamedTuple):
    """One thread's events (by_thread order), their starts, and each one's parent: the innermost
    earlier event still open when it starts (-1: none). Walking parents from event i gives the stack
    a sweep would hold after pushing i, so any number of queries cost one sweep."""

    ops: list[HostOp]
    starts: list[float]
    parent: list[int]


def _nesting(trace: Trace) -> dict[object, _Nesting]:
    found = trace.cache.get("nesting")
    if found is None:
        found = {}
        for tid, ops in by_thread(trace).items():
            parent = [-1] * len(ops)
            starts = list(map(_TS, ops))
            ends = [ts + dur for _, ts, dur, _, _, _ in ops]
            stack: list[int] = []
            for i, ts in enumerate(starts):
                while stack and ends[stack[-1]] <= ts:
                    stack.pop()
                if stack:
                    parent[i] = stack[-1]
                stack.append(i)
            found[tid] = _Nesting(ops, starts, parent)
        trace.cache["nesting"] = found
    return found


def enclosing(trace: Trace, queries: Sequence[tuple[object, float, float]]) -> list[list[HostOp]]:
    """For each (tid, start, end): the host events on that thread that contain it, outermost first
    (among the events started by `start` and still open then, those ending at or after `end`)."""
    result: list[list[HostOp]] = []
    if not queries:
        return result
    threads = _nesting(trace)
    for tid, start, end in queries:
        nest = threads.get(tid)
        chain: list[HostOp] = []
        if nest is not None:
            ops, parent = nest.ops, nest.parent
            i = bisect.bisect_right(nest.starts, start) - 1
            while i >= 0:
                op = ops[i]
                if op.ts + op.dur >= end:
                    chain.append(op)
                i = parent[i]
            chain.reverse()
        result.append(chain)
    return result
