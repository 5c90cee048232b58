"""Device work by class (compute, communication, memcpy, memset), the top kernels, and how much
communication is hidden behind computation."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from perflint.trace import intervals
from perflint.trace.model import Trace
from perflint.trace.names import CLASSES, COMMUNICATION, COMPUTE, collective_name, kernel_class

_DTYPE_BYTES = {"float": 4, "float32": 4, "int": 4, "int32": 4, "half": 2, "float16": 2, "bfloat16": 2,
                "double": 8, "float64": 8, "long": 8, "int64": 8, "byte": 1, "char": 1, "uint8": 1, "int8": 1,
                "bool": 1, "short": 2, "int16": 2}


@dataclass
class KernelClass:
    name: str
    count: int
    time_us: float  # sum of durations
    busy_us: float  # union of intervals (what the class keeps the device busy)


@dataclass
class TopKernel:
    name: str
    kernel_class: str
    count: int
    total_us: float
    mean_us: float


@dataclass
class Collective:
    name: str
    count: int
    time_us: float
    bytes: int | None


@dataclass
class KernelFigures:
    kernels: int  # kernel events (compute + communication); copies and memsets are counted as transfers
    classes: list[KernelClass]
    top: list[TopKernel]
    collectives: list[Collective]
    comm_us: float  # union of communication kernels
    comm_overlap_us: float  # ... that overlaps a compute kernel
    comm_overlap: float | None  # comm_overlap_us / comm_us (HTA's comp_comm_overlap)
    comm_bytes: int | None  # input bytes of collectives when the trace records sizes


def kernel_figures(trace: Trace, top: int = 10) -> KernelFigures:
    spans: dict[str, list[tuple[float, float]]] = {c: [] for c in CLASSES}
    time_by_class: dict[str, float] = defaultdict(float)
    by_name: dict[str, list] = {}
    colls: dict[str, list] = {}
    sized = False
    for op in trace.device:  # file order: sums and ties in the ranking do not depend on sorting
        name, ts, dur, _, _, kind, _, comm = op
        if kind == "sync":
            continue
        cls = kernel_class(op)
        spans[cls].append((ts, ts + dur))
        time_by_class[cls] += dur
        entry = by_name.get(name)
        if entry is None:
            by_name[name] = [cls, 1, dur]
        else:
            entry[1] += 1
            entry[2] += dur
        if cls == COMMUNICATION:
            key = collective_name(op)
            c = colls.setdefault(key, [0, 0.0, 0])
            c[0] += 1
            c[1] += dur
            if comm is not None and comm.in_nelems:
                sized = True
                c[2] += comm.in_nelems * _DTYPE_BYTES.get(comm.dtype.lower(), 4)
    unions = {c: intervals.union(s) for c, s in spans.items()}
    classes = [KernelClass(c, len(spans[c]), time_by_class[c], intervals.total(unions[c])) for c in CLASSES]
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][2])[:top]
    comm_us = intervals.total(unions[COMMUNICATION])
    overlap_us = intervals.total(intervals.intersect(unions[COMMUNICATION], unions[COMPUTE]))
    return KernelFigures(
        kernels=len(spans[COMPUTE]) + len(spans[COMMUNICATION]),
        classes=classes,
        top=[TopKernel(n, c, k, t, t / k) for n, (c, k, t) in ranked],
        collectives=[Collective(n, k, t, b if sized else None)
                     for n, (k, t, b) in sorted(colls.items(), key=lambda kv: -kv[1][1])],
        comm_us=comm_us,
        comm_overlap_us=overlap_us,
        comm_overlap=overlap_us / comm_us if comm_us > 0 else None,
        comm_bytes=sum(c[2] for c in colls.values()) if sized else None,
    )
