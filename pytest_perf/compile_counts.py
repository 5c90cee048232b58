"""torch.compile graph breaks and recompiles during a segment, with the lines that caused them.

Counts come from dynamo's own counters (graph breaks) and from its recompile check (recompiles, counted
through `PythonCounts` with the compiled function's line); the line of each graph break comes from the
hook where dynamo logs it. torch._dynamo is imported only when a compile metric is measured (~1 s)."""

from __future__ import annotations

from collections import Counter
from typing import Callable

from pytest_perf.attribution import Site
from pytest_perf.python_counts import PythonCounts
from pytest_perf.result import Result


class CompileCounts:
    def __init__(self, counts: PythonCounts):
        self.counts = counts
        self._before: tuple[int, Counter] | None = None
        self._after: tuple[int, Counter] | None = None
        self._break_sites: list[Site] = []

    def start(self, result: Result, undo: list[Callable[[], None]]) -> None:
        import torch._dynamo  # noqa: F401
        from torch._dynamo import convert_frame

        self._before, self._after = _snapshot(), None
        original = getattr(convert_frame, "get_and_maybe_log_recompilation_reasons", None)
        if original is None:
            result.unavailable["recompiles"] = "this torch version has no recompile hook"
            result.measured.discard("recompiles")
            return

        def recompile_reasons(cache_entries, frame, *args, **kwargs):
            reasons = original(cache_entries, frame, *args, **kwargs)
            code = frame.f_code
            why = reasons[0].splitlines()[0] if reasons else "guard failed"
            self.counts.count("recompiles", Site(code.co_filename, code.co_firstlineno, f"recompile: {why}"),
                              "PFL404")
            return reasons

        convert_frame.get_and_maybe_log_recompilation_reasons = recompile_reasons
        undo.append(lambda: setattr(convert_frame, "get_and_maybe_log_recompilation_reasons", original))
        self._track_graph_break_lines(undo)

    def stop(self) -> None:
        if self._before is not None and self._after is None:
            self._after = _snapshot()

    def add_to(self, result: Result) -> None:
        """This segment's graph breaks, each at its line when dynamo said where, else by reason."""
        if self._before is None or self._after is None:
            return
        (before, reasons_before), (after, reasons_after) = self._before, self._after
        self._before = self._after = None
        result.counts["graph_breaks"] += after - before
        if self._break_sites:
            for site in self._break_sites:
                result.hits[("graph_breaks", site, "PFL402")] += 1
        else:
            for reason, n in (reasons_after - reasons_before).items():
                result.hits[("graph_breaks", Site("<dynamo>", 0, f"graph break: {reason}"), "PFL402")] += n
        self._break_sites.clear()

    def _track_graph_break_lines(self, undo: list[Callable[[], None]]) -> None:
        """Only for attribution: the number of breaks stays with dynamo's counters."""
        import torch
        from torch._dynamo import symbolic_convert

        cls = getattr(symbolic_convert, "InstructionTranslatorBase", None)
        original = getattr(cls, "log_graph_break", None)
        if original is None:
            return

        def log_graph_break(tx, code_options, reason, exc, *args, **kwargs):
            try:
                if not getattr(exc, "logged", False):
                    stack = getattr(exc, "real_stack", None) or torch._guards.TracingContext.extract_stack()
                    if stack:
                        why = (str(exc) or str(reason)).strip().splitlines()[0]
                        self._break_sites.append(Site(stack[-1].filename, stack[-1].lineno, f"graph break: {why}"))
            except Exception:  # attribution is best effort; never break compilation
                pass
            return original(tx, code_options, reason, exc, *args, **kwargs)

        cls.log_graph_break = log_graph_break
        undo.append(lambda: setattr(cls, "log_graph_break", original))


def _snapshot() -> tuple[int, Counter]:
    from torch._dynamo.utils import counters

    breaks = Counter({k.splitlines()[0]: v for k, v in counters["graph_break"].items()})
    return sum(counters["graph_break"].values()), breaks
