"""Checking perflint.scaling's ring model against real traces and measured runs (tests and
benchmarks/bench_scaling.py): the collectives a trace records with their sizes, the transfer time of
each over the ranks, and a least-squares fit of link bandwidth and latency to measured times. Traces
are read by perflint.trace (one reader, one dtype table)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from perflint.scaling import COSTS, kind_of
from perflint.trace import load_trace
from perflint.trace.device_columns import device_work
from perflint.trace.dtypes import dtype_size
from perflint.trace.names import CLASSES, COMMUNICATION


@dataclass(frozen=True)
class MeasuredCollective:
    """One collective on one rank, as a trace (or a timed run) records it: its device time and size."""

    rank: int
    world_size: int
    kind: str
    index: int  # k-th of its kind on this rank
    nbytes: int
    dur_us: float


def _nbytes(dims, types) -> int | None:
    """Bytes of the first argument from record_shapes' Input Dims and Input type."""
    try:
        size = dtype_size(types[0])
        return None if size is None else math.prod(int(d) for d in dims[0]) * size
    except (IndexError, TypeError, ValueError):
        return None


def trace_collectives(path: str) -> list[MeasuredCollective]:
    """Collectives of one trace: communication kernels in device order, sized from their own args ("In msg
    nelems", newer Kineto) or else from the k-th `nccl:<kind>` host annotation of the same kind (its
    "Input Dims"; NCCL runs one stream's collectives in issue order). Unsized ones are left out."""
    trace = load_trace(path)
    rank, world = trace.rank or 0, trace.world_size or 1
    sizes: dict[str, list[int | None]] = {}
    for h in sorted((h for h in trace.host_ops if h.kind == "annotation" and h.name.startswith("nccl:")),
                    key=lambda h: h.ts):
        kind = kind_of(h.name)
        if kind:
            inputs = h.inputs
            sizes.setdefault(kind, []).append(_nbytes(inputs.dims, inputs.types) if inputs else None)
    work = device_work(trace)
    out, seen = [], {}
    for row in np.flatnonzero(work.cls == CLASSES.index(COMMUNICATION)).tolist():  # in start order
        op = work.ops[work.file_pos[row]]
        kind = kind_of(op.comm.collective if op.comm and op.comm.collective else op.name.split("_")[1])
        if kind is None:
            continue
        i = seen[kind] = seen.get(kind, -1) + 1
        nbytes, group = None, world
        if op.comm is not None and op.comm.in_nelems:
            nbytes = _nbytes([[op.comm.in_nelems]], [op.comm.dtype])
            group = op.comm.group_size or world
        elif i < len(sizes.get(kind, [])):
            nbytes = sizes[kind][i]
        if nbytes is not None:
            out.append(MeasuredCollective(rank, group, kind, i, nbytes, float(op.dur)))
    return out


def transfer_times(collectives: Iterable[MeasuredCollective]) -> list[MeasuredCollective]:
    """Per (kind, index), the shortest duration over the ranks: the last rank to arrive waits for no one,
    so its time is the transfer (perflint.trace.ranks uses the same rule)."""
    best: dict[tuple[str, int], MeasuredCollective] = {}
    for c in collectives:
        key = (c.kind, c.index)
        if key not in best or c.dur_us < best[key].dur_us:
            best[key] = c
    return [best[k] for k in sorted(best)]


@dataclass(frozen=True)
class Fit:
    """Bandwidth and latency that best explain measured collective times (least squares)."""

    link_gbps: float | None
    latency_us: float
    errors: list[float]  # per collective, (predicted - measured) / measured


def fit(collectives: list[MeasuredCollective]) -> Fit:
    """Least-squares fit of the model's two hardware numbers to measured times: t = x / bw + s * latency,
    with x = f_kind(N) * bytes and s = steps_kind(N)."""
    rows = []
    for c in collectives:
        factor, steps = COSTS[c.kind]
        rows.append((factor(c.world_size) * c.nbytes, steps(c.world_size), c.dur_us * 1e-6))
    sxx = sum(x * x for x, _, _ in rows)
    sss = sum(s * s for _, s, _ in rows)
    sxs = sum(x * s for x, s, _ in rows)
    sxy = sum(x * y for x, _, y in rows)
    ssy = sum(s * y for _, s, y in rows)
    det = sxx * sss - sxs * sxs
    if len(rows) < 2 or det <= 0:
        raise ValueError("need collectives of at least two different sizes to fit bandwidth and latency")
    inv_bw = (sxy * sss - sxs * ssy) / det  # seconds per byte
    lat = (sxx * ssy - sxs * sxy) / det
    if inv_bw <= 0 or lat < 0:  # a non-physical fit: keep the other term at zero and refit the one left
        inv_bw, lat = (max(sxy / sxx, 1e-18), 0.0) if inv_bw > 0 else (0.0, ssy / sss)
    gbps = 8 / inv_bw / 1e9 if inv_bw > 0 else None
    errors = [((x * inv_bw + s * lat) - y) / y for x, s, y in rows]
    return Fit(gbps, lat * 1e6, errors)
