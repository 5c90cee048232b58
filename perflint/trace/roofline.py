"""Roofline per op and per kernel class: FLOPs and bytes (perflint.trace.opcost) over device time gives the
achieved TFLOP/s and TB/s, their ratio the arithmetic intensity, and against the GPU's peaks
(perflint.trace.peaks) the fraction of peak and whether the work is compute- or memory-bound.

Each kernel belongs to the op that launched it: the innermost op around its launch call whose cost is
known (aten::addmm under aten::linear, aten::cudnn_convolution under aten::conv2d). An op's time is the
sum of its kernels' durations; its FLOPs and bytes go to its longest kernel (the *main* one: the GEMM
of a convolution that also transposes its input), so a kernel class's rate is its main kernels' FLOPs
over their time. On a CPU-only trace an op's own duration stands in for device time (innermost costed
ops only, so that nested ops are not counted twice) and no peak applies.

An fp32 GEMM or convolution whose main kernel runs on tensor cores (TF32: `tf32`, `s1688`, `s16816`,
`tensorop_s` in its name) is held to the TF32 peak; otherwise a precision's own peak applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from perflint.trace.device_columns import device_work
from perflint.trace.hostindex import Thread, by_thread, has_inputs
from perflint.trace.model import HostOp, Trace
from perflint.trace.names import CLASSES, COMPUTE, kernel_kind
from perflint.trace.opcost import CONV, GEMM, OpCost, op_cost
from perflint.trace.peaks import Peak, peak_of

_TF32_KERNEL = re.compile(r"tf32|s1688|s16816|tensorop_s|xmma.*f32", re.IGNORECASE)
_CONSUMER_LOOKAHEAD = 64  # ops searched after a convolution for the one that takes its output


@dataclass
class RooflineRow:
    """One op name or kernel class, summed over its instances."""

    name: str
    count: int
    time_us: float
    flops: float
    bytes: float
    tflops: float | None  # achieved TFLOP/s
    tbps: float | None  # achieved TB/s
    intensity: float | None  # FLOP per byte
    compute_peak: float | None  # fraction of the peak FLOP/s at the work's precision
    bandwidth_peak: float | None  # fraction of the peak memory bandwidth
    bound: str | None  # "compute" or "memory": which roof is nearer, from the intensity and the peaks


@dataclass
class RooflineFigures:
    """Achieved rates against the GPU's peaks, per op and per kernel class."""

    gpu: str | None  # the peak table's row
    identified: str  # how the row was found, or why there is none
    peak: dict[str, Any] | None  # {"tflops": {...}, "tbps": ..., "source": ...}
    ops: list[RooflineRow]
    kernel_classes: list[RooflineRow]
    covered_us: float  # device time of kernels whose op has a known cost
    compute_kernel_us: float  # device time of all compute kernels
    assumed_dtype: bool  # some op had no `Input type`: float32 was assumed
    host_time: bool = False  # CPU-only trace: op durations stand in for device time
    notes: list[str] = field(default_factory=list)


class KernelCost(NamedTuple):
    """Per device-work row (device_columns order): the op it belongs to and what the roofline makes of it."""

    op: np.ndarray  # index into `ops` (-1: no costed op)
    main: np.ndarray  # this row carries its op's FLOPs and bytes
    flops: np.ndarray
    bytes: np.ndarray
    compute_bound: np.ndarray  # bool; meaningful where `known`
    known: np.ndarray  # the row's regime comes from its FLOPs and bytes (else from its kernel kind)
    ops: list[tuple[HostOp, OpCost]]


def kernel_costs(trace: Trace) -> KernelCost:
    found = trace.cache.get("kernel_costs")
    if found is None:
        found = trace.cache["kernel_costs"] = _kernel_costs(trace)
    return found


def peak(trace: Trace) -> tuple[Peak | None, str]:
    return peak_of(trace.device_name, trace.device_properties)


def roofline_figures(trace: Trace, top: int = 10) -> RooflineFigures:
    row_peak, identified = peak(trace)
    info = None if row_peak is None else {"tflops": dict(row_peak.tflops), "tbps": row_peak.tbps,
                                          "source": row_peak.source}
    if not trace.has_device:
        return _host_roofline(trace, row_peak, identified, info, top)
    work, costs = device_work(trace), kernel_costs(trace)
    compute_rows = work.cls == CLASSES.index(COMPUTE)
    by_op: dict[str, list] = {}
    op_time = np.bincount(costs.op[costs.op >= 0], weights=work.dur[costs.op >= 0], minlength=len(costs.ops))
    main_row = np.full(len(costs.ops), -1, dtype=np.int64)
    main_row[costs.op[costs.main]] = np.flatnonzero(costs.main)
    for k, (op, cost) in enumerate(costs.ops):
        if op_time[k] > 0:
            prec = _precision(cost, work.names[work.name[main_row[k]]])
            _add(by_op, op.name, cost.flops, cost.bytes, float(op_time[k]), prec, row_peak)
    by_class: dict[str, list] = {}
    for row in np.flatnonzero(costs.main).tolist():
        op, cost = costs.ops[costs.op[row]]
        name = work.names[work.name[row]]
        _add(by_class, kernel_kind(name), cost.flops, cost.bytes, float(work.dur[row]), _precision(cost, name),
             row_peak)
    return RooflineFigures(
        gpu=row_peak.gpu if row_peak else None, identified=identified, peak=info,
        ops=_rows(by_op, row_peak)[:top], kernel_classes=_rows(by_class, row_peak),
        covered_us=float(np.sum(work.dur[(costs.op >= 0) & compute_rows])),
        compute_kernel_us=float(np.sum(work.dur[compute_rows])),
        assumed_dtype=any(c.assumed_dtype for _, c in costs.ops))


def _host_roofline(trace: Trace, row_peak, identified, info, top) -> RooflineFigures:
    """CPU-only trace: each innermost costed op over its own duration; no peak applies."""
    by_op: dict[str, list] = {}
    costed = _costed_ops(trace)
    for op, cost in costed:
        _add(by_op, op.name, cost.flops, cost.bytes, op.dur, cost.precision, None)
    total = sum(op.dur for op, _ in costed)
    return RooflineFigures(gpu=None, identified="CPU-only trace: op durations on the host, no peak",
                           peak=None, ops=_rows(by_op, None)[:top], kernel_classes=[], covered_us=total,
                           compute_kernel_us=0.0, assumed_dtype=any(c.assumed_dtype for _, c in costed),
                           host_time=True)


def _precision(cost: OpCost, kernel_name: str) -> str | None:
    if cost.precision == "fp32" and cost.category in (GEMM, CONV) and _TF32_KERNEL.search(kernel_name):
        return "tf32"
    return cost.precision


def _add(acc: dict[str, list], key: str, flops: float, nbytes: float, time_us: float, prec: str | None,
         row_peak: Peak | None) -> None:
    """Sums per row: count, time, flops, bytes, time at peak compute, time at peak bandwidth."""
    a = acc.setdefault(key, [0, 0.0, 0.0, 0.0, 0.0, 0.0, True])
    a[0] += 1
    a[1] += time_us
    a[2] += flops
    a[3] += nbytes
    peak_flops = row_peak.flops(prec) if row_peak and prec else None
    if peak_flops is None:
        a[6] = False
    else:
        a[4] += flops / peak_flops * 1e6
    if row_peak:
        a[5] += nbytes / (row_peak.tbps * 1e12) * 1e6


def _rows(acc: dict[str, list], row_peak: Peak | None) -> list[RooflineRow]:
    rows = []
    for name, (count, time_us, flops, nbytes, at_peak_us, at_bw_us, all_peaks) in acc.items():
        seconds = time_us * 1e-6
        compute = at_peak_us / time_us if all_peaks and row_peak and time_us > 0 else None
        bandwidth = at_bw_us / time_us if row_peak and time_us > 0 else None
        bound = None if compute is None or bandwidth is None else ("compute" if compute >= bandwidth else "memory")
        rows.append(RooflineRow(name, count, time_us, flops, nbytes,
                                flops / seconds / 1e12 if seconds > 0 else None,
                                nbytes / seconds / 1e12 if seconds > 0 else None,
                                flops / nbytes if nbytes > 0 else None, compute, bandwidth, bound))
    rows.sort(key=lambda r: -r.time_us)
    return rows


def _kernel_costs(trace: Trace) -> KernelCost:
    work = device_work(trace)
    n = len(work.ts)
    op_of = np.full(n, -1, dtype=np.int64)
    ops: list[tuple[HostOp, OpCost]] = []
    if has_inputs(trace):
        index: dict[int, int] = {}  # id(HostOp) -> position in ops
        cache: dict[int, OpCost | None] = {}
        launch_of = {c.correlation: c for c in trace.runtime if c.correlation >= 0}
        threads = by_thread(trace)
        parents = {tid: _parents(t) for tid, t in threads.items()}
        for row, corr in enumerate(work.corr.tolist()):
            call = launch_of.get(corr)
            thread = threads.get(call.tid) if call is not None else None
            if thread is None:
                continue
            found = _costed_around(thread, parents[call.tid], call.ts, cache)
            if found is not None:
                op, cost = found
                k = index.get(id(op))
                if k is None:
                    k = index[id(op)] = len(ops)
                    ops.append(found)
                op_of[row] = k
    main = np.zeros(n, dtype=bool)
    has_op = np.flatnonzero(op_of >= 0)
    if len(has_op):  # the longest kernel of each op (the first on ties)
        order = has_op[np.lexsort((-work.dur[has_op], op_of[has_op]))]
        first = np.concatenate(([True], op_of[order][1:] != op_of[order][:-1]))
        main[order[first]] = True
    flops, nbytes = np.zeros(n), np.zeros(n)
    bound, known = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    row_peak, _ = peak(trace)
    for row in np.flatnonzero(main).tolist():
        op, cost = ops[op_of[row]]
        flops[row], nbytes[row] = cost.flops, cost.bytes
        peak_flops = row_peak.flops(_precision(cost, work.names[work.name[row]])) if row_peak else None
        if peak_flops:
            known[row] = True
            bound[row] = cost.flops / peak_flops >= cost.bytes / (row_peak.tbps * 1e12)
    return KernelCost(op_of, main, flops, nbytes, bound, known, ops)


def _parents(thread: Thread) -> np.ndarray:
    """Index of each event's parent on its thread (-1 at top level): events are sorted by start, longest
    first on ties, so a stack of open events finds it in one pass."""
    parents = np.full(len(thread.ops), -1, dtype=np.int64)
    stack: list[int] = []
    ends = thread.ends.tolist()
    for k, start in enumerate(thread.starts.tolist()):
        while stack and ends[stack[-1]] <= start:  # touching is not nesting
            stack.pop()
        if stack:
            parents[k] = stack[-1]
        stack.append(k)
    return parents


def _costed_around(thread: Thread, parents: np.ndarray, at: float,
                   cache: dict[int, OpCost | None]) -> tuple[HostOp, OpCost] | None:
    """The innermost op enclosing time `at` on the thread whose cost is known (`cache`: by id(op))."""
    k = int(np.searchsorted(thread.starts, at, side="right")) - 1
    while k >= 0 and thread.ends[k] < at:
        k = int(parents[k])
    while k >= 0:
        op = thread.ops[k]
        if op.kind == "op" and op.inputs is not None:
            key = id(op)
            if key not in cache:
                cache[key] = op_cost(op, _consumer_dims(thread, k) if _needs_consumer(op) else None)
            if cache[key] is not None:
                return op, cache[key]
        k = int(parents[k])
    return None


def _needs_consumer(op: HostOp) -> bool:
    return "conv" in op.name and not op.inputs.concrete


def _consumer_dims(thread: Thread, k: int) -> list | None:
    """The first input shape of the next op after op k (starting after it ends) whose first input has the
    convolution output's batch and channel counts."""
    conv = thread.ops[k]
    dims = conv.inputs.dims
    if len(dims) < 2 or not dims[0] or not dims[1]:
        return None
    batch, channels, end = dims[0][0], dims[1][0], conv.ts + conv.dur
    start = int(np.searchsorted(thread.starts, end, side="left"))
    for op in thread.ops[start: start + _CONSUMER_LOOKAHEAD]:
        first = op.inputs.dims[0] if op.inputs is not None and op.inputs.dims else None
        if first and len(first) == len(dims[0]) and first[0] == batch and first[1] == channels:
            return first
    return None


def _costed_ops(trace: Trace) -> list[tuple[HostOp, OpCost]]:
    """Ops with a known cost that contain no other such op (CPU-only traces)."""
    found = []
    for thread in by_thread(trace).values():
        parents = _parents(thread)
        costs = {}
        for k, op in enumerate(thread.ops):
            if op.kind == "op" and op.inputs is not None:
                cost = op_cost(op, _consumer_dims(thread, k) if _needs_consumer(op) else None)
                if cost is not None:
                    costs[k] = cost
        outer = set()
        for k in costs:
            p = int(parents[k])
            while p >= 0:
                if p in costs:
                    outer.add(p)
                    break
                p = int(parents[p])
        found += [(thread.ops[k], c) for k, c in costs.items() if k not in outer]
    return found
