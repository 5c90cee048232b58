"""Nesting of host events: which CPU ops and Python frames enclose a runtime call, and which ops are
top-level. One sweep per thread over events sorted by start (longest first on ties) with a stack."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from perflint.trace.model import HostOp, Trace


def by_thread(trace: Trace) -> dict[object, list[HostOp]]:
    """Host events per thread, sorted by start, longest first on ties (so parents precede children)."""
    threads = trace.cache.get("by_thread")
    if threads is None:
        threads = defaultdict(list)
        for op in sorted(trace.host_ops, key=lambda o: (o.ts, -o.dur)):
            threads[op.tid].append(op)
        trace.cache["by_thread"] = threads
    return threads


def top_level_ops(trace: Trace) -> int:
    """aten ops not nested in another aten op: what the plugin calls dispatched compute ops."""
    count = 0
    for ops in by_thread(trace).values():
        open_end = float("-inf")
        for op in ops:
            if op.kind != "op":
                continue
            if op.ts >= open_end:
                count += 1
                open_end = op.ts + op.dur
            elif op.ts + op.dur > open_end:  # overlaps without nesting (clock rounding): still inside
                open_end = op.ts + op.dur
    return count


def enclosing(trace: Trace, queries: Sequence[tuple[object, float, float]]) -> list[list[HostOp]]:
    """For each (tid, start, end): the host events on that thread that contain it, outermost first."""
    result: list[list[HostOp]] = [[] for _ in queries]
    wanted: dict[object, list[int]] = defaultdict(list)
    for k, (tid, _, _) in enumerate(queries):
        wanted[tid].append(k)
    if not wanted:
        return result
    threads = by_thread(trace)
    for tid, ks in wanted.items():
        ops = threads.get(tid, [])
        ks.sort(key=lambda k: queries[k][1])
        stack: list[HostOp] = []
        i = 0
        for k in ks:
            _, start, end = queries[k]
            while i < len(ops) and ops[i].ts <= start:
                op = ops[i]
                while stack and stack[-1].ts + stack[-1].dur <= op.ts:
                    stack.pop()
                stack.append(op)
                i += 1
            result[k] = [op for op in stack if op.ts + op.dur >= end]
    return result
