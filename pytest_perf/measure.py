"""Measure code: `Recorder.start()` / `stop()` bracket one segment; each stop adds the segment's counts
to `Recorder.result`. The parts, each in its module:

* `profiler`: the torch.profiler session (every thread; its chatter kept off stderr);
* `function_mode`: the Python-level calls the CPU profiler cannot see, and their source lines;
* `compile_counts`: torch.compile graph breaks and recompiles;
* `event_tree`: one walk of the session's events into counts, by `perflint.measures.events`;
* `gpu`: on a GPU, the CUDA trace's figures instead of the CPU counterparts.

No pytest import: the plugin, the fixture and the benchmark all use this module.
"""

from __future__ import annotations

import gc
from time import perf_counter_ns
from typing import Any, Callable

import torch

from pytest_perf import event_tree, gpu, profiler
from pytest_perf.attribution import skip_library
from pytest_perf.compile_counts import CompileCounts
from pytest_perf.function_mode import FunctionMode
from pytest_perf.plan import Plan
from pytest_perf.python_counts import PythonCounts
from pytest_perf.result import Result

skip_library(torch.__file__)


class Recorder:
    """Measures one or more segments of code; `result` holds the sum."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.result = self._fresh()
        self._prof = None
        self._undo: list[Callable[[], None]] = []
        self._counts = PythonCounts()
        self._function_mode = FunctionMode(self._counts, lambda: self.running) if plan.sites else None
        self._compile = CompileCounts(self._counts) if plan.compile else None
        self._gpu = gpu.available()
        self._flop_counter = None
        self._started_ns = 0

    def _fresh(self) -> Result:
        return Result(measured=self.plan.measured(), unavailable=self.plan.unavailable())

    @property
    def running(self) -> bool:
        return self._prof is not None

    def start(self) -> None:
        if self.running:
            raise RuntimeError("measurement already running")
        self._counts.clear()
        try:
            if self._compile is not None:
                self._compile.start(self.result, self._undo)
            if self.plan.memory:
                gc.collect()  # garbage freed mid-region by the cycle collector would lower the peak at random
            if self._gpu:  # pragma: no cover - untested here: no GPU on the CI that built this
                gpu.reset_peak_memory()
            self._prof = profiler.start(self.plan.memory, shapes=self.plan.comm, gpu=self._gpu)
            self._started_ns = perf_counter_ns()
            if self.plan.flops:
                from torch.utils.flop_counter import FlopCounterMode

                self._flop_counter = FlopCounterMode(display=False)
                self._flop_counter.__enter__()
            if self._function_mode is not None:
                self._function_mode.start(self._undo)
        except BaseException:
            self._teardown()
            raise

    def stop(self) -> None:
        """Stop the profiler and restore every global setting, then add this segment's counts."""
        if not self.running:
            return
        prof = self._prof
        self.result.wall_ns += perf_counter_ns() - self._started_ns
        try:
            if self._function_mode is not None:
                self._function_mode.stop()
            if self._flop_counter is not None:
                self._flop_counter.__exit__(None, None, None)
                self.result.flops = (self.result.flops or 0) + self._flop_counter.get_total_flops()
        finally:
            self._flop_counter = None
            try:
                roots = profiler.stop(prof)
            finally:
                self._prof = None
                if self._compile is not None:
                    self._compile.stop()
                self._teardown()
        event_tree.add_segment(roots, self.plan, self._counts, self.result)
        if self._compile is not None:
            self._compile.add_to(self.result)
        if self._gpu:  # pragma: no cover - needs a GPU
            gpu.add_figures(prof, self.result)
        if self.plan.keep_trace:
            self.result.traces.append(prof)

    def discard(self) -> None:
        """Stop without keeping anything (the region replaces the implicit whole-test segment)."""
        if not self.running:
            return
        keep = self.result
        self.result = self._fresh()
        try:
            self.stop()
        finally:
            self.result = keep

    def mark_step(self) -> None:
        """End the current step (call at the end of each iteration)."""
        if self.running:
            profiler.mark(profiler.STEP)
            self._counts.step += 1

    def _teardown(self) -> None:
        while self._undo:
            self._undo.pop()()


def measure(fn: Callable[[], Any], plan: Plan | None = None) -> Result:
    """Run fn once under a fresh Recorder: the simplest use, for scripts and the benchmark."""
    rec = Recorder(plan or Plan.choose(set(), everything=True))
    rec.start()
    try:
        fn()
    finally:
        rec.stop()
    return rec.result
