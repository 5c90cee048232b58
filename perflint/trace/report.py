"""Render checked traces as text (aligned tables), JSON or GitHub workflow annotations."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from perflint.measures.budgets import KEYS, Verdict
from perflint.measures.github import annotation
from perflint.measures.metrics import format_value
from perflint.trace.figures import Figures
from perflint.trace.bounds import LABELS, REGIMES, Bound
from perflint.trace.roofline import RooflineRow

if TYPE_CHECKING:  # imported when used: a single-file run without --compare needs neither module
    from perflint.trace.compare import Comparison
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


def render(results: list[RankResult], job: JobFigures | None, fmt: str, units: dict[str, str] | None = None) -> str:
    """`units`: metric -> the unit its size budget was written in ("MB"), for sizes shown back."""
    units = units or {}
    if fmt == "json":
        import json  # only for this format: off the path of the text report

        return json.dumps(_json(results, job), indent=2, default=str)
    if fmt == "github":
        return _github(results, units)
    return _text(results, job, units)


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
    """Left-aligned columns two spaces apart under a dashed rule (tabulate's "simple" layout, without
    importing tabulate: `perflint trace` is timed as a whole process)."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(row[k]) for row in cells)]) for k, h in enumerate(headers)]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *map(line, cells)])


def _text(results: list[RankResult], job: JobFigures | None, units: dict[str, str]) -> str:
    out = [_rank_text(r, units) for r in results]
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
    if f.steps and f.selection == "whole file":
        facts[1] = f"whole file, steps {f.steps[0].number}..{f.steps[-1].number}"
        partial = [s for s in f.steps if s.partial]
        facts += [f"step {s.number} partial ({s.unmatched_launches} launches without recorded device work)"
                  for s in partial]
    return f"== {where}\n   " + "; ".join(facts)


def _rank_text(r: RankResult, units: dict[str, str]) -> str:
    f = r.figures
    parts = [_header(f), _bounds_text(f)]
    limits = {v.metric: v for v in r.verdicts}
    rows = []
    for metric, value in r.metrics.items():
        v = limits.get(metric)
        unit = _UNIT.get(metric, "count")
        rows.append([metric, format_value(unit, value, units.get(metric)),
                     format_value(unit, v.limit, units.get(metric)) if v else "",
                     (v.status.upper() if v.status != "skip" else f"skip: {v.reason}") if v else ""])
    rows += [[v.key, format_value("count", v.measured), format_value("count", v.limit), v.status.upper()]
             for v in r.verdicts if v.key.startswith("ops[")]
    parts.append(_table(rows, ["metric", "value", "budget", "verdict"]))
    for step, verdicts in sorted(r.step_verdicts.items()):
        broken = [v.describe(units.get(v.metric)) for v in verdicts if v.status == "fail"]
        if broken:
            parts.append(f"step {step}: " + "; ".join(broken))
    if not f.has_device:
        parts.append("No device events: GPU figures are not available for this trace.")
        parts.append(_roofline_text(f))
        return "\n\n".join(p for p in parts if p)
    parts += [_kernels_text(f), _roofline_text(f), _syncs_text(f), _transfers_text(f), _timeline_text(f),
              _queue_text(f), _comm_text(f)]
    return "\n\n".join(p for p in parts if p)


def _bounds_text(f: Figures) -> str:
    """The verdict first: what bounds the file (one sentence), then each step's shares."""
    whole = f.bounds.whole
    lines = [f"Verdict: {whole.sentence}", "   " + " | ".join(
        f"{LABELS[r]} {whole.shares[r]:.0%}" for r in sorted(REGIMES, key=lambda r: -whole.shares[r]))]
    if whole.by_name_us > 0:
        lines.append(f"   ({us(whole.by_name_us)} of kernel time judged compute- or memory-bound by kernel name: "
                     "no shapes or no peak for it)")
    if len(f.bounds.steps) > 1:
        lines.append(_table([_bound_row(b) for b in f.bounds.steps],
                            ["step", "time", "bound by", *[LABELS[r] for r in REGIMES]]))
    return "\n".join(lines)


def _bound_row(b: Bound) -> list[str]:
    return [b.label.removeprefix("step "), us(b.dur_us), LABELS[b.dominant], *[f"{b.shares[r]:.0%}" for r in REGIMES]]


def _roofline_text(f: Figures) -> str:
    r = f.roofline
    if not r.ops:
        return ""
    where = (f"{r.gpu}, peaks from {r.peak['source']}" if r.peak else r.identified)
    covered = (f"; {r.covered_us / r.compute_kernel_us:.0%} of compute-kernel time has known FLOPs and bytes"
               if r.compute_kernel_us else "")
    note = "; element sizes assumed float32 (no Input type in the trace)" if r.assumed_dtype else ""
    head = ["TFLOP/s", "TB/s", "FLOP/B", "% peak FLOP/s", "% peak BW", "bound"]
    ops = _table([[_short(o.name, 40), o.count, us(o.time_us), *_rates(o)] for o in r.ops[:8]],
                 ["roofline: op", "count", "time", *head])
    text = f"Roofline ({where}{covered}{note})\n" + ops
    if r.kernel_classes:
        classes = [[c.name, c.count, us(c.time_us), *_rates(c)] for c in r.kernel_classes]
        text += "\n\n" + _table(classes, ["kernel class (main kernels)", "count", "time", *head])
    return text


def _rates(row: RooflineRow) -> list[str]:
    def num(v, fmt):
        return "-" if v is None else format(v, fmt)
    return [num(row.tflops, ".3g"), num(row.tbps, ".3g"), num(row.intensity, ".3g"), _pct(row.compute_peak),
            _pct(row.bandwidth_peak), row.bound or "-"]


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


def _github(results: list[RankResult], units: dict[str, str]) -> str:
    lines = []
    for r in results:
        f = r.figures
        label = f.path if f.rank is None else f"{f.path} rank {f.rank}"
        for v in r.failed:
            lines.append(annotation("error", f"{label}: {v.describe(units.get(v.metric))}",
                                    title="perflint trace budget"))
        for s in f.syncs[:20]:
            if s.source:
                path, _, line = s.source.rpartition(":")
                lines.append(annotation("warning", f"host sync ({s.call}) in {s.op or 'unknown op'}, "
                                        f"blocked {us(s.wait_us)}", file=path,
                                        line=int(line) if line.isdigit() else None, title=s.rule or "sync"))
        figures = ", ".join(f"{m}={format_value(_UNIT.get(m, 'count'), v, units.get(m))}"
                            for m, v in r.metrics.items() if v is not None)
        lines.append(annotation("notice", f"{label}: {f.bounds.whole.sentence} {figures}", title="perflint trace"))
    return "\n".join(lines)


def render_comparison(comparisons: list[Comparison], fmt: str) -> str:
    if fmt == "json":
        import json

        return json.dumps([{"before": c.before, "after": c.after,
                            "changes": [dict(asdict(ch), delta=ch.delta, relative=ch.relative) for ch in c.changes],
                            "verdicts": [asdict(v) for v in c.verdicts]} for c in comparisons], indent=2, default=str)
    out = []
    for c in comparisons:
        lines = [f"== {c.before} -> {c.after}"]
        for section in ("metric", "device work", "op"):
            rows = [ch for ch in c.changes if ch.section == section][:_MAX_ROWS]
            if rows:
                lines.append(_table([[_short(ch.name, 50), _shown(ch, ch.before), _shown(ch, ch.after),
                                      _shown(ch, ch.delta, signed=True), _relative(ch)] for ch in rows],
                                    [section, "before", "after", "change", "relative"]))
        broken = [v for v in c.verdicts if v.status == "fail"]
        lines += [f"budget broken: {v.describe()}" for v in broken]
        if fmt == "github":
            lines = [annotation("error", f"{c.after}: {v.describe()}", title="perflint trace regression")
                     for v in broken]
        out.append("\n\n".join(lines))
    failed = sum(v.status == "fail" for c in comparisons for v in c.verdicts)
    if fmt != "github":
        out.append(f"perflint trace --compare: {failed} budget(s) broken" if failed else
                   "perflint trace --compare: all budgets hold")
    return "\n\n".join(o for o in out if o)


def _shown(change, value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    text = us(value) if change.unit == "us" else format_value(change.unit, abs(value) if signed else value)
    return ("+" if value >= 0 else "-") + text if signed else text


def _relative(change) -> str:
    rel = change.relative
    return "-" if rel is None else ("new" if rel == float("inf") else f"{rel:+.0%}")
