"""Start and duration columns of a trace's event lists (host_ops, runtime, device), built once per trace
and shared: each column is a pass over 10^4-10^6 tuples, which several figures would otherwise repeat."""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from perflint.trace.model import Trace

_TS, _DUR = itemgetter(1), itemgetter(2)  # HostOp, RuntimeCall and DeviceOp alike


def times(trace: Trace, group: str) -> tuple[np.ndarray, np.ndarray]:
    """(ts, dur) of `getattr(trace, group)` as float arrays, in list order."""
    key = "times " + group
    found = trace.cache.get(key)
    if found is None:
        events = getattr(trace, group)
        n = len(events)
        found = trace.cache[key] = (np.fromiter(map(_TS, events), float, n), np.fromiter(map(_DUR, events), float, n))
    return found


def first_start(trace: Trace, group: str):
    """The earliest `ts` of a non-empty group, as recorded (an int stays an int): min(e.ts for e in group)."""
    return getattr(trace, group)[int(np.argmin(times(trace, group)[0]))].ts


def last_end(trace: Trace, group: str):
    """The latest `ts + dur` of a non-empty group, as recorded: max(e.ts + e.dur for e in group)."""
    ts, dur = times(trace, group)
    last = getattr(trace, group)[int(np.argmax(ts + dur))]
    return last.ts + last.dur
