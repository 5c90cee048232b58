"""Interval arithmetic on (start, end) pairs: the one tool behind busy time, overlap and idle gaps."""

from __future__ import annotations

from typing import Iterable

Intervals = list[tuple[float, float]]


def union(spans: Iterable[tuple[float, float]]) -> Intervals:
    """Sorted, disjoint intervals covering the same time as `spans` (touching intervals merge).
    Spans already in start order (the usual case) sort in linear time."""
    ordered = iter(sorted(spans))
    first = next(ordered, None)
    if first is None:
        return []
    merged: Intervals = []
    add = merged.append
    cur_start, cur_end = first
    for start, end in ordered:
        if start > cur_end:
            add((cur_start, cur_end))
            cur_start, cur_end = start, end
        elif end > cur_end:
            cur_end = end
    add((cur_start, cur_end))
    return merged


def total(intervals: Intervals) -> float:
    return sum([end - start for start, end in intervals])


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """Intersection of two unions (each sorted and disjoint)."""
    out: Intervals = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        a0, a1 = a[i]
        b0, b1 = b[j]
        start = a0 if a0 > b0 else b0
        end = a1 if a1 < b1 else b1
        if start < end:
            out.append((start, end))
        if a1 < b1:
            i += 1
        else:
            j += 1
    return out


def gaps(intervals: Intervals) -> Intervals:
    """The holes between consecutive intervals of a union."""
    return [(intervals[k][1], intervals[k + 1][0]) for k in range(len(intervals) - 1)]
