"""Every figure of one rank's trace (`Figures`), and the budget metrics derived from them.

Data flows one way: `Trace` -> `analyze` -> `Figures` -> `metrics` -> perflint.measures.budgets.check.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from operator import itemgetter
from typing import Any, Optional, Union

import numpy as np

from perflint.measures.budgets import KEYS
from perflint.measures.events import COLLECTIVE_BACKENDS as _COLLECTIVE_ANNOTATIONS, lookup
from perflint.measures.metrics import unavailable_in_trace
from perflint.trace.columns import first_start
from perflint.trace.bounds import METRIC as SHARE_METRICS, BoundFigures, bound_figures
from perflint.trace.hostindex import top_level_ops
from perflint.trace.kernels import KernelFigures, kernel_figures
from perflint.trace.load import gc_paused, load_trace
from perflint.trace.model import Trace
from perflint.trace.names import COMPUTE, host_names
from perflint.trace.launch_queue import QueueFigures, queue_figures
from perflint.trace.roofline import RooflineFigures, roofline_figures
from perflint.trace.steps import Step, find_steps, parse_range, select
from perflint.trace.syncs import SyncEvent, sync_figures
from perflint.trace.timeline import TimelineFigures, timeline_figures
from perflint.trace.transfers import TransferFigures, transfer_figures

METRICS = tuple(k.metric for k in KEYS.values())
_NAME, _DUR = itemgetter(0), itemgetter(2)
_GPU_SHARES = ("memory", "compute", "sync")  # shares a CPU-only trace cannot tell


@dataclass
class Figures:
    """Everything `perflint trace` measured in one trace (or one step range of it): the report's source."""

    path: str
    rank: int | None
    world_size: int | None
    device_name: str | None
    schema: str
    has_device: bool
    steps: list[Step]  # steps found in the analysed part of the trace
    selection: str  # "whole file" or "steps A:B"
    ops: int
    peak_memory: int | None
    kernels: KernelFigures
    syncs: list[SyncEvent]
    transfers: TransferFigures
    timeline: TimelineFigures
    queue: QueueFigures
    host_collectives: int  # gloo:/nccl: collective annotations on the host
    bounds: BoundFigures  # what bounds the whole file and each step
    roofline: RooflineFigures
    problems: dict[str, int]  # malformed events: what was wrong -> how many (dropped or repaired)
    op_table: list[OpTime]  # host ops by name, most host time first (for --compare)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class OpTime:
    """One host op name: how often it ran and its summed host time (the `--compare` op table)."""

    name: str
    count: int
    host_us: float  # summed durations on the host (nested ops count in their parents too)


StepRange = Union[tuple[Optional[int], Optional[int]], str, None]  # (A, B) or "A:B", inclusive


def analyze(trace: Trace, steps: StepRange = None, label: str | None = None) -> Figures:
    """All figures for the whole trace, or for a ProfilerStep range ("A:B" or (A, B), inclusive)."""
    with gc_paused():
        return _analyze(trace, steps, label)


def _analyze(trace: Trace, steps: StepRange, label: str | None) -> Figures:
    """`label`: what the trace is (e.g. "steps 6:7" when the caller selected it already)."""
    selection = label or "whole file"
    if steps is not None:
        first, last = parse_range(steps) if isinstance(steps, str) else steps
        trace = select(trace, first, last)
        selection = f"steps {'' if first is None else first}:{'' if last is None else last}"
    t0 = min((first_start(trace, group) for group in ("host_ops", "runtime", "device") if getattr(trace, group)),
             default=0.0)
    kernels = kernel_figures(trace)
    compute_us = next(c.busy_us for c in kernels.classes if c.name == COMPUTE)
    steps, queue = find_steps(trace), queue_figures(trace)
    return Figures(
        path=trace.path, rank=trace.rank, world_size=trace.world_size, device_name=trace.device_name,
        schema=trace.schema, has_device=trace.has_device, steps=steps, selection=selection,
        ops=top_level_ops(trace), peak_memory=trace.peak_memory,
        kernels=kernels, syncs=sync_figures(trace, t0), transfers=transfer_figures(trace),
        timeline=timeline_figures(trace, t0, compute_us), queue=queue,
        host_collectives=_host_collectives(trace),
        bounds=bound_figures(trace, steps, t0, queue.queue_overlap, selection),
        roofline=roofline_figures(trace), problems=dict(trace.problems), op_table=_op_table(trace),
    )


def _op_table(trace: Trace, top: int = 100) -> list[OpTime]:
    ops = [h for h in trace.host_ops if h.kind == "op"]
    names = list(map(_NAME, ops))
    index = {name: k for k, name in enumerate(dict.fromkeys(names))}  # in order of first appearance
    ids = np.fromiter(map(index.__getitem__, names), np.intp, len(ops))
    counts = np.bincount(ids, minlength=len(index))
    times = np.bincount(ids, weights=np.fromiter(map(_DUR, ops), float, len(ops)), minlength=len(index))
    names = list(index)
    return [OpTime(names[k], int(counts[k]), float(times[k])) for k in np.argsort(-times, kind="stable")[:top]]


def _host_collectives(trace: Trace) -> int:
    """Collective calls seen on the host, each once: the calling thread's c10d:: ops (the event table's
    "collectives" rows, as the pytest plugin counts them), else the gloo:/nccl: worker annotations."""
    names = host_names(trace)  # test each distinct name once; most traces have none
    ops = {n for n in names if _is_collective_op(n)}
    calls = sum(1 for h in trace.host_ops if h.name in ops and h.kind == "op") if ops else 0
    if calls:
        return calls
    notes = {n for n in names if n.startswith(_COLLECTIVE_ANNOTATIONS)}
    return sum(1 for h in trace.host_ops if h.name in notes and h.kind == "annotation") if notes else 0


@functools.lru_cache(maxsize=4096)
def _is_collective_op(name: str) -> bool:
    m = lookup(name, "cpu_op")
    return m is not None and m.metric == "collectives"


def metrics_of(fig: Figures) -> dict[str, float | None]:
    """The budget metrics (perflint.measures.budgets KEYS) from figures; None where the trace cannot tell."""
    gpu = fig.has_device
    k, t = fig.kernels, fig.transfers
    values: dict[str, float | None] = dict.fromkeys(METRICS)
    values.update(
        ops=fig.ops,
        peak_memory=fig.peak_memory,
        syncs=len(fig.syncs) if gpu else None,
        kernels=k.kernels if gpu else None,
        transfers=t.transfers if gpu else None,
        transfer_bytes=t.transfer_bytes if gpu else None,
        queue_overlap=fig.queue.queue_overlap,
        collectives=sum(c.count for c in k.collectives) if gpu else fig.host_collectives,
        comm_bytes=k.comm_bytes,
        comm_overlap=k.comm_overlap,
    )
    whole = fig.bounds.whole
    if whole.dur_us > 0:
        values.update({metric: whole.shares[regime] for regime, metric in SHARE_METRICS.items()
                       if gpu or regime not in _GPU_SHARES})
    return {m: values[m] for m in METRICS}


def unavailable(fig: Figures) -> dict[str, str]:
    """Why a metric is None, for the "skip" verdicts (the reasons live with the metrics)."""
    return unavailable_in_trace(fig.has_device)


def metrics(trace: Trace | str | dict, steps: StepRange = None) -> dict[str, float | None]:
    """Budget metrics of a trace (a `Trace`, a path or a parsed trace dict) - the pytest plugin's entry point."""
    if not isinstance(trace, Trace):
        trace = load_trace(trace)
    return metrics_of(analyze(trace, steps))
