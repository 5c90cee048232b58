"""What to collect for one test (`Plan`): counting ops needs only the profiler; the rest costs extra and
is opt-in. Which metric needs what comes from `perflint.measures.metrics` (`Metric.on_cpu`). No torch."""

from __future__ import annotations

from dataclasses import dataclass

from perflint.measures.budgets import BUDGET_METRICS
from perflint.measures.metrics import ALLOCATIONS, DYNAMO, FUNCTION_MODE, METRICS, NOT_MEASURED, PROFILER, RANKS


def _needing(how: str) -> frozenset[str]:
    return frozenset(m for m in BUDGET_METRICS if METRICS[m].on_cpu == how)


NEEDS_SITES, NEEDS_COMPILE = _needing(FUNCTION_MODE), _needing(DYNAMO)


@dataclass(frozen=True)
class Plan:
    sites: bool = True  # function mode: Python-level syncs/transfers and their source lines
    memory: bool = False  # profile_memory=True for peak_memory (on a CPU: the test's own thread only)
    compile: bool = False  # import torch._dynamo and track graph breaks / recompiles
    keep_trace: bool = False  # keep the profiler to export a Chrome trace afterwards
    comm: bool = False  # record_shapes: collective bytes by kind, comm/compute overlap, wall time (ranks)
    flops: bool = False  # torch.utils.flop_counter: FLOPs of the measured code (predicted scaling)

    @classmethod
    def choose(cls, asked: set[str], everything: bool = False, keep_trace: bool = False) -> "Plan":
        """Collect what the budget asks for, or everything (reports, baselines, the fixture).

        The function mode and torch.compile do not mix: dynamo traces through the mode (extra graph
        breaks) and guards on the mode stack (a recompile after a warm-up without it). So when a test
        budgets compile metrics but no syncs/transfers, the mode stays off even if everything is wanted.
        Peak memory is measured only when budgeted: torch records CPU allocations only in a profiler
        session bound to one thread, and every other count covers all threads of the process."""
        compile_asked = bool(asked & NEEDS_COMPILE)
        return cls(sites=bool(asked & NEEDS_SITES) or (everything and not compile_asked),
                   memory=bool(asked & _needing(ALLOCATIONS)), compile=compile_asked or everything,
                   keep_trace=keep_trace)

    def measured(self) -> set[str]:
        """The budget metrics this plan gives a value for."""
        ways = {PROFILER}
        for way, on in ((FUNCTION_MODE, self.sites), (ALLOCATIONS, self.memory), (DYNAMO, self.compile),
                        (RANKS, self.comm)):
            if on:
                ways.add(way)
        return {m for m in BUDGET_METRICS if METRICS[m].on_cpu in ways}

    def unavailable(self) -> dict[str, str]:
        """Why each budget metric this plan does not measure has no value."""
        return {m: NOT_MEASURED.get(METRICS[m].on_cpu, "not measured") for m in BUDGET_METRICS
                if m not in self.measured()}
