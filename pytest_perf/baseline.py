"""Recorded counts per test, so budgets can say "no worse than last time" without hand-written numbers.

The file is meant to be committed: sorted keys, one test per line group, only deterministic counts
(never times). No pytest, no torch import.
"""

from __future__ import annotations

import json
import os
from typing import Mapping

from perflint.measures.budgets import KEYS, Verdict
from perflint.measures.metrics import RECORDED  # counts that are the same on every run, never bytes or times

VERSION = 1
_KEY_OF = {spec.metric: key for key, spec in KEYS.items()}


class BaselineError(ValueError):
    """The baseline file cannot be read."""


def load(path: str) -> dict[str, dict[str, int]]:
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        tests = data["tests"]
        if not isinstance(tests, dict):
            raise TypeError("tests is not a mapping")
        return tests
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BaselineError(f"cannot read perf baseline {path}: {e}") from None


def counts(metrics: Mapping[str, float | None]) -> dict[str, int]:
    return {m: int(metrics[m]) for m in RECORDED if metrics.get(m) is not None}


def save(path: str, recorded: Mapping[str, Mapping[str, int]], old: Mapping[str, Mapping[str, int]]) -> None:
    """Write old entries updated with the ones measured now; tests not run this time keep their numbers."""
    tests = {**old, **recorded}
    body = {"version": VERSION, "tests": {k: dict(sorted(tests[k].items())) for k in sorted(tests)}}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(body, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def compare(recorded: Mapping[str, int] | None, metrics: Mapping[str, float | None]) -> list[Verdict]:
    """One verdict per recorded count: fail when the count grew. No entry is a skip, not a pass."""
    if recorded is None:
        return [Verdict("baseline", "baseline", None, 0, "skip",
                        "no baseline recorded for this test (run pytest --perf-update-baseline)")]
    out = []
    for metric, limit in sorted(recorded.items()):
        measured = metrics.get(metric)
        key = _KEY_OF.get(metric, metric) + "@baseline"
        if measured is None:
            out.append(Verdict(key, metric, None, limit, "skip", "not measured in this run"))
        else:
            out.append(Verdict(key, metric, measured, limit, "fail" if measured > limit else "pass"))
    return out
