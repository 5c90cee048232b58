"""Profiler steps (`ProfilerStep#N` annotations) and selecting a step range of a trace.

Step N runs from the start of ProfilerStep#N to the start of the next step (so work between two
annotations belongs to the earlier step); the last step ends where its annotation ends. Host events
belong to the step their start falls in; device work belongs to the step of the runtime call that
launched it (matched by correlation id), even when it runs after the step ended on the host. Device
events with no launching call in the trace fall back to their own start time.

A step is *partial* when some of its launches have no recorded device work, i.e. the trace stopped
before the GPU finished it (typical for the last step: this is why HTA drops the last step). Partial
steps are reported as such; they are never silently dropped, and `--steps` includes them when asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from operator import attrgetter

from perflint.trace.model import Trace
from perflint.trace.names import host_names, launch_calls

_STEP = re.compile(r"ProfilerStep\s*#\s*(\d+)")
_CORRELATION = attrgetter("correlation")


@dataclass(frozen=True)
class Step:
    """One ProfilerStep's span on the host clock."""

    number: int
    start: float
    end: float
    unmatched_launches: int = 0  # launch calls in the step whose device work is missing from the trace

    @property
    def partial(self) -> bool:
        return self.unmatched_launches > 0


class StepError(ValueError):
    """A step range that the trace cannot satisfy (no ProfilerStep annotations, empty selection)."""


def parse_range(text: str) -> tuple[int | None, int | None]:
    """"A:B" (inclusive), "A:", ":B" or "A" -> (first, last); raises ValueError on anything else."""
    m = re.fullmatch(r"\s*(\d*)\s*(?::\s*(\d*))?\s*", text)
    if not m or (m.group(2) is None and not m.group(1)) or text.strip() == ":":
        raise ValueError(f"--steps expects A:B, A:, :B or A with step numbers, got {text!r}")
    first = int(m.group(1)) if m.group(1) else None
    last = first if m.group(2) is None else (int(m.group(2)) if m.group(2) else None)
    if first is not None and last is not None and last < first:
        raise ValueError(f"--steps {text!r}: the last step is before the first")
    return first, last


def find_steps(trace: Trace) -> list[Step]:
    """The trace's steps in time order, with their windows and how many launches lack device work."""
    marks = {}
    step_names = {n for n in host_names(trace) if n.startswith("ProfilerStep")}  # each distinct name once
    for op in [op for op in trace.host_ops if op.name in step_names] if step_names else ():
        if op.kind != "python":
            m = _STEP.match(op.name)
            if m and int(m.group(1)) not in marks:
                marks[int(m.group(1))] = (op.ts, op.ts + op.dur)
    ordered = sorted(marks.items(), key=lambda kv: kv[1][0])
    windows = []
    for k, (number, (start, end)) in enumerate(ordered):
        windows.append((number, start, ordered[k + 1][1][0] if k + 1 < len(ordered) else end))
    if not windows:
        return []
    recorded = set(map(_CORRELATION, trace.device))
    missing = [0] * len(windows)
    for ts in [call.ts for call in launch_calls(trace) if call.correlation not in recorded]:
        k = _window_index(windows, ts)
        if k is not None:
            missing[k] += 1
    return [Step(n, s, e, missing[k]) for k, (n, s, e) in enumerate(windows)]


def _window_index(windows: list[tuple[int, float, float]], ts: float) -> int | None:
    for k, (_, start, end) in enumerate(windows):
        if start <= ts < end:
            return k
    return None


def select(trace: Trace, first: int | None, last: int | None) -> Trace:
    """The part of `trace` in steps first..last (None: open end, i.e. from the trace start / to its end)."""
    steps = find_steps(trace)
    if not steps:
        raise StepError("the trace has no ProfilerStep#N annotations; --steps needs them")
    chosen = [s for s in steps if (first is None or s.number >= first) and (last is None or s.number <= last)]
    if not chosen:
        have = ", ".join(str(s.number) for s in steps)
        raise StepError(f"no step in the range {first if first is not None else ''}:"
                        f"{last if last is not None else ''} (the trace has steps {have})")
    lo = float("-inf") if first is None else chosen[0].start
    hi = float("inf") if last is None else chosen[-1].end
    return window(trace, lo, hi)


def window(trace: Trace, lo: float, hi: float, orphans: bool = True) -> Trace:
    """Host events starting in [lo, hi) and the device work launched from there. `orphans`: keep device
    work whose launch call is not in the trace (launched before profiling began) by its own start."""
    runtime = [c for c in trace.runtime if lo <= c.ts < hi]
    launched = {c.correlation for c in runtime}
    all_launches = {c.correlation for c in trace.runtime}
    device = [d for d in trace.device if d.correlation in launched
              or (orphans and d.correlation not in all_launches and lo <= d.ts < hi)]
    host = [h for h in trace.host_ops if lo <= h.ts < hi]
    return replace(trace, host_ops=host, runtime=runtime, device=device)
