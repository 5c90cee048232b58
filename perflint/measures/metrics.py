"""Every metric by name: its unit, how pytest_perf measures it on a CPU, and why a value can be missing.

Budget keys (`budgets.KEYS`) name these metrics; the plugin and `perflint trace` derive their metric
lists, baselines and "skip" reasons from this table, so a metric is spelled out once.
"""

from __future__ import annotations

from typing import NamedTuple


# How pytest_perf gets a metric on a CPU-only machine (`Metric.on_cpu`).
PROFILER = "profiler"  # the CPU profiler's aten ops
FUNCTION_MODE = "function mode"  # Python-level calls seen by a TorchFunctionMode, with their source lines
DYNAMO = "dynamo"  # torch.compile's counters and recompile hook
ALLOCATIONS = "allocations"  # the profiler's [memory] events
RANKS = "ranks"  # a world_size=N test's ranks
GPU_ONLY = ""  # no CPU counterpart

# Why pytest_perf has no value for a metric that was not measured, by how it would have been measured.
NOT_MEASURED = {
    GPU_ONLY: "needs a GPU",
    RANKS: "not measured by pytest_perf outside world_size=N tests",
    ALLOCATIONS: "measured only in tests that budget max_peak_memory",
    FUNCTION_MODE: "not measured: the function mode is off while this test budgets torch.compile metrics",
}
# Why `perflint trace` has no value for a metric that comes from device events.
NO_DEVICE_EVENTS = "the trace has no device events (CPU-only)"


class Metric(NamedTuple):
    """A measured quantity, its unit and how each tool measures it."""

    name: str
    unit: str  # "count", "bytes" or "ratio"
    on_cpu: str  # how pytest_perf measures it on a CPU (a constant above)
    recorded: bool = False  # a count that is the same on every run: baselines keep it
    per_step: bool = False  # counted per perf.step() iteration
    from_device: bool = False  # `perflint trace` reads it from device events
    not_in_trace: str = ""  # why a trace can lack it even with device events
    empty: str = ""  # why it has no value although measured (a ratio of nothing)

    @property
    def gpu_only(self) -> bool:
        return self.on_cpu == GPU_ONLY


METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric("syncs", "count", FUNCTION_MODE, recorded=True, per_step=True, from_device=True),
        Metric("ops", "count", PROFILER, recorded=True, per_step=True),
        Metric("kernels", "count", PROFILER, recorded=True, per_step=True, from_device=True),
        Metric("transfers", "count", FUNCTION_MODE, recorded=True, per_step=True, from_device=True),
        Metric("transfer_bytes", "bytes", FUNCTION_MODE, per_step=True, from_device=True,
               not_in_trace="the trace does not record the size of every copy"),
        Metric("graph_breaks", "count", DYNAMO, recorded=True,
               not_in_trace="a profiler trace does not record torch.compile graph breaks"),
        Metric("recompiles", "count", DYNAMO, recorded=True,
               not_in_trace="a profiler trace does not record torch.compile recompilations"),
        Metric("peak_memory", "bytes", ALLOCATIONS,
               not_in_trace="the trace has no GPU [memory] events (profile_memory=True)"),
        Metric("queue_overlap", "ratio", GPU_ONLY, from_device=True,
               not_in_trace="no launch call is correlated with device work"),
        Metric("collectives", "count", PROFILER, recorded=True, per_step=True),
        Metric("comm_bytes", "bytes", RANKS, not_in_trace="collective kernels carry no message sizes in this trace"),
        Metric("comm_overlap", "ratio", RANKS, not_in_trace="no communication kernels", empty="no collective ran"),
        # What bounds a step, as shares of its wall time (perflint.trace.bounds, from a device trace).
        Metric("overhead_share", "ratio", GPU_ONLY, from_device=True),
        Metric("input_share", "ratio", GPU_ONLY, from_device=True),
        Metric("memory_bound_share", "ratio", GPU_ONLY, from_device=True),
        Metric("compute_bound_share", "ratio", GPU_ONLY, from_device=True),
        Metric("exposed_comm_share", "ratio", GPU_ONLY, from_device=True),
        Metric("sync_share", "ratio", GPU_ONLY, from_device=True),
        # Scaling: judged from a model or from runs at two world sizes (perflint.scaling), never one trace.
        Metric("predicted_efficiency", "ratio", RANKS),
        Metric("scaling_efficiency", "ratio", RANKS),
    ]
}
RECORDED = tuple(m.name for m in METRICS.values() if m.recorded)
PER_STEP = tuple(m.name for m in METRICS.values() if m.per_step)


def unit(metric: str) -> str:
    """A metric's unit; "count" for names outside the table (an op name of an `ops={...}` cap)."""
    m = METRICS.get(metric)
    return m.unit if m else "count"


def unavailable_in_trace(has_device: bool) -> dict[str, str]:
    """Why `perflint trace` can have no value for each metric, for the "skip" verdicts."""
    return {m.name: NO_DEVICE_EVENTS if m.from_device and not has_device else m.not_in_trace
            for m in METRICS.values() if (m.from_device and not has_device) or m.not_in_trace}


# Size units a budget may be written in (`'24 MB'`, `'1.5 GiB'`), and their bytes.
SIZE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
              "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def format_value(unit: str, value: float | None, size_unit: str | None = None) -> str:
    """A measured value or limit for reports; sizes in `size_unit` when given (the unit the user wrote)."""
    if value is None:
        return "-"
    if unit == "ratio":
        return f"{value:.1%}"
    if unit == "bytes" and size_unit and size_unit.lower() in SIZE_UNITS:
        return f"{value / SIZE_UNITS[size_unit.lower()]:.4g} {size_unit}"
    if unit == "bytes":
        for name, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if value >= size:
                return f"{value / size:.1f} {name}"
        return f"{int(value)} B"
    return f"{value:g}"
