"""The `perf` fixture object: choose what is measured from inside the test, then read the figures.

A budgeted test is measured as a whole by default (the implicit segment the plugin starts around the
test call). The first `with perf.region():` throws that segment away, so setup before the region does
not count; `perf.warmup(fn, n)` pauses measurement around warm-up iterations; `perf.step()` ends one
iteration for per-step budgets. No pytest import.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from pytest_perf.measure import Recorder
from pytest_perf.plan import Plan
from pytest_perf.result import Result


class Perf:
    def __init__(self, plan: Plan):
        self.recorder = Recorder(plan)
        self._implicit = False  # the running segment is the plugin's whole-test one
        self._regions = 0

    # -- used by the plugin ---------------------------------------------------------------------
    def start_implicit(self) -> None:
        self.recorder.start()
        self._implicit = True

    def finish(self) -> Result:
        """Stop whatever still runs (always called, also when the test raised)."""
        self._implicit = False
        self.recorder.stop()
        return self.recorder.result

    # -- used by tests ----------------------------------------------------------------------------
    @contextmanager
    def region(self) -> Iterator["Perf"]:
        """Measure only the code in this block. Several regions add up; they do not nest."""
        rec = self.recorder
        if rec.running:
            if not self._implicit:
                raise RuntimeError("perf.region() blocks do not nest")
            rec.discard()
            self._implicit = False
        rec.start()
        self._regions += 1
        try:
            yield self
        finally:
            rec.stop()

    def warmup(self, fn: Callable[[], Any], n: int = 1) -> Any:
        """Call fn n times with measurement paused (compile, caches, lazy init); returns the last result."""
        rec = self.recorder
        paused = rec.running
        if paused:
            rec.stop()
        out = None
        try:
            for _ in range(n):
                out = fn()
        finally:
            if paused:
                rec.start()
        return out

    def step(self) -> None:
        """Mark the end of one iteration; per-step budgets check each marked step."""
        self.recorder.mark_step()

    @property
    def result(self) -> Result:
        if self.recorder.running:
            raise RuntimeError("perf.metrics is available after a `with perf.region():` block ends")
        if not self.recorder.result.segments:
            raise RuntimeError("nothing measured yet: wrap the code in `with perf.region():`")
        return self.recorder.result

    @property
    def metrics(self) -> dict[str, float | None]:
        """Measured figures by metric name (syncs, ops, kernels, transfers, ...); None = not measurable here."""
        return self.result.metrics

    @property
    def op_counts(self) -> dict[str, int]:
        """Calls of every dispatched op (e.g. "aten::cat"), nested calls included."""
        return dict(self.result.op_counts)

    @property
    def steps(self) -> list[dict[str, int]]:
        """Per marked step, the count metrics of that step."""
        return [dict(s) for s in self.result.steps]
