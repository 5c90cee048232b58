"""Render checked traces as text (tabulate tables), JSON or GitHub workflow annotations."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from tabulate import tabulate

from perflint.measures.budgets import KEYS, Verdict
from perflint.measures.metrics import format_value
from perflint.trace.analyze import Figures
from perflint.trace.ranks import JobFigures

_UNIT = {k.metric: k.unit for k in KEYS.values()}
_MAX_ROWS = 10


@dataclass
class RankResult:
    """One trace file after analysis and budget checking."""

    figures: Figures
    metrics: dict[str, float | None]
    verdicts: list[Verdict]
    step_verdicts: dict[int, list[Verdict]] = field(default_factory=dict)  # per_step budgets

    @property
    def failed(self) -> list[Verdict]:
        found = [v for v in self.verdicts if v.status == "fail"]
        return found + [v for vs in self.step_verdicts.values() for v in vs if v.status == "fail"]


def render(results: list[RankResult], job: JobFigures | None, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(_json(results, job), indent=2, default=str)
    if fmt == "github":
        return _github(results)
    return _text(results, job)


def us(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.3f} s"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.2f} ms"
    return f"{value:.1f} us"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def _text(results: list[RankResult], job: JobFigures | None) -> str:
    out = [_rank_text(r) for r in results]
    if job is not None:
        out.append(_job_text(job))
    failed = sum(len(r.failed) for r in results)
    out.append(f"perflint trace: {len(results)} trace(s) analysed, "
               + (f"{failed} budget(s) broken" if failed else "all budgets hold"))
    return "\n\n".join(out)


def _header(f: Figures) -> str:
    where = f.path if f.rank is None else f"{f.path} (rank {f.rank}" + (
        f" of {f.world_size})" if f.world_size else ")")
    facts = [f.device_name or ("no GPU events" if not f.has_device else "GPU"), f.selection,
             f"{f.schema} schema"]
    if f.steps:
        facts.append(f"steps {f.steps[0].number}..{f.steps[-1].number}")
        partial = [s for s in f.steps if s.partial]
        facts += [f"step {s.number} partial ({s.unmatched_launches} launches without recorded device work)"
                  for s in partial]
    return f"== {where}\n   " + "; ".join(facts)


def _rank_text(r: RankResult) -> str:
    f = r.figures
    parts = [_header(f)]
    limits = {v.metric: v for v in r.verdicts}
    rows = []
    for metric, value in r.metrics.items():
        v = limits.get(metric)
        rows.append([metric, format_value(_UNIT.get(metric, "count"), value),
                     format_value(_UNIT.get(metric, "count"), v.limit) if v else "",
                     (v.status.upper() if v.status != "skip" else f"skip: {v.reason}") if v else ""])
    rows += [[v.key, format_value("count", v.measured), format_value("count", v.limit), v.status.upper()]
             for v in r.verdicts if v.key.startswith("ops[")]
    parts.append(_table(rows, ["metric", "value", "budget", "verdict"]))
    for step, verdicts in sorted(r.step_verdicts.items()):
        broken = [v.describe() for v in verdicts if v.status == "fail"]
        if broken:
            parts.append(f"step {step}: " + "; ".join(broken))
    if not f.has_device:
        parts.append("No device events: GPU figures are not available for this trace.")
        return "\n\n".join(parts)
    parts += [_kernels_text(f), _syncs_text(f), _transfers_text(f), _timeline_text(f), _queue_text(f),
              _comm_text(f)]
    return "\n\n".join(p for p in parts if p)


def _kernels_text(f: Figures) -> str:
    k = f.kernels
    classes = _table([[c.name, c.count, us(c.time_us), us(c.busy_us)] for c in k.classes],
                     ["device work", "count", "time", "busy (union)"])
    top = _table([[_short(t.name), t.kernel_class, t.count, us(t.total_us), us(t.mean_us)] for t in k.top[:5]],
                 ["top kernels", "class", "count", "total", "mean"])
    return classes + "\n\n" + top


def _syncs_text(f: Figures) -> str:
    if not f.syncs:
        return "Host syncs: none"
    rows = [[us(s.at_us), s.call, us(s.wait_us), s.op or "-", s.source or "-", s.rule or "-"]
            for s in f.syncs[:_MAX_ROWS]]
    more = f"\n... and {len(f.syncs) - _MAX_ROWS} more" if len(f.syncs) > _MAX_ROWS else ""
    return f"Host syncs: {len(f.syncs)}\n" + _table(rows, ["at", "call", "blocked", "op", "source", "rule"]) + more


def _transfers_text(f: Figures) -> str:
    t = f.transfers
    if not t.rows:
        return "Copies: none"
    rows = [[r.direction, r.host_memory, r.count, format_value("bytes", r.bytes), us(r.time_us)] for r in t.rows]
    return (f"Copies: {t.transfers} host<->device ({format_value('bytes', t.transfer_bytes)}), "
            f"{t.pageable} from/to pageable memory\n"
            + _table(rows, ["direction", "host memory", "count", "bytes", "time"]))


def _timeline_text(f: Figures) -> str:
    t = f.timeline
    summary = (f"GPU time: span {us(t.span_us)}, busy {us(t.busy_us)} ({_pct(t.utilisation)}), "
               f"compute {us(t.compute_us)}, idle {us(t.idle_us)} = host wait {us(t.host_wait_us)} "
               f"+ kernel wait {us(t.kernel_wait_us)} + other {us(t.other_us)}")
    streams = _table([[s.stream, us(s.host_wait_us), us(s.kernel_wait_us), us(s.other_us)] for s in t.streams],
                     ["stream", "idle: host wait", "kernel wait", "other"])
    gaps = _table([[us(g.start_us), us(g.dur_us), g.cause, ", ".join(g.cpu_ops) or "-"] for g in t.longest_gaps],
                  ["idle gap at", "length", "cause", "CPU ops running"])
    return "\n\n".join([summary, streams, gaps])


def _queue_text(f: Figures) -> str:
    q = f.queue
    rows = [[s.stream, s.launches, s.max, f"{s.mean:.1f}", us(s.time_full_us)] for s in q.streams]
    return (f"Launch queue: queue overlap {_pct(q.queue_overlap)}; the CPU launches work a median "
            f"{us(q.lead_median_us)} (p90 {us(q.lead_p90_us)}) before the GPU starts it\n"
            + _table(rows, ["stream", "launches", "max queued", "mean (time-weighted)", "time at 1024"]))


def _comm_text(f: Figures) -> str:
    k = f.kernels
    if not k.collectives:
        return ""
    rows = [[c.name, c.count, us(c.time_us), format_value("bytes", c.bytes)] for c in k.collectives]
    return (f"Communication: {us(k.comm_us)} on the device, {_pct(k.comm_overlap)} overlapped with compute\n"
            + _table(rows, ["collective", "count", "time", "input bytes"]))


def _job_text(job: JobFigures) -> str:
    rows = [[b.rank, us(b.compute_us), us(b.comm_us), us(b.transfer_us), us(b.wait_us), b.last_to_arrive]
            for b in job.balance]
    worst = [[w.collective, us(w.transfer_us), us(w.max_wait_us), w.straggler] for w in job.worst[:5]]
    lines = [f"== job: ranks {', '.join(map(str, job.ranks))}; {job.matched} collectives matched on every rank"
             + (f", {job.unmatched} not on every rank (not compared)" if job.unmatched else ""),
             f"compute imbalance (max/mean): {job.imbalance:.2f}" if job.imbalance else "compute imbalance: -",
             f"straggler: rank {job.straggler}" if job.straggler is not None else "straggler: -",
             _table(rows, ["rank", "compute", "comm", "transfer", "waiting", "last to arrive"])]
    if worst:
        lines.append(_table(worst, ["collective", "transfer", "max wait", "straggler"]))
    return "\n\n".join(lines)


def _json(results: list[RankResult], job: JobFigures | None) -> dict[str, Any]:
    return {
        "traces": [{"figures": r.figures.to_dict(), "metrics": r.metrics,
                    "verdicts": [asdict(v) for v in r.verdicts],
                    "step_verdicts": {str(k): [asdict(v) for v in vs] for k, vs in r.step_verdicts.items()}}
                   for r in results],
        "job": asdict(job) if job is not None else None,
        "budgets_broken": sum(len(r.failed) for r in results),
    }


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github(results: list[RankResult]) -> str:
    lines = []
    for r in results:
        f = r.figures
        label = f.path if f.rank is None else f"{f.path} rank {f.rank}"
        for v in r.failed:
            lines.append(f"::error title=perflint trace budget::{_escape(label + ': ' + v.describe())}")
        for s in f.syncs[:20]:
            if s.source:
                path, _, line = s.source.rpartition(":")
                lines.append(f"::warning file={path},line={line},title={s.rule or 'sync'}::"
                             + _escape(f"host sync ({s.call}) in {s.op or 'unknown op'}, blocked {us(s.wait_us)}"))
        lines.append(f"::notice title=perflint trace::{_escape(label)}: "
                     + ", ".join(f"{m}={format_value(_UNIT.get(m, 'count'), v)}"
                                 for m, v in r.metrics.items() if v is not None))
    return "\n".join(lines)
