"""On a GPU, kernels, transfers and syncs come from the CUDA trace, read by `perflint trace`, instead of
the CPU counterparts; the peak memory from the CUDA allocator. Untested on this CPU-only CI beyond its
glue (tests/test_pytest_perf_measure.py). The trace reader is imported only here, only on a GPU."""

from __future__ import annotations

import os
import tempfile

import torch

from perflint.measures.budgets import BUDGET_METRICS
from pytest_perf.result import Result


def available() -> bool:
    return torch.cuda.is_available()


def reset_peak_memory() -> None:  # pragma: no cover - needs a GPU
    torch.cuda.reset_peak_memory_stats()


def add_figures(prof, result: Result) -> None:
    """Export the segment, read it with perflint.trace and let its figures replace the CPU counts."""
    from perflint.trace import load_trace, metrics as trace_metrics

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        figures = trace_metrics(load_trace(path))
    figures["peak_memory"] = torch.cuda.max_memory_allocated()
    result.gpu.update(figures)
    result.measured |= {k for k, v in figures.items() if v is not None and k in BUDGET_METRICS}
