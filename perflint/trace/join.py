"""`perflint src/ --trace TRACE`: static findings joined with what a recorded trace measured at their lines.

Each finding is *confirmed* when the trace has events at its source line (calls, host syncs and the time
they blocked, host<->device bytes, device time of the kernels launched from there), else *not seen in
this trace*. The costly runtime events (syncs and host<->device copies) whose line has no finding are
listed as what the linter missed.

Where an event comes from: the legacy `Call stack` of an op gives the line being executed in each frame
(line granularity). The `python_function` events of newer traces name each frame by the line of its
`def` (that is how PyTorch's Python tracer labels them), so an event is placed in a *function*; a finding
then matches the events of its enclosing function that carry its own rule (an `aten::item` confirms a
PFL101, not a PFL302 in the same function). Paths match by their trailing components (the trace holds
the path the code ran from).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePath
from typing import Any, Iterable

from perflint.measures.events import EVENTS
from perflint.trace.figures import analyze
from perflint.trace.device_columns import device_work
from perflint.trace.hostindex import enclosing
from perflint.trace.load import load_trace
from perflint.trace.model import Trace
from perflint.trace.names import CLASSES, MEMCPY, copy_kind, launch_calls, source_line
from perflint.trace.report import us
from perflint.trace.syncs import LoaderBatches, copy_rule

# Ops that show a rule at work, beyond the event table's (perflint.measures.events): what each rule's code runs.
_RULE_OPS = {
    "PFL103": ("aten::to", "aten::_to_copy", "aten::copy_"), "PFL104": ("aten::item", "aten::_local_scalar_dense"),
    "PFL201": ("aten::to", "aten::_to_copy", "aten::copy_"), "PFL202": ("aten::to", "aten::_to_copy", "aten::copy_"),
    "PFL203": ("aten::to", "aten::_to_copy", "aten::copy_"), "PFL302": ("aten::cat",),
    "PFL304": ("aten::mm", "aten::matmul", "aten::bmm"), "PFL305": ("aten::softmax", "aten::_softmax", "aten::bmm"),
    "PFL306": ("aten::log", "aten::softmax", "aten::_softmax"), "PFL307": ("aten::repeat",),
}


@dataclass
class Measured:
    """What the trace measured at one place in the code."""

    calls: int = 0  # aten ops started there (outermost per call)
    syncs: int = 0
    blocked_us: float = 0.0  # host time blocked in those syncs
    transfer_bytes: int = 0  # host<->device copies launched from there
    transfers: int = 0
    device_us: float = 0.0  # kernels, copies and memsets launched from there
    ops: dict[str, int] = field(default_factory=dict)  # op name -> calls

    def add(self, other: "Measured") -> None:
        self.calls += other.calls
        self.syncs += other.syncs
        self.blocked_us += other.blocked_us
        self.transfer_bytes += other.transfer_bytes
        self.transfers += other.transfers
        self.device_us += other.device_us
        for name, n in other.ops.items():
            self.ops[name] = self.ops.get(name, 0) + n

    def summary(self) -> str:
        parts = [f"{self.calls} op call(s)"]
        if self.ops:
            parts.append(", ".join(f"{n}x {name}" for name, n in sorted(self.ops.items(), key=lambda kv: -kv[1])[:3]))
        if self.syncs:
            parts.append(f"{self.syncs} sync(s) blocking {us(self.blocked_us)}")
        if self.transfers:
            parts.append(f"{self.transfers} host<->device copies ({self.transfer_bytes} bytes)")
        if self.device_us:
            parts.append(f"device time {us(self.device_us)}")
        return "; ".join(parts)


@dataclass(frozen=True)
class Place:
    """A source location as the trace's stacks name it."""

    path: str  # as the trace records it
    line: int
    granularity: str  # "line" (Call stack) or "function" (python_function frames: the def line)


@dataclass
class JoinedFinding:
    """A static finding and what the trace measured at its line."""

    finding: Any  # perflint.rule.Finding
    status: str  # "confirmed" or "not seen in this trace"
    where: str  # "line 36" or "function at line 24"
    measured: Measured | None


@dataclass
class Missed:
    """A costly place in the trace that no static finding names."""

    place: str  # "file.py:44" (or "file.py:24 (function)")
    rules: list[str]  # the rules of the events there
    measured: Measured


@dataclass
class Join:
    """Static findings joined with one trace: confirmed, unseen, and missed."""

    trace: str
    findings: list[JoinedFinding]
    missed: list[Missed]


def join(findings: Iterable[Any], trace_path: str, top: int = 10) -> Join:
    """Findings (objects with path, line, code) joined with the trace at `trace_path` (raises TraceError)."""
    trace = load_trace(trace_path)
    places = _measure(trace)
    joined, used = [], set()
    functions: dict[str, dict[int, int]] = {}
    for f in findings:
        hits = [(p, m) for p, m in places.items() if _same_file(p.path, f.path)]
        exact = [(p, m) for p, m in hits if p.granularity == "line" and p.line == f.line]
        where, measured = f"line {f.line}", None
        if exact:
            measured = Measured()
            for p, m in exact:
                measured.add(m.total)
                used.add(p)
        elif any(p.granularity == "function" for p, _ in hits):
            def_line = functions.setdefault(f.path, _def_lines(f.path)).get(f.line)
            parts = [(p, m.for_rule(f.code)) for p, m in hits if p.granularity == "function" and p.line == def_line]
            parts = [(p, m) for p, m in parts if m is not None]
            if parts:
                where, measured = f"function at line {def_line}", Measured()
                for p, m in parts:
                    measured.add(m)
                    used.add((p, f.code))
        status = "confirmed" if measured is not None and (measured.calls or measured.syncs or measured.transfers) \
            else "not seen in this trace"
        joined.append(JoinedFinding(f, status, where, measured if status == "confirmed" else None))
    missed = []
    for p, m in places.items():
        costly = {rule: part for rule, part in m.by_rule.items() if part.syncs or part.transfers}
        if p.granularity == "line":
            if p not in used and (m.total.syncs or m.total.transfers):
                missed.append(Missed(f"{p.path}:{p.line}", sorted(m.by_rule), m.total))
        else:
            for rule, part in costly.items():
                if (p, rule) not in used:
                    missed.append(Missed(f"{p.path}:{p.line} (function)", [rule], part))
    missed.sort(key=lambda x: (-x.measured.blocked_us, -x.measured.transfer_bytes, -x.measured.syncs))
    return Join(trace_path, joined, missed[:top])


class _Totals:
    """At one place: everything, and split by op name (calls) and by rule (syncs and copies), so that a
    finding placed only by its function is matched with the events its rule is about."""

    def __init__(self) -> None:
        self.total = Measured()
        self.by_op: dict[str, Measured] = {}
        self.by_rule: dict[str, Measured] = {}

    def part(self, rule: str | None) -> list[Measured]:
        return [self.total] + ([self.by_rule.setdefault(rule, Measured())] if rule else [])

    def for_rule(self, code: str) -> Measured | None:
        """What the events of rule `code` measured here (its ops' calls, its syncs and copies)."""
        found = Measured()
        for name, m in self.by_op.items():
            if name in _ops_of(code):
                found.add(m)
        if code in self.by_rule:
            found.add(self.by_rule[code])
        return found if found.calls or found.syncs or found.transfers else None


def _measure(trace: Trace) -> dict[Place, _Totals]:
    places: dict[Place, _Totals] = {}
    granularity = "function" if any(h.kind == "python" for h in trace.host_ops) else "line"

    def at(source: str | None) -> _Totals:
        if source is None:
            return _Totals()  # not user code: counted nowhere
        path, _, line = source.rpartition(":")
        return places.setdefault(Place(path, int(line), granularity), _Totals())

    ops = [h for h in trace.host_ops if h.kind == "op"]
    for op, chain in zip(ops, enclosing(trace, [(h.tid, h.ts, h.ts + h.dur) for h in ops])):
        outer = [h for h in chain if h.kind == "op" and h is not op]
        if outer and (not _RULED.search(op.name) or any(_RULED.search(h.name) for h in outer)):
            continue  # a call counts once: its outermost op, or the first op inside it that shows a rule
        totals = at(source_line(chain))
        for m in (totals.total, totals.by_op.setdefault(op.name, Measured())):
            if m is totals.total and outer:
                continue
            m.calls += 1
            m.ops[op.name] = m.ops.get(op.name, 0) + 1
    if trace.has_device:
        for s in analyze(trace).syncs:
            for m in at(s.source).part(s.rule):
                m.syncs += 1
                m.blocked_us += s.wait_us
        work, loader = device_work(trace), LoaderBatches(trace)
        calls = {c.correlation: c for c in launch_calls(trace)}
        rows = [(calls[c], k) for k, c in enumerate(work.corr.tolist()) if c in calls]
        for (call, k), chain in zip(rows, enclosing(trace, [(c.tid, c.ts, c.ts + c.dur) for c, _ in rows])):
            op = work.ops[work.file_pos[k]]
            is_copy = work.cls[k] == CLASSES.index(MEMCPY) and copy_kind(op.name).direction in ("HtoD", "DtoH")
            for m in at(source_line(chain)).part(copy_rule(op.name, loader, call.tid, call.ts) if is_copy else None):
                m.device_us += float(work.dur[k])
                if is_copy:
                    m.transfers += 1
                    m.transfer_bytes += max(op.bytes, 0)
    return places


def _ops_of(code: str) -> set[str]:
    """The op names that show rule `code` at work: the event table's cpu_op rows and _RULE_OPS."""
    return {e.name for e in EVENTS if e.source == "cpu_op" and e.rule == code} | set(_RULE_OPS.get(code, ()))


_RULED = re.compile("^(?:" + "|".join(re.escape(n) for n in sorted(
    {e.name for e in EVENTS if e.source == "cpu_op" and e.rule and not e.name.endswith("*")}
    | {n for names in _RULE_OPS.values() for n in names})) + ")$")


def _same_file(trace_path: str, finding_path: str) -> bool:
    """The shorter path is a suffix of the other, component by component."""
    a, b = PurePath(trace_path).parts, PurePath(Path(finding_path).as_posix()).parts
    a, b = [p for p in a if p not in (".", "")], [p for p in b if p not in (".", "")]
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]


def _def_lines(path: str) -> dict[int, int]:
    """Line -> the line PyTorch's Python tracer names its innermost enclosing function by (the first
    decorator's line, else the `def`), for every line of the file; empty when it cannot be parsed."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[int, int] = {}
    for node in ast.walk(tree):  # outer functions come first: inner ones overwrite their lines
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                if line not in found or found[line] < first:
                    found[line] = first
    return found


def render(result: Join, fmt: str, base: str) -> str:
    """`base`: the findings as the normal report renders them (text), ignored for JSON."""
    if fmt == "json":
        from perflint.reports.json_report import as_dicts

        findings = as_dicts([j.finding for j in result.findings])
        for d, j in zip(findings, result.findings):
            d["trace"] = {"status": j.status, "where": j.where,
                          "measured": asdict(j.measured) if j.measured else None}
        return json.dumps({"trace": result.trace, "findings": findings,
                           "missed": [asdict(m) for m in result.missed]}, indent=2)
    lines = []
    for line, j in zip(base.splitlines(), result.findings):
        detail = f" ({j.where}: {j.measured.summary()})" if j.measured else ""
        lines.append(f"{line}\n    trace: {j.status}{detail}")
    confirmed = sum(j.status == "confirmed" for j in result.findings)
    lines.append(f"Trace {result.trace}: {confirmed} of {len(result.findings)} finding(s) confirmed.")
    if result.missed:
        lines.append("Costly in the trace with no finding at that line (what the linter missed):")
        lines += [f"  {m.place}: {m.measured.summary()}" + (f" [{', '.join(m.rules)}]" if m.rules else "")
                  for m in result.missed]
    return "\n".join(lines)
