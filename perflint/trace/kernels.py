"""Device work by class (compute, communication, memcpy, memset), the top kernels, and how much
communication is hidden behind computation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perflint.measures import intervals
from perflint.trace.model import Trace
from perflint.trace.device_columns import Work, device_work
from perflint.trace.dtypes import dtype_size
from perflint.trace.names import CLASSES, COMMUNICATION, COMPUTE, collective_name, kernel_kind


@dataclass
class KernelClass:
    """Device time of one class of kernels (compute, communication, memory, ...)."""

    name: str
    count: int
    time_us: float  # sum of durations
    busy_us: float  # union of intervals (what the class keeps the device busy)


@dataclass
class TopKernel:
    """One kernel name among those taking the most device time."""

    name: str
    kernel_class: str
    count: int
    total_us: float
    mean_us: float


@dataclass
class Collective:
    """One kind of collective: calls, device time and bytes."""

    name: str
    count: int
    time_us: float
    bytes: int | None


@dataclass
class KernelFigures:
    """Kernel counts and device time by class and kind, and communication overlap."""

    kernels: int  # kernel events (compute + communication); copies and memsets are counted as transfers
    classes: list[KernelClass]
    top: list[TopKernel]
    collectives: list[Collective]
    comm_us: float  # union of communication kernels
    comm_overlap_us: float  # ... that overlaps a compute kernel
    comm_overlap: float | None  # comm_overlap_us / comm_us (HTA's comp_comm_overlap)
    comm_bytes: int | None  # input bytes of collectives when the trace records sizes
    kinds: list[KernelClass]  # device time by what the work does: gemm, convolution, ..., communication, memcpy


def kernel_figures(trace: Trace, top: int = 10) -> KernelFigures:
    work = device_work(trace)
    dur = work.dur
    classes, unions = {}, {}
    for k, name in enumerate(CLASSES):
        rows = work.cls == k
        unions[name] = intervals.union(work.ts[rows], work.end[rows])
        classes[name] = KernelClass(name, int(np.count_nonzero(rows)), float(np.sum(dur[rows])),
                                    intervals.total(unions[name]))
    counts = np.bincount(work.name, minlength=len(work.names))
    totals = np.bincount(work.name, weights=dur, minlength=len(work.names))
    ranked = np.argsort(-totals, kind="stable")[:top]  # ties: first seen in the file first
    first_row = {int(n): int(np.argmax(work.name == n)) for n in ranked}
    comm_us = intervals.total(unions[COMMUNICATION])
    overlap_us = intervals.total(intervals.intersect(unions[COMMUNICATION], unions[COMPUTE]))
    collectives, comm_bytes = _collectives(work)
    return KernelFigures(
        kernels=classes[COMPUTE].count + classes[COMMUNICATION].count,
        classes=list(classes.values()),
        top=[TopKernel(work.names[n], CLASSES[work.cls[first_row[n]]], int(counts[n]), float(totals[n]),
                       float(totals[n] / counts[n])) for n in map(int, ranked)],
        collectives=collectives,
        comm_us=comm_us,
        comm_overlap_us=overlap_us,
        comm_overlap=overlap_us / comm_us if comm_us > 0 else None,
        comm_bytes=comm_bytes,
        kinds=_kinds(work),
    )


def _kinds(work: Work) -> list[KernelClass]:
    """Device work by kind: compute kernels by what their name says they do (names.kernel_kind), the
    other classes (communication, memcpy, memset) as they are; most time first."""
    index: dict[str, int] = {}
    kind_of_name = np.fromiter((index.setdefault(kernel_kind(n), len(index)) for n in work.names), np.int64,
                               len(work.names))
    per_row = kind_of_name[work.name]
    for k, cls in enumerate(CLASSES):
        if cls != COMPUTE:
            per_row[work.cls == k] = index.setdefault(cls, len(index))
    labels = list(index)
    counts = np.bincount(per_row, minlength=len(labels))
    times = np.bincount(per_row, weights=work.dur, minlength=len(labels))
    rows = [KernelClass(label, int(counts[k]), float(times[k]),
                        intervals.total(intervals.union(work.ts[per_row == k], work.end[per_row == k])))
            for k, label in enumerate(labels) if counts[k]]
    return sorted(rows, key=lambda r: -r.time_us)


def _collectives(work: Work) -> tuple[list[Collective], int | None]:
    """Communication kernels by collective (in file order, so ties rank by first appearance), with
    their input bytes when the trace records message sizes."""
    colls: dict[str, list] = {}
    sized = False
    comm_class = CLASSES.index(COMMUNICATION)
    for pos in sorted(work.file_pos[work.cls == comm_class].tolist()):
        op = work.ops[pos]
        c = colls.setdefault(collective_name(op), [0, 0.0, 0])
        c[0] += 1
        c[1] += op.dur
        if op.comm is not None and op.comm.in_nelems:
            sized = True
            c[2] += op.comm.in_nelems * (dtype_size(op.comm.dtype) or 4)
    ranked = sorted(colls.items(), key=lambda kv: -kv[1][1])
    return ([Collective(n, k, t, b if sized else None) for n, (k, t, b) in ranked],
            sum(c[2] for c in colls.values()) if sized else None)
