"""What bounds each step (and the whole file): every microsecond of a step's wall time goes to one regime,
named after "Making Deep Learning Go Brrrr" (compute, memory bandwidth, overhead) plus the input
pipeline, communication and syncs, so the shares add up to 1.

While the GPU is busy, the time belongs to what runs, by priority: a compute-bound kernel, else a
memory-bound kernel (a kernel below the GPU's ridge point, a copy other than host-to-device, a memset),
else a host-to-device copy (input pipeline), else communication alone (exposed communication). A
kernel's bound comes from its FLOPs and bytes (perflint.trace.roofline) when the trace records its op's
shapes and the GPU is in the peak table; otherwise from its name (GEMMs, convolutions and attention are
compute-bound, everything else memory-bound), and the figures say which (`by_name_us`).
While the GPU is idle, the gap belongs to: syncs when a host sync call returned during it (the host
waited for the GPU to drain, then had to refill the queue); else the input pipeline for the part during
which the host ran data-loader work or a host-to-device copy call; else host overhead when the host had
not launched the next work yet (or launched it < 30 us before: launch latency); else "other" (queued
work waited on something else, e.g. another stream's event).
A CPU-only trace has no device: collective ops are communication, data-loader work input, time in no
op host overhead (Python), and time in ops "other" (CPU compute, whose bound the trace cannot tell).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from perflint.measures import intervals
from perflint.trace.columns import first_start, last_end
from perflint.trace.device_columns import Work, device_work
from perflint.trace.hostindex import by_thread, enclosing, has_stacks
from perflint.measures.intervals import Spans
from perflint.trace.model import Trace
from perflint.trace.names import (CLASSES, COLLECTIVE_OPS, COMMUNICATION, COMPUTE, LOADER, MEMCPY, copy_kind,
                                  host_names, is_sync_call, kernel_kind, launch_calls, source_line)
from perflint.trace.roofline import kernel_costs
from perflint.trace.steps import Step
from perflint.trace.timeline import KERNEL_WAIT_US

OVERHEAD, INPUT, MEMORY, COMPUTE_BOUND, COMM, SYNC, OTHER = (
    "overhead", "input", "memory", "compute", "communication", "sync", "other")
REGIMES = (OVERHEAD, INPUT, MEMORY, COMPUTE_BOUND, COMM, SYNC, OTHER)
LABELS = {OVERHEAD: "host overhead", INPUT: "the input pipeline", MEMORY: "memory bandwidth",
          COMPUTE_BOUND: "compute", COMM: "exposed communication", SYNC: "host syncs",
          OTHER: "other waiting"}
WHAT = {
    OVERHEAD: "the GPU sits idle while the CPU runs Python and launches kernels",
    INPUT: "the GPU waits for batches: data-loader work and host-to-device copies",
    MEMORY: "kernels spend their time moving bytes, far below the GPU's arithmetic peak",
    COMPUTE_BOUND: "kernels are doing arithmetic: the step is as fast as its FLOPs allow at this precision",
    COMM: "collectives run with no computation to hide them",
    SYNC: "the host blocks until the GPU drains, then the GPU idles until the host refills the queue",
    OTHER: "the GPU idles with work already queued: it waits on another stream's event, a peer or the host",
}
CURES = {
    OVERHEAD: "fewer, larger kernels: torch.compile (mode='reduce-overhead' adds CUDA graphs), foreach "
              "optimizers, batched ops instead of Python loops, no Python work between launches",
    INPUT: "DataLoader(num_workers>0, pin_memory=True, persistent_workers=True) and "
           ".to(device, non_blocking=True) for each batch",
    MEMORY: "fuse elementwise chains (torch.compile), keep activations in bf16/fp16, avoid copies and "
            "layout changes",
    COMPUTE_BOUND: "tensor cores: bf16/fp16 autocast or TF32, sizes that are multiples of 8, fused attention "
                   "(scaled_dot_product_attention)",
    COMM: "overlap communication with computation: DDP's bucketed backward, no_sync() when accumulating, "
          "fewer and larger collectives",
    SYNC: "keep values on the device and read them once after the loop (no .item()/.cpu()/print per step)",
    OTHER: "look at the streams' dependencies (event waits) in the trace viewer",
}
RULES = {
    OVERHEAD: ["PFL401", "PFL301", "PFL303", "PFL304", "PFL607"],
    INPUT: ["PFL501", "PFL503", "PFL203", "PFL502"],
    MEMORY: ["PFL301", "PFL401", "PFL306", "PFL307", "PFL302"],
    COMPUTE_BOUND: ["PFL801", "PFL803", "PFL305", "PFL802"],
    COMM: ["PFL701", "PFL702", "PFL703"],
    SYNC: ["PFL101", "PFL102", "PFL103", "PFL104", "PFL105", "PFL109"],
    OTHER: [],
}
# The budget metric of each regime's share (perflint.measures.budgets KEYS).
METRIC = {OVERHEAD: "overhead_share", INPUT: "input_share", MEMORY: "memory_bound_share",
          COMPUTE_BOUND: "compute_bound_share", COMM: "exposed_comm_share", SYNC: "sync_share"}
_COMPUTE_KINDS = {"gemm", "convolution", "attention"}
_SYNC_SLACK_US = 2.0  # a sync call may return this long before the device timeline shows the GPU idle
_SOURCES = 3
_NAME = itemgetter(0)
_SOURCE_ROWS = 50  # device rows, gaps or sync calls whose source lines are looked up per window


@dataclass
class Bound:
    """What bounds one window of wall time (a step, or the whole file)."""

    label: str  # "step 6" or "whole file"
    start_us: float  # from the first event of the trace
    dur_us: float
    shares: dict[str, float]  # regime -> share of dur_us (all of REGIMES; they add up to 1)
    dominant: str  # the largest share
    sentence: str
    sources: list[str] = field(default_factory=list)  # "file.py:line" of the dominant regime, costliest first
    by_name_us: float = 0.0  # kernel time whose bound was read from the kernel's name, not its FLOPs/bytes


@dataclass
class BoundFigures:
    """The bound of the whole analysed window and of each step in it."""

    whole: Bound
    steps: list[Bound]


def bound_figures(trace: Trace, steps: list[Step], t0: float, queue_overlap: float | None,
                  label: str = "whole file") -> BoundFigures:
    context = _Context(trace, queue_overlap)
    lo, hi = context.span()
    whole = context.bound(label, lo, hi, t0)
    return BoundFigures(whole, [context.bound(f"step {s.number}", s.start, s.end, t0) for s in steps])


class _Context:
    """The spans every window is cut from, built once per trace."""

    def __init__(self, trace: Trace, queue_overlap: float | None):
        self.trace, self.queue_overlap = trace, queue_overlap
        names = host_names(trace)
        loader = {n for n in names if LOADER.search(n)}
        collective = {n for n in names if COLLECTIVE_OPS.match(n)}
        loading = [h for h in trace.host_ops if h.name in loader] if loader else []
        copy_calls = _input_copy_calls(trace)
        self.input_host = intervals.union([h.ts for h in loading] + [c.ts for c in copy_calls],
                                          [h.ts + h.dur for h in loading] + [c.ts + c.dur for c in copy_calls])
        calling = [h for h in trace.host_ops if h.name in collective] if collective else []
        self.collective_host = intervals.union([h.ts for h in calling], [h.ts + h.dur for h in calling])
        sync_names = {n for n in set(map(_NAME, trace.runtime)) if is_sync_call(n)}
        syncs = [c for c in trace.runtime if c.name in sync_names]
        self.sync_ends = np.sort(np.fromiter((c.ts + c.dur for c in syncs), float, len(syncs)))
        if trace.has_device:
            self.work = device_work(trace)
            self.regime, self.by_name = _row_regimes(trace, self.work)
            self.has_stacks = has_stacks(trace)
            self.calls = {c.correlation: c for c in launch_calls(trace)} if self.has_stacks else {}

    def span(self) -> tuple[float, float]:
        """First start and last end of any event."""
        ends = [float(t.reach[-1]) for t in by_thread(self.trace).values() if len(t.reach)]
        starts = [float(t.starts[0]) for t in by_thread(self.trace).values() if len(t.starts)]
        for group in ("runtime", "device"):
            if getattr(self.trace, group):
                starts.append(first_start(self.trace, group))
                ends.append(last_end(self.trace, group))
        return (min(starts), max(ends)) if starts else (0.0, 0.0)

    def bound(self, label: str, lo: float, hi: float, t0: float) -> Bound:
        dur = max(hi - lo, 0.0)
        if dur <= 0:
            shares = dict.fromkeys(REGIMES, 0.0)
            return Bound(label, lo - t0, 0.0, shares, OTHER, f"{label}: empty", [])
        if self.trace.has_device:
            times, by_name, cut = self._device(lo, hi)
        else:
            times, by_name, cut = self._host(lo, hi), 0.0, None
        shares = {r: times.get(r, 0.0) / dur for r in REGIMES}
        dominant = max(REGIMES, key=lambda r: shares[r])
        found = self._sources(dominant, lo, hi, *cut) if cut is not None else []
        return Bound(label, lo - t0, dur, shares, dominant, _sentence(label, dominant, shares, dur, found), found,
                     by_name)

    def _device(self, lo: float, hi: float) -> tuple[dict[str, float], float, tuple]:
        w = self.work
        rows = np.flatnonzero((w.end > lo) & (w.ts < hi))
        starts, ends = np.maximum(w.ts[rows], lo), np.minimum(w.end[rows], hi)
        regime = self.regime[rows]
        times: dict[str, float] = {}
        covered = intervals.EMPTY
        for r in (COMPUTE_BOUND, MEMORY, INPUT, COMM):  # busy time goes to the first regime running
            mine = regime == REGIMES.index(r)
            union = intervals.union(np.concatenate((covered.starts, starts[mine])),
                                    np.concatenate((covered.ends, ends[mine])))
            times[r] = intervals.total(union) - intervals.total(covered)
            covered = union
        gap_starts = np.concatenate(([lo], covered.ends))
        gap_ends = np.concatenate((covered.starts, [hi]))
        keep = gap_ends > gap_starts
        gap_starts, gap_ends = gap_starts[keep], gap_ends[keep]
        sync, waited = self._sync_gaps(gap_starts, gap_ends), self._waited(gap_starts, gap_ends)
        times[SYNC] = float(np.sum((gap_ends - gap_starts)[sync]))
        rest = Spans(gap_starts[~sync], gap_ends[~sync])
        idle_input = intervals.total(intervals.intersect(rest, self.input_host))
        other = Spans(rest.starts[waited[~sync]], rest.ends[waited[~sync]])
        times[OTHER] = intervals.total(other) - intervals.total(intervals.intersect(other, self.input_host))
        times[INPUT] += idle_input
        times[OVERHEAD] = intervals.total(rest) - idle_input - times[OTHER]
        by_name = float(np.sum((ends - starts)[self.by_name[rows]]))
        return times, by_name, (rows, regime, gap_starts, gap_ends, sync)

    def _sync_gaps(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Gaps during which a host sync call returned (its end within [start - slack, end])."""
        if not len(self.sync_ends):
            return np.zeros(len(starts), dtype=bool)
        first = np.searchsorted(self.sync_ends, starts - _SYNC_SLACK_US, side="left")
        last = np.searchsorted(self.sync_ends, ends, side="right")
        return last > first

    def _waited(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Gaps whose next operation was launched before the gap began and that last >= 30 us: the work
        was queued but waited on something else."""
        w = self.work
        following = np.searchsorted(w.ts, ends, side="left")
        has_next = following < len(w.ts)
        launched = np.where(has_next, w.launch[np.minimum(following, len(w.ts) - 1)], np.nan)
        return has_next & (launched <= starts) & (ends - starts >= KERNEL_WAIT_US)

    def _host(self, lo: float, hi: float) -> dict[str, float]:
        window = Spans(np.array([lo]), np.array([hi]))
        ops = [h for h in self.trace.host_ops if h.kind == "op" and h.ts < hi and h.ts + h.dur > lo]
        in_ops = intervals.intersect(window, intervals.union([h.ts for h in ops], [h.ts + h.dur for h in ops]))
        comm = intervals.intersect(window, self.collective_host)
        inputs = intervals.intersect(window, self.input_host)
        comm_t = intervals.total(comm)
        input_t = intervals.total(inputs) - intervals.total(intervals.intersect(inputs, comm))
        claimed = intervals.union(np.concatenate((comm.starts, inputs.starts)), np.concatenate((comm.ends, inputs.ends)))
        other = intervals.total(in_ops) - intervals.total(intervals.intersect(in_ops, claimed))
        return {COMM: comm_t, INPUT: input_t, OTHER: other,
                OVERHEAD: (hi - lo) - comm_t - input_t - other}

    def _sources(self, dominant: str, lo: float, hi: float, rows, regime, gap_starts, gap_ends, sync) -> list[str]:
        """Source lines of the dominant regime: from the launch calls of its costliest device rows (busy
        regimes), of the operations that ended its longest gaps (host overhead, input) or of the sync
        calls in the window."""
        w, trace = self.work, self.trace
        if dominant == SYNC:
            calls = [c for c in trace.runtime if lo <= c.ts < hi and is_sync_call(c.name)][:_SOURCE_ROWS]
            chains = enclosing(trace, [(c.tid, c.ts, c.ts + c.dur) for c in calls])
            return _rank([(source_line(chain), c.dur) for chain, c in zip(chains, calls)])
        if dominant in (OVERHEAD, INPUT):
            gaps = np.flatnonzero(~sync)
            longest = gaps[np.argsort(gap_starts[gaps] - gap_ends[gaps], kind="stable")[:_SOURCE_ROWS]]
            following = np.searchsorted(w.ts, gap_ends[longest], side="left")
            chosen = [(int(f), float(gap_ends[g] - gap_starts[g])) for f, g in zip(following, longest) if f < len(w.ts)]
        elif dominant in (COMPUTE_BOUND, MEMORY, COMM):
            mine = np.flatnonzero(regime == REGIMES.index(dominant))
            dur = w.dur[rows]
            chosen = [(int(rows[k]), float(dur[k])) for k in mine[np.argsort(-dur[mine], kind="stable")[:_SOURCE_ROWS]]]
        else:
            return []
        if not self.has_stacks:
            return []
        calls = self.calls
        queries = [(calls[int(w.corr[row])], weight) for row, weight in chosen if int(w.corr[row]) in calls]
        chains = enclosing(trace, [(c.tid, c.ts, c.ts + c.dur) for c, _ in queries])
        return _rank([(source_line(chain), weight) for chain, (_, weight) in zip(chains, queries)])


def _rank(weighted: list[tuple[str | None, float]]) -> list[str]:
    acc: dict[str, float] = {}
    for source, weight in weighted:
        if source:
            acc[source] = acc.get(source, 0.0) + weight
    return [s for s, _ in sorted(acc.items(), key=lambda kv: -kv[1])[:_SOURCES]]


def _input_copy_calls(trace: Trace) -> list:
    """Host calls that copy host-to-device (the loader's batch on its way to the GPU)."""
    device = {d.correlation: d for d in trace.device if d.kind == "memcpy"}
    return [c for c in trace.runtime if "Memcpy" in c.name and c.correlation in device
            and copy_kind(device[c.correlation].name).direction == "HtoD"]


def _row_regimes(trace: Trace, work: Work) -> tuple[np.ndarray, np.ndarray]:
    """Per device-work row: the index in REGIMES of what it is while it runs, and whether the bound of a
    compute kernel was read from its name (no FLOPs/bytes or no peak for it)."""
    costs = kernel_costs(trace)
    regime = np.full(len(work.ts), REGIMES.index(MEMORY), dtype=np.int8)
    compute_rows = work.cls == CLASSES.index(COMPUTE)
    named = np.array([kernel_kind(n) in _COMPUTE_KINDS for n in work.names], dtype=bool)
    by_name = compute_rows & ~costs.known
    compute_bound = np.where(costs.known, costs.compute_bound, named[work.name])
    regime[compute_rows & compute_bound] = REGIMES.index(COMPUTE_BOUND)
    regime[work.cls == CLASSES.index(COMMUNICATION)] = REGIMES.index(COMM)
    htod = np.array([copy_kind(n).direction == "HtoD" for n in work.names], dtype=bool)
    regime[(work.cls == CLASSES.index(MEMCPY)) & htod[work.name]] = REGIMES.index(INPUT)
    return regime, by_name


def _sentence(label: str, dominant: str, shares: dict[str, float], dur_us: float, sources: list[str]) -> str:
    rules = ", ".join(RULES[dominant])
    where = f" Where: {', '.join(sources)}." if sources else ""
    others = ", ".join(f"{LABELS[r]} {shares[r]:.0%}" for r in sorted(REGIMES, key=lambda r: -shares[r])
                       if r != dominant and shares[r] >= 0.05)
    return (f"{label[0].upper() + label[1:]} is bound by {LABELS[dominant]} "
            f"({shares[dominant]:.0%} of {_ms(dur_us)}"
            + (f"; then {others}" if others else "") + f"): {WHAT[dominant]}. Cure: {CURES[dominant]}."
            + (f" Read {rules}." if rules else "") + where)


def _ms(us: float) -> str:
    return f"{us / 1e3:.2f} ms" if us < 1e6 else f"{us / 1e6:.3f} s"
