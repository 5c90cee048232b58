"""The device timeline as numpy columns: every kernel, copy and memset (not `cuda_sync` records) with its
class, stream, correlation and the start of the host call that launched it. Built once per trace and
shared by every figure that sweeps the device timeline (busy time, idle gaps, launch queue, kernel
classes), which then run as array operations instead of Python loops over 10^4-10^6 tuples."""

from __future__ import annotations

import functools
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from perflint.measures import intervals
from perflint.trace.columns import times
from perflint.trace.model import DeviceOp, Trace
from perflint.trace.names import (CLASSES, COLLECTIVE_OPS, COMMUNICATION, COMPUTE, class_of, host_names,
                                  kernel_kind, launch_calls)

_FIELDS = ("name", "ts", "dur", "stream", "correlation", "kind")
_NAME, _TS, _DUR, _STREAM, _CORR, _KIND = map(attrgetter, _FIELDS)


class Work(NamedTuple):
    """Rows in start order, file order on ties (`file_pos` maps a row to its place in `ops`)."""

    ops: list[DeviceOp]  # file order
    file_pos: np.ndarray
    ts: np.ndarray
    dur: np.ndarray  # as recorded: end - ts loses digits on large timestamps
    end: np.ndarray
    stream: np.ndarray
    corr: np.ndarray
    launch: np.ndarray  # start of the launch call; NaN when the trace does not hold it
    graph: np.ndarray  # launched by cudaGraphLaunch (one call, many nodes)
    cls: np.ndarray  # index into names.CLASSES
    name: np.ndarray  # index into `names`
    names: list[str]
    busy: intervals.Spans  # union of all rows


def device_work(trace: Trace) -> Work:
    found = trace.cache.get("work")
    if found is None:
        found = trace.cache["work"] = _build(trace)
    return found


def _build(trace: Trace) -> Work:
    ops = [d for d in trace.device if d.kind != "sync"]
    n = len(ops)
    names = list(map(_NAME, ops))
    index = {name: k for k, name in enumerate(dict.fromkeys(names))}  # in order of first appearance
    cls = np.fromiter(map(_class_index, names, map(_KIND, ops)), np.int8, n)
    _collective_launches(trace, ops, cls)
    if n == len(trace.device):  # no cuda_sync records: the shared columns are these rows'
        ts, dur = times(trace, "device")
    else:
        ts, dur = np.fromiter(map(_TS, ops), float, n), np.fromiter(map(_DUR, ops), float, n)
    order = np.argsort(ts, kind="stable")
    ts, dur, end = ts[order], dur[order], (ts + dur)[order]
    corr = np.fromiter(map(_CORR, ops), np.int64, n)[order]
    launch_corr, launch_ts, graph_corr = _launches(trace)
    return Work(
        ops=ops, file_pos=order, ts=ts, dur=dur, end=end, stream=np.fromiter(map(_STREAM, ops), np.int64, n)[order],
        corr=corr, launch=_lookup(launch_corr, launch_ts, corr), graph=_member(corr, graph_corr),
        cls=cls[order], name=np.fromiter(map(index.__getitem__, names), np.int64, n)[order], names=list(index),
        busy=intervals.union(ts, end),
    )


@functools.lru_cache(maxsize=4096)
def _class_index(name: str, kind: str) -> int:
    return CLASSES.index(class_of(name, kind))


def _collective_launches(trace: Trace, ops: list[DeviceOp], cls: np.ndarray) -> None:
    """A kernel whose name says nothing (kernel_kind "other") launched inside a collective op (c10d::,
    record_param_comms, symm_mem::, a custom all-reduce op) is communication: custom all-reduce kernels
    are named freely."""
    compute = CLASSES.index(COMPUTE)
    unnamed = {n for n, kind in set(zip(map(_NAME, ops), map(_KIND, ops)))
               if CLASSES.index(class_of(n, kind)) == compute and kernel_kind(n) == "other"}
    collective = {n for n in host_names(trace) if COLLECTIVE_OPS.match(n)} if unnamed else None
    if not collective:
        return
    spans: dict[object, list[tuple[float, float]]] = {}
    for h in trace.host_ops:
        if h.name in collective:
            spans.setdefault(h.tid, []).append((h.ts, h.ts + h.dur))
    inside = set()
    for tid, found in spans.items():
        merged = intervals.union(*zip(*found))
        calls = [c for c in launch_calls(trace) if c.tid == tid]
        at = np.fromiter((c.ts for c in calls), float, len(calls))
        k = np.searchsorted(merged.starts, at, side="right") - 1
        hit = (k >= 0) & (at <= merged.ends[np.maximum(k, 0)])
        inside.update(calls[i].correlation for i in np.flatnonzero(hit).tolist())
    for row, op in enumerate(ops):
        if op.correlation in inside and op.name in unnamed:
            cls[row] = CLASSES.index(COMMUNICATION)


def _launches(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Correlation ids of the launch calls (sorted, the last call of a repeated id kept, as a dict
    would), their start times, and the ids of the graph launches."""
    calls = launch_calls(trace)
    corr = np.fromiter(map(_CORR, calls), np.int64, len(calls))
    ts = np.fromiter(map(_TS, calls), float, len(calls))
    ts, corr = ts[corr >= 0], corr[corr >= 0]
    graphs = np.array([c.correlation for c in trace.runtime if "GraphLaunch" in c.name], dtype=np.int64)
    order = np.argsort(corr, kind="stable")
    corr, ts = corr[order], ts[order]
    last = np.append(corr[1:] != corr[:-1], True) if len(corr) else np.empty(0, dtype=bool)
    return corr[last], ts[last], graphs


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """values[keys == w] for each w of `wanted` (keys sorted and unique), NaN where absent."""
    if not len(keys):
        return np.full(len(wanted), np.nan)
    pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[pos] == wanted, values[pos], np.nan)


def _member(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """np.isin(values, keys), without the np.unique inside it that imports numpy.ma (~10 ms)."""
    keys = np.sort(keys)
    if not len(keys):
        return np.zeros(len(values), dtype=bool)
    return keys[np.minimum(np.searchsorted(keys, values), len(keys) - 1)] == values
