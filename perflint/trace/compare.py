"""`perflint trace BEFORE --compare AFTER`: what changed between two traces (or saved `--output-format json`
reports), per budget metric, per kind of device work and per op, largest changes first; and budgets
relative to BEFORE (`--budget max_kernels=+10%`, `--budget max_syncs=+0`) that fail a CI job on a
regression.

Both sides are plain dicts (`Figures.to_dict()` or a saved report's `figures`), so a trace and a saved
report compare alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from perflint.measures.budgets import KEYS, Budget, Verdict, check

_RELATIVE = re.compile(r"^\s*([+-])\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")
_UNIT = {k.metric: k.unit for k in KEYS.values()}


class CompareError(ValueError):
    """A --compare input or relative budget that cannot be used."""


@dataclass
class Change:
    """One figure in the baseline and in the new trace."""

    section: str  # "metric", "device work" or "op"
    name: str
    before: float | None
    after: float | None
    unit: str  # "count", "bytes", "ratio" or "us"

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before

    @property
    def relative(self) -> float | None:
        if self.delta is None:
            return None
        return self.delta / abs(self.before) if self.before else (0.0 if not self.delta else float("inf"))


@dataclass
class Comparison:
    """What changed from one trace (or saved report) to another, and the relative budgets checked."""

    before: str
    after: str
    changes: list[Change]  # per section, largest change first
    verdicts: list[Verdict]  # relative budgets checked on AFTER


def saved_figures(path: str) -> list[dict[str, Any]] | None:
    """The per-trace figures of a saved `perflint trace --output-format json` report; None when the file
    is not one (then it is read as a trace)."""
    if not path.endswith(".json"):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
            if not head.startswith(b'{"traces"') and not head.startswith(b'{\n  "traces"'):
                return None
            doc = json.loads(head + f.read())
    except (OSError, ValueError):
        return None
    traces = doc.get("traces") if isinstance(doc, dict) else None
    if not isinstance(traces, list) or not all(isinstance(t, dict) and "figures" in t for t in traces):
        raise CompareError(f"{path}: not a perflint trace report (expected 'traces' with 'figures')")
    return [dict(t["figures"], metrics=t.get("metrics", {})) for t in traces]


def compare(before: Mapping[str, Any], after: Mapping[str, Any], relative: Mapping[str, str] | None = None,
            absolute: Budget | None = None) -> Comparison:
    """Changes from BEFORE to AFTER (figure dicts with their "metrics"), and the budgets checked on AFTER:
    `relative` maps a budget key to "+10%" / "+0" (limits from BEFORE's value), `absolute` as usual."""
    changes = _metric_changes(before["metrics"], after["metrics"])
    changes += _table_changes("device work", _rows(before, "kernels", "kinds"), _rows(after, "kernels", "kinds"))
    changes += _table_changes("op", {r["name"]: r["host_us"] for r in before.get("op_table", [])},
                              {r["name"]: r["host_us"] for r in after.get("op_table", [])})
    limits = dict(absolute.limits) if absolute else {}
    for key, text in (relative or {}).items():
        limits[key] = relative_limit(key, text, before["metrics"].get(KEYS[key].metric))
    budget = Budget(limits=limits)
    return Comparison(before["path"], after["path"], changes, check(budget, after["metrics"]))


def is_relative(value: Any) -> bool:
    return isinstance(value, str) and _RELATIVE.match(value) is not None


def relative_limit(key: str, text: str, baseline: float | None) -> float:
    """The absolute limit of a relative budget: "+10%" of the baseline's value, or "+2" on top of it."""
    if key not in KEYS:
        raise CompareError(f"--budget {key}: a relative limit needs a metric key")
    if baseline is None:
        raise CompareError(f"--budget {key}={text}: the baseline has no {KEYS[key].metric} to be relative to")
    sign, number, percent = _RELATIVE.match(text).groups()
    step = float(number) * (abs(baseline) / 100 if percent else 1)
    return baseline + step if sign == "+" else baseline - step


def _rows(fig: Mapping[str, Any], *path: str) -> dict[str, float]:
    table: Any = fig
    for key in path:
        table = table.get(key, {}) if isinstance(table, Mapping) else {}
    return {r["name"]: r["time_us"] for r in table} if isinstance(table, list) else {}


def _metric_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    found = [Change("metric", m, before.get(m), after.get(m), _UNIT.get(m, "count"))
             for m in dict.fromkeys([*before, *after]) if before.get(m) is not None or after.get(m) is not None]
    return sorted(found, key=lambda c: -abs(c.relative or 0) if c.relative != float("inf") else -1e300)


def _table_changes(section: str, before: dict[str, float], after: dict[str, float]) -> list[Change]:
    found = [Change(section, n, before.get(n, 0.0), after.get(n, 0.0), "us") for n in dict.fromkeys([*before, *after])]
    return sorted((c for c in found if c.delta), key=lambda c: -abs(c.delta))
