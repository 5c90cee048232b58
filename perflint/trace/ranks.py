"""Across the ranks of one job: per-collective transfer versus waiting time, stragglers, load imbalance.

The k-th collective of a kind (allreduce, all_to_all, ...) on every rank is the same collective. Its
shortest duration over the ranks is the *transfer* time: the last rank to arrive finds the others ready
and only moves data. Every other rank's extra duration is *waiting* for that straggler. Durations only
are compared, so the ranks' clocks need not agree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from perflint.trace.figures import Figures
from perflint.trace.model import DeviceOp, Trace
from perflint.trace.device_columns import device_work
from perflint.trace.names import CLASSES, COMMUNICATION, collective_name


@dataclass
class CollectiveWait:
    """One collective matched across ranks: how long the early ranks waited for the last."""

    collective: str  # "allreduce #3"
    transfer_us: float
    max_wait_us: float
    straggler: int  # the rank that arrived last (shortest duration)


@dataclass
class RankBalance:
    """One rank's time by kind, and how often it arrived last at a collective."""

    rank: int
    compute_us: float
    comm_us: float
    transfer_us: float
    wait_us: float
    last_to_arrive: int  # collectives for which this rank was the straggler


@dataclass
class JobFigures:
    """Figures across the ranks of one job: balance, waits and the straggler."""

    ranks: list[int]
    matched: int  # collectives found on every rank
    unmatched: int  # collectives missing on some rank (counts differ): not compared
    balance: list[RankBalance]
    worst: list[CollectiveWait]  # collectives with the most waiting
    imbalance: float | None  # max / mean compute time over ranks (1.0 = balanced)
    straggler: int | None  # the rank most often last to arrive


def job_figures(ranks: list[tuple[Trace, Figures]], top: int = 10) -> JobFigures | None:
    """Cross-rank figures when the traces are two or more distinct ranks of one job (same world size,
    all with device events); None otherwise."""
    by_rank = {t.rank: (t, f) for t, f in ranks if t.rank is not None and t.has_device}
    if len(by_rank) < 2 or len(by_rank) != len(ranks) or len({t.world_size for t, _ in ranks}) != 1:
        return None
    seqs: dict[int, dict[str, list[DeviceOp]]] = {}
    for rank, (trace, _) in by_rank.items():
        kinds: dict[str, list[DeviceOp]] = defaultdict(list)
        work = device_work(trace)
        for row in np.flatnonzero(work.cls == CLASSES.index(COMMUNICATION)).tolist():  # in start order
            d = work.ops[work.file_pos[row]]
            kinds[collective_name(d)].append(d)
        seqs[rank] = kinds
    order = sorted(by_rank)
    wait = dict.fromkeys(order, 0.0)
    transfer = dict.fromkeys(order, 0.0)
    last = dict.fromkeys(order, 0)
    rows, matched, unmatched = [], 0, 0
    for kind in sorted({k for kinds in seqs.values() for k in kinds}):
        lengths = [len(seqs[r].get(kind, [])) for r in order]
        n = min(lengths)
        unmatched += max(lengths) - n
        for i in range(n):
            durs = {r: seqs[r][kind][i].dur for r in order}
            fastest = min(order, key=lambda r: durs[r])
            base = durs[fastest]
            for r in order:
                transfer[r] += base
                wait[r] += durs[r] - base
            last[fastest] += 1
            matched += 1
            rows.append(CollectiveWait(f"{kind} #{i + 1}", base, max(durs.values()) - base, fastest))
    compute = {r: by_rank[r][1].timeline.compute_us for r in order}
    mean = sum(compute.values()) / len(order)
    balance = [RankBalance(r, compute[r], by_rank[r][1].kernels.comm_us, transfer[r], wait[r], last[r])
               for r in order]
    rows.sort(key=lambda w: -w.max_wait_us)
    return JobFigures(order, matched, unmatched, balance, rows[:top],
                      max(compute.values()) / mean if mean > 0 else None,
                      max(order, key=lambda r: last[r]) if matched else None)
