"""One torch.profiler session per measured segment: start it on every thread, stop it without the
profiler's chatter on stderr, notice when another profiler ended it, export it as a Chrome trace.

The plugin's own profiler ranges (names below) mark what the event tree walk needs to know: where a
watched Python call ran, where a step ended, that the session is still ours."""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager

import torch
from torch.autograd.profiler import record_function

SITE = "pytest_perf::site#"  # + N: a watched Python call (PythonCounts.sites[N]); ops inside are its
HOST = "pytest_perf::host"  # a call torch.utils.data makes on its own host tensors: no sync inside
STEP = "pytest_perf::step"  # perf.step()
START = "pytest_perf::start"  # first in every segment: a segment without it was ended by another profiler

# What the profiler's C++ prints on fd 2 at every start and stop (no log level silences it), and the
# warning it adds when another profiler ended our session (reported as a ProfilerConflict instead).
_CHATTER = (b"USDT:", b"disableProfiler called but no active profiling session found")


class ProfilerConflict(RuntimeError):
    """Another torch profiler ran at the same time: one process has one profiler."""


def start(memory: bool, shapes: bool, gpu: bool):
    """A started session. It records every thread of the process, except when it must record CPU
    allocations (`memory` without a GPU): torch reports those only to a session bound to one thread."""
    if torch._C._autograd._profiler_enabled():
        raise ProfilerConflict("a torch profiler is already running; pytest_perf needs the only one in the "
                               "process (stop it, or drop the perf_budget marker from this test)")
    activities = [torch.profiler.ProfilerActivity.CPU]
    if gpu:  # untested here: no GPU on the CI that built this
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    cpu_memory = memory and not gpu
    prof = torch.profiler.profile(activities=activities, profile_memory=cpu_memory, record_shapes=shapes,
                                  experimental_config=None if cpu_memory else _all_threads())
    with _without_chatter():
        prof.start()
    mark(START)
    return prof


def stop(prof) -> list:
    """Stop the session; returns the roots of its event tree."""
    with _without_chatter():
        prof.stop()
    roots = prof.profiler.kineto_results.experimental_event_tree()
    if not any(node.name == START for node in roots):
        raise ProfilerConflict("the test started its own torch profiler while pytest_perf was measuring, "
                               "which ended pytest_perf's session; use one or the other (the perf fixture's "
                               "`perf.metrics` gives the counts, --perf-trace-dir the trace)")
    return roots


def mark(name: str) -> None:
    """An empty range: a point in time the walk of the event tree finds."""
    with record_function(name):
        pass


def export_traces(traces: list, path_stem: str) -> list[str]:
    """Write each kept session as Chrome trace JSON (`<stem>.pt.trace.json`, which Perfetto and
    TensorBoard's profiler plugin both open); returns the paths."""
    paths = []
    for i, prof in enumerate(traces):
        path = f"{path_stem}{'' if i == 0 else f'-{i + 1}'}.pt.trace.json"
        prof.export_chrome_trace(path)
        paths.append(path)
    return paths


def _all_threads():
    """The profiler option that records ops on every thread of the process, not only on the one that
    started it (torch >= 2.7); None where this torch lacks it."""
    try:
        return torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
    except (AttributeError, TypeError):  # pragma: no cover - older torch
        return None


@contextmanager
def _without_chatter():
    """Send fd 2 to a temporary file for the call and pass on every line but the profiler's chatter,
    which would otherwise break pytest's progress line and repeat under every failure's stderr."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2: nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [line for line in tmp.read().splitlines(keepends=True)
                    if not any(noise in line for noise in _CHATTER)]
            if kept:
                os.write(2, b"".join(kept))
