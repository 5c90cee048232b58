"""What was measured for one test (`Result`), summed over its segments (regions). No torch import."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from perflint.measures.budgets import BUDGET_METRICS
from perflint.measures.metrics import METRICS, PER_STEP


@dataclass
class Result:
    measured: set[str] = field(default_factory=set)
    counts: Counter = field(default_factory=Counter)
    peak_memory: int = 0
    op_counts: Counter = field(default_factory=Counter)  # every dispatched op, at any depth
    top_ops: Counter = field(default_factory=Counter)  # top-level ops only: what `ops` counts
    hits: Counter = field(default_factory=Counter)  # (metric, Site, rule) -> count
    steps: list[Counter] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # metric -> why it was not measured
    gpu: dict[str, float | None] = field(default_factory=dict)
    traces: list[Any] = field(default_factory=list)
    segments: int = 0
    # With Plan.comm (ranks of a world_size test): collectives and bytes by kind, time in communication
    # and the part of it that overlapped computation, wall time; with Plan.flops, FLOPs.
    comm_counts: Counter = field(default_factory=Counter)
    comm_kind_bytes: Counter = field(default_factory=Counter)
    comm_ns: int = 0
    comm_overlap_ns: int = 0
    wall_ns: int = 0
    flops: int | None = None

    @property
    def metrics(self) -> dict[str, float | None]:
        """Measured figures by metric name; None where not measured (see `reasons`)."""
        out: dict[str, float | None] = dict.fromkeys(BUDGET_METRICS)
        for m in self.measured:
            out[m] = self.counts[m]
        if "peak_memory" in self.measured:
            out["peak_memory"] = self.peak_memory
        if "comm_bytes" in self.measured:
            out["comm_bytes"] = sum(self.comm_kind_bytes.values())
            out["comm_overlap"] = self.comm_overlap_ns / self.comm_ns if self.comm_ns else None
        out.update({k: v for k, v in self.gpu.items() if v is not None})
        return out

    def reasons(self) -> dict[str, str]:
        """Why a metric has no value: not measured here, or measured over nothing."""
        return {**{m: METRICS[m].empty for m in self.measured if METRICS[m].empty}, **self.unavailable}

    def worst_step(self) -> dict[str, float | None]:
        """Per metric, the largest value over the marked steps: what a per-step budget checks."""
        out: dict[str, float | None] = dict.fromkeys(BUDGET_METRICS)
        for m in PER_STEP:
            if m in self.measured and self.steps:
                out[m] = max(s[m] for s in self.steps)
        return out
