"""Reports from per-test entries: the terminal table, the JSON report and GitHub annotations.

An entry is the JSON-able dict the plugin attaches to each test report (`report.perf`), so the same
data works in one process and after pytest-xdist sends it from a worker to the controller.
No torch import.
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Mapping

from tabulate import tabulate

from perflint.measures.budgets import Verdict, spec as key_spec
from perflint.measures.github import annotation
from perflint.measures.metrics import format_value


def verdict_entry(v: Verdict, text: str, where: tuple[str, int] | None) -> dict:
    """A verdict as JSON: `text` is the one-line explanation, `where` the source line to annotate."""
    return {"key": v.key, "metric": v.metric, "measured": v.measured, "limit": v.limit, "status": v.status,
            "reason": v.reason, "text": text, "file": where[0] if where else None,
            "line": where[1] if where else None}


def failure_message(failed: list[tuple[Verdict, str]], notes: list[str] = ()) -> str | None:
    """The test's failure: a headline with the worst broken budget (pytest's short summary shows only
    this first line), then one line per broken budget with its causes, then other problems."""
    lines = [text for _, text in failed] + list(notes)
    if not lines:
        return None
    if failed:
        worst = max(failed, key=lambda f: _excess(f[0]))[0].describe()
        more = len(lines) - 1
        headline = worst + (f" (and {more} more)" if more else "")
    else:
        headline = notes[0]
    return f"perf budget exceeded: {headline}\n  " + "\n  ".join(lines)


def _excess(v: Verdict) -> tuple[float, float]:
    """How far a failing verdict is past its limit, as a ratio (then the measured value, for limits of 0)."""
    measured, limit = v.measured or 0, v.limit
    if _bound(v.key) == "min":
        return (limit / measured if measured else float("inf"), -measured)
    return (measured / limit if limit else float("inf"), measured)


def _unit(key: str) -> str:
    spec = key_spec(key.split("@")[0])
    return spec.unit if spec else "count"


def _bound(key: str) -> str:
    """"max" or "min"; baselines and op caps are maximums."""
    spec = key_spec(key.split("@")[0])
    return spec.bound if spec else "max"


def _budget_text(v: Mapping) -> str:
    key = v["key"]
    if key == "baseline":
        return "baseline"
    sign = "≥" if _bound(key) == "min" else "≤"
    text = f"{sign} {format_value(_unit(key), v['limit'])}"
    return text + " (baseline)" if key.endswith("@baseline") else text


def _rows(entry: Mapping) -> list[list[str]]:
    """metric, measured, budget, status: one row per verdict of a test."""
    rows = []
    for v in entry["verdicts"]:
        status = v["status"].upper() + (f": {v['reason']}" if v["status"] == "skip" else "")
        metric = v["key"] if v["key"].startswith("ops[") else v["metric"]
        if entry.get("per_step") and not v["key"].startswith(("ops[", "baseline")):
            metric += " (worst step)"
        rows.append([metric, format_value(_unit(v["key"]), v["measured"]), _budget_text(v), status])
    return rows


def table(entries: Iterable[Mapping]) -> str:
    """The session's summary: every verdict of every budgeted test."""
    rows = [[e["nodeid"], *row] for e in entries for row in _rows(e)]
    return tabulate(rows, headers=["test", "metric", "measured", "budget", "status"], tablefmt="simple")


def section(entry: Mapping, unraised: str | None = None) -> str:
    """One test's verdicts, shown in a "perf budget" section of its report (under a failure, or with
    -rP). When the test failed for its own reason, the budget failure it could not raise comes first."""
    text = tabulate(_rows(entry), headers=["metric", "measured", "budget", "status"], tablefmt="simple")
    return f"{unraised}\n\n{text}" if unraised else text


def write_json(path: str, entries: Iterable[Mapping], meta: Mapping) -> None:
    body = {**meta, "tests": {e["nodeid"]: {k: v for k, v in e.items() if k != "nodeid"} for e in entries}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(body, f, indent=1, sort_keys=True)
        f.write("\n")


def github_annotations(entries: Iterable[Mapping]) -> list[str]:
    """`::error file=...,line=...::...` workflow commands, one per failing budget, at the causing line."""
    out = []
    for e in entries:
        for v in e["verdicts"]:
            if v["status"] != "fail":
                continue
            out.append(annotation("error", v["text"], file=v.get("file"), line=v.get("line"),
                                  title=f"perf budget {v['key']} in {e['nodeid']}"))
    return out


def trace_stem(nodeid: str) -> str:
    """A file name for a test's trace that is safe on every OS."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:180]
