"""The one vocabulary of performance budgets.

The pytest marker (`@pytest.mark.perf_budget(max_syncs=0)`), `perflint trace --budget max_syncs=0`,
budget files and every report use these keys and nothing else. A key names a metric (`metrics`; see
`events` for how profiler events become metrics) and a bound: `max_*` keys fail when the measured
value is above the limit, `min_*` keys when it is below.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple

from perflint.measures.metrics import METRICS, SIZE_UNITS, format_value


class BudgetError(ValueError):
    """A budget that names an unknown key, has the wrong type or an impossible value."""


class BudgetKey(NamedTuple):
    """A budget key (`max_syncs`) and the metric it bounds."""

    key: str
    metric: str  # a name of metrics.METRICS
    bound: str  # "max" or "min"
    help: str

    @property
    def unit(self) -> str:  # "count", "bytes" or "ratio"
        return METRICS[self.metric].unit

    @property
    def gpu_only(self) -> bool:
        return METRICS[self.metric].gpu_only


KEYS: dict[str, BudgetKey] = {
    k.key: k
    for k in [
        BudgetKey("max_syncs", "syncs", "max",
                  "device-to-host synchronizations (or, on the CPU, the ops and calls that would force one)"),
        BudgetKey("max_ops", "ops", "max", "dispatched compute ops (top-level aten ops)"),
        BudgetKey("max_kernels", "kernels", "max",
                  "device kernels launched; on the CPU the count of dispatched compute ops"),
        BudgetKey("max_transfers", "transfers", "max", "host<->device copies"),
        BudgetKey("max_transfer_bytes", "transfer_bytes", "max", "bytes copied host<->device"),
        BudgetKey("max_graph_breaks", "graph_breaks", "max", "torch.compile graph breaks"),
        BudgetKey("max_recompiles", "recompiles", "max", "torch.compile recompilations"),
        BudgetKey("max_peak_memory", "peak_memory", "max", "peak bytes allocated during the region"),
        BudgetKey("min_overlap", "queue_overlap", "min",
                  "share of GPU busy time during which the CPU had already queued the next work"),
        BudgetKey("max_collectives", "collectives", "max",
                  "collective communication calls (all_reduce, broadcast, ...), each counted once"),
        BudgetKey("max_comm_bytes", "comm_bytes", "max", "bytes sent by collectives"),
        BudgetKey("min_comm_overlap", "comm_overlap", "min", "share of communication time hidden behind computation"),
        # What bounds the step: shares of wall time (perflint.trace.bounds); they add up to 1 with "other".
        BudgetKey("max_overhead_share", "overhead_share", "max",
                  "share of step time the GPU idles while the host runs Python or launches work"),
        BudgetKey("max_input_share", "input_share", "max",
                  "share of step time spent on data loading and host-to-device input copies"),
        BudgetKey("max_memory_bound_share", "memory_bound_share", "max",
                  "share of step time in memory-bandwidth-bound kernels"),
        BudgetKey("min_compute_bound_share", "compute_bound_share", "min",
                  "share of step time in compute-bound kernels"),
        BudgetKey("max_exposed_comm_share", "exposed_comm_share", "max",
                  "share of step time in communication that no computation hides"),
        BudgetKey("max_sync_share", "sync_share", "max",
                  "share of step time lost to host syncs (the GPU drains, then waits for the host)"),
    ]
}
# The metrics one measurement (a test, a trace) gives a value or a reason for: those KEYS name.
BUDGET_METRICS = tuple(k.metric for k in KEYS.values())

# Scaling efficiency: judged from a model or from runs at two world sizes, never from one trace, so
# they are not metrics of `perflint trace` (its `metrics()` gives every key of KEYS). See perflint.scaling.
PREDICTED_SCALING, MEASURED_SCALING = "min_predicted_efficiency", "min_scaling_efficiency"
SCALING_KEYS: dict[str, BudgetKey] = {
    k.key: k
    for k in [
        BudgetKey(PREDICTED_SCALING, "predicted_efficiency", "min",
                  "throughput at world_size ranks over world_size x one rank, predicted by perflint.scaling "
                  "from this rank's FLOPs, collectives and overlap; a dict: {'min': 0.8, 'world_size': 8, "
                  "'link_gbps': 100, 'device_tflops': 50, 'latency_us': 5}"),
        BudgetKey(MEASURED_SCALING, "scaling_efficiency", "min",
                  "measured: one rank's wall time over the slowest rank's at world_size (weak scaling); "
                  "reruns the test on one rank, and is noisy on small machines"),
    ]
}
_MODEL_FIELDS = {"world_size": int, "link_gbps": float, "device_tflops": float, "latency_us": float}


def spec(key: str) -> BudgetKey | None:
    """The BudgetKey of a limit key from either table."""
    return KEYS.get(key) or SCALING_KEYS.get(key)


# Marker arguments that are not limits on one metric: the value they take, and what they do.
OPTIONS = {
    "ops": ("{op: N}", "per-op caps, e.g. ops={'aten::cat': 1}"),
    "per_step": ("bool", "True: every limit applies to each perf.step() iteration instead of the whole region"),
    "baseline": ("bool", "True: also fail when a count grew past the recorded baseline"),
    "world_size": ("N", "run the test body on this many ranks with torch.distributed"),
    "timeout": ("seconds", "with world_size: seconds all ranks together may take before every rank is killed"),
}
# The value a limit takes, by unit (and for the one limit that takes a model).
VALUE_SHAPES = {"count": "N", "bytes": "SIZE", "ratio": "0..1",
                PREDICTED_SCALING: "{min, world_size, link_gbps, device_tflops[, latency_us]}"}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)\s*$", re.IGNORECASE)
_UNITS = SIZE_UNITS


# What each unit accepts, for the error messages.
VALID = {"count": "a whole number >= 0", "bytes": "a size such as 4096, '24 MB' or '1.5 GiB'",
         "ratio": "a ratio between 0 and 1"}


def _is_number(value: Any) -> bool:
    """An int or a finite float: inf and nan are no budget (and `int(inf)` would raise OverflowError)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_size(value: Any) -> int:
    """Bytes from an int or a string such as "24 MB" (decimal) or "1.5 GiB" (binary)."""
    try:
        finite = math.isfinite(float(value)) if not isinstance(value, bool) else True
    except (TypeError, ValueError):
        finite = True
    if not finite:
        raise BudgetError(f"cannot read size {value!r}: not a finite number (use {VALID['bytes']})")
    if _is_number(value) and value >= 0:
        return int(value)
    m = _SIZE.match(value) if isinstance(value, str) else None
    if not m or m.group(2).lower() not in _UNITS:
        raise BudgetError(f"cannot read size {value!r} (use {VALID['bytes']})")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def size_unit(value: Any) -> str | None:
    """The unit a size was written in ("MB" of "100MB"), to report sizes back in it; None for a number."""
    m = _SIZE.match(value) if isinstance(value, str) else None
    return m.group(2) if m and m.group(2) and m.group(2).lower() in _UNITS else None


def valid_keys_text() -> str:
    return ", ".join([*KEYS, *SCALING_KEYS, *OPTIONS])


def unknown_key(key: str) -> BudgetError:
    """The error for a key no table knows, with the closest valid key when one is close."""
    import difflib  # only on this error path: ~0.7 ms of every `perflint trace` start otherwise

    close = difflib.get_close_matches(key, [*KEYS, *SCALING_KEYS, *OPTIONS], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return BudgetError(f"unknown budget key {key!r}; valid keys: {valid_keys_text()}{hint}")


@dataclass
class Budget:
    """Validated limits: metric limits by key, per-op caps and options."""

    limits: dict[str, float] = field(default_factory=dict)
    op_limits: dict[str, int] = field(default_factory=dict)
    per_step: bool = False
    baseline: bool = False
    world_size: int = 1
    timeout: float | None = None
    scaling_model: dict[str, float] | None = None  # min_predicted_efficiency's assumptions

    def __bool__(self) -> bool:
        return bool(self.limits or self.op_limits or self.baseline)


def limit_value(key: str, value: Any) -> float:
    """The one check of a limit's value, by its key's unit: the marker, budget files and
    `perflint trace --budget` all come through here. Raises BudgetError saying what is valid."""
    unit = spec(key).unit
    if unit == "bytes":
        try:
            return parse_size(value)
        except BudgetError as e:
            raise BudgetError(f"{key}: {e}") from None
    valid = VALID[unit]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BudgetError(f"{key} must be a number ({valid}), got {value!r}")
    if not math.isfinite(value):
        raise BudgetError(f"{key} must be a finite number ({valid}), got {value!r}")
    if value < 0:
        raise BudgetError(f"{key} must not be negative ({valid}), got {value!r}")
    if unit == "ratio" and value > 1:
        raise BudgetError(f"{key} is {valid}, got {value!r}")
    if unit == "count" and value != int(value):
        raise BudgetError(f"{key} is a count ({valid}), got {value!r}")
    return value


def parse_budget(values: Mapping[str, Any]) -> Budget:
    """Check every key and value; raise BudgetError naming the problem and the valid keys."""
    budget = Budget()
    for key, value in values.items():
        if key in KEYS:
            budget.limits[key] = limit_value(key, value)
        elif key == "ops":
            if not isinstance(value, Mapping) or not value:
                raise BudgetError("ops must be a non-empty dict such as {'aten::cat': 1}")
            for op, cap in value.items():
                if not isinstance(op, str) or isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
                    raise BudgetError(f"ops[{op!r}] must map an op name to a count >= 0, got {cap!r}")
                budget.op_limits[op] = cap
        elif key in ("per_step", "baseline"):
            if not isinstance(value, bool):
                raise BudgetError(f"{key} must be True or False, got {value!r}")
            setattr(budget, key, value)
        elif key == PREDICTED_SCALING:
            budget.scaling_model = _scaling_model(value)
            budget.limits[key] = limit_value(key, value["min"])
        elif key == MEASURED_SCALING:
            budget.limits[key] = limit_value(key, value)
        elif key == "timeout":
            if not _is_number(value) or value <= 0:
                raise BudgetError(f"timeout must be a finite number of seconds > 0, got {value!r}")
            budget.timeout = float(value)
        elif key == "world_size":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BudgetError(f"world_size must be an int >= 1, got {value!r}")
            budget.world_size = value
        else:
            raise unknown_key(key)
    return budget


def _scaling_model(value: Any) -> dict[str, float]:
    example = "{'min': 0.8, 'world_size': 8, 'link_gbps': 100, 'device_tflops': 50}"
    if not isinstance(value, Mapping) or "min" not in value:
        raise BudgetError(f"min_predicted_efficiency needs the model's assumptions, e.g. {example}; got {value!r}")
    model = {}
    for name, kind in _MODEL_FIELDS.items():
        if name not in value:
            if name == "latency_us":
                continue
            raise BudgetError(f"min_predicted_efficiency needs {name!r}, e.g. {example}")
        v = value[name]
        if not _is_number(v) or v <= 0 or (kind is int and v != int(v)):
            raise BudgetError(f"min_predicted_efficiency[{name!r}] must be a positive {kind.__name__}, got {v!r}")
        model[name] = kind(v)
    unknown = set(value) - set(_MODEL_FIELDS) - {"min"}
    if unknown:
        raise BudgetError(f"min_predicted_efficiency: unknown field(s) {sorted(unknown)}; use min, "
                          f"{', '.join(_MODEL_FIELDS)}")
    return model


@dataclass(frozen=True)
class Verdict:
    """One budget line checked against one measurement: status is "pass", "fail" or "skip"."""

    key: str
    metric: str
    measured: float | None
    limit: float
    status: str
    reason: str = ""

    def describe(self, size_unit: str | None = None) -> str:
        """One line; sizes in `size_unit` when given (the unit the user wrote the limit in)."""
        unit = spec(self.key).unit if spec(self.key) else "count"
        sign = ">" if self.key.startswith("max") or self.key.startswith("ops") else "<"
        if self.status == "skip":
            return f"{self.metric}: skipped ({self.reason})"
        return (f"{self.metric} {format_value(unit, self.measured, size_unit)} "
                f"{sign if self.status == 'fail' else 'within'} {format_value(unit, self.limit, size_unit)}")


def check(budget: Budget, metrics: Mapping[str, float | None], op_counts: Mapping[str, int] | None = None,
          unavailable: Mapping[str, str] | None = None) -> list[Verdict]:
    """Compare measured metrics with the budget. A metric that is None could not be measured here:
    its verdict is "skip" with the reason from `unavailable`, never a silent pass."""
    verdicts = []
    unavailable = unavailable or {}
    for key, limit in budget.limits.items():
        k = spec(key)
        measured = metrics.get(k.metric)
        if measured is None:
            reason = unavailable.get(k.metric, "not measured" + (" without a GPU" if k.gpu_only else ""))
            verdicts.append(Verdict(key, k.metric, None, limit, "skip", reason))
            continue
        broken = measured > limit if k.bound == "max" else measured < limit
        verdicts.append(Verdict(key, k.metric, measured, limit, "fail" if broken else "pass"))
    for op, cap in budget.op_limits.items():
        measured = (op_counts or {}).get(op, 0)
        verdicts.append(Verdict(f"ops[{op}]", op, measured, cap, "fail" if measured > cap else "pass"))
    return verdicts
