"""Host synchronisations: calls that block the CPU until device work is done, each attributed to the
aten op (and Python line, when the trace has stacks) that caused it and to the perflint rule naming it.

A sync is one of: a cuda*/hip*Synchronize call or a synchronous memcpy API (the `gpu_runtime` SYNC rows
of perflint.measures.events.EVENTS); an async device-to-host copy into pageable memory (the driver makes it
blocking); a `cuda_sync` device record with no runtime call in the trace. A pageable copy and a
Synchronize call under the same innermost aten op (what `.item()` does: cudaMemcpyAsync +
cudaStreamSynchronize) are one sync, not two; `cuda_sync` records of a counted call add nothing.
The rule is the one of the outermost aten op the event table knows (aten::is_nonzero -> PFL105), else
of the copy the op made before syncing (a blocking HtoD copy -> PFL201; but a copy of the batch the
data loader just produced, with no kernel launched since, is the loader's: PFL503 (pin_memory) when the
host memory is pageable, else PFL203 (non_blocking)), else of the call itself.
An op that launches no device work (e.g. aten::item on a CPU tensor) is never a sync here.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass
from operator import itemgetter

from perflint.measures.events import lookup
from perflint.trace.hostindex import enclosing
from perflint.trace.model import HostOp, RuntimeCall, Trace
from perflint.trace.names import LOADER, copy_kind, host_names, is_sync_call, source_line, sync_rule

_PAGEABLE_COPY_RULE = lookup("Memcpy DtoH", "gpu_memcpy")


@dataclass
class SyncEvent:
    """One host call that waited for the device, with the op and source line around it."""

    call: str
    at_us: float  # from the first event of the trace
    wait_us: float  # how long the host call blocked
    op: str | None  # innermost aten op around the call
    top_op: str | None  # outermost aten op around the call
    source: str | None  # "file.py:line" when the trace has Python stacks
    rule: str | None


def sync_figures(trace: Trace, t0: float) -> list[SyncEvent]:
    device = {d.correlation: d for d in trace.device if d.correlation >= 0}
    calls = []  # (RuntimeCall, label, is_copy)
    copies: dict[object, list[tuple[float, str]]] = defaultdict(list)  # per thread: (start, copy name)
    for call in _candidates(trace):
        if is_sync_call(call.name):
            calls.append((call, call.name, False))
        elif "Memcpy" in call.name:
            d = device.get(call.correlation)
            if d is not None and d.kind == "memcpy":
                copies[call.tid].append((call.ts, d.name))
                if copy_kind(d.name) == ("DtoH", "pageable"):
                    calls.append((call, f"{call.name} DtoH to pageable memory", True))
    for found in copies.values():
        found.sort()
    loader = LoaderBatches(trace)
    parents = enclosing(trace, [(c.tid, c.ts, c.ts + c.dur) for c, _, _ in calls])
    synced_ops = {id(_innermost_op(p)) for (_, _, copy), p in zip(calls, parents) if not copy and _innermost_op(p)}
    events = []
    for (call, label, copy), chain in zip(calls, parents):
        inner = _innermost_op(chain)
        if copy and inner is not None and id(inner) in synced_ops:
            continue
        ops = [h for h in chain if h.kind == "op"]
        default = _PAGEABLE_COPY_RULE.rule if copy and _PAGEABLE_COPY_RULE else sync_rule(call.name)
        rule = _rule(ops) or _copy_rule(copies.get(call.tid, []), inner, call.ts, loader, call.tid) or default
        events.append(SyncEvent(label, call.ts - t0, call.dur, inner.name if inner else None,
                                ops[0].name if ops else None, source_line(chain), rule))
    waits = [d for d in trace.device if d.kind == "sync"]
    counted = {c.correlation for c, _, _ in calls}
    runtime_ids = {c.correlation for c in trace.runtime} if waits else set()
    for d in waits:
        if d.correlation not in counted and d.correlation not in runtime_ids:
            events.append(SyncEvent(f"cuda_sync {d.name}", d.ts - t0, d.dur, None, None, None, sync_rule(
                "cudaDeviceSynchronize")))
    events.sort(key=lambda s: s.at_us)
    return events


def _candidates(trace: Trace) -> list[RuntimeCall]:
    """The runtime calls that may sync (blocking calls and copies), in file order; each distinct name
    is tested once instead of every call."""
    wanted = {n for n in set(map(_NAME, trace.runtime)) if "Memcpy" in n or is_sync_call(n)}
    return [c for c in trace.runtime if c.name in wanted]


_NAME = itemgetter(0)


def _copy_rule(copies: list[tuple[float, str]], op: HostOp | None, before: float, loader: "LoaderBatches",
               tid: object) -> str | None:
    """The rule of the last copy the op made before syncing: a blocking HtoD input copy is PFL201, a
    blocking copy of a loader batch PFL503 (pageable memory) or PFL203."""
    if op is None:
        return None
    k = bisect.bisect_right(copies, (before, "\uffff")) - 1
    if k >= 0 and copies[k][0] >= op.ts:
        ts, name = copies[k]
        return copy_rule(name, loader, tid, ts)
    return None


def copy_rule(name: str, loader: "LoaderBatches", tid: object, ts: float) -> str | None:
    """The rule of a host<->device copy started at `ts` on thread `tid`: the event table's (HtoD PFL201,
    DtoH PFL103), but the loader's for the batch a DataLoader just produced."""
    kind = copy_kind(name)
    if kind.direction == "HtoD" and loader.just_loaded(tid, ts):
        return "PFL503" if kind.host_memory == "pageable" else "PFL203"
    m = lookup(name, "gpu_memcpy")
    return m.rule if m is not None else None


class LoaderBatches:
    """Whether a copy moves the batch a DataLoader just produced: a loader span (names.LOADER) on the
    thread ended before it, and no kernel was launched on the thread in between."""

    def __init__(self, trace: Trace):
        names = {n for n in host_names(trace) if LOADER.search(n)}
        self.ends: dict[object, list[float]] = defaultdict(list)
        for h in trace.host_ops if names else ():  # most traces have no loader spans: skip the pass
            if h.name in names:
                self.ends[h.tid].append(h.ts + h.dur)
        self.launches: dict[object, list[float]] = defaultdict(list)
        if self.ends:
            for c in trace.runtime:
                if "LaunchKernel" in c.name and c.tid in self.ends:
                    self.launches[c.tid].append(c.ts)
        for found in (*self.ends.values(), *self.launches.values()):
            found.sort()

    def just_loaded(self, tid: object, ts: float) -> bool:
        ends = self.ends.get(tid)
        if not ends:
            return False
        k = bisect.bisect_right(ends, ts) - 1
        if k < 0:
            return False
        launches = self.launches.get(tid, [])
        return bisect.bisect_left(launches, ends[k]) == bisect.bisect_left(launches, ts)


def _innermost_op(chain: list[HostOp]) -> HostOp | None:
    for h in reversed(chain):
        if h.kind == "op":
            return h
    return None


def _rule(ops: list[HostOp]) -> str | None:
    """The outermost op the event table knows: `if t:` is PFL105 (aten::is_nonzero), not the PFL101 of the
    aten::item inside it."""
    for op in ops:
        m = lookup(op.name, "cpu_op")
        if m is not None and m.rule:
            return m.rule
    return None
