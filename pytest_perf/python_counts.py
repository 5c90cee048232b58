"""Counts made from Python while a segment runs: by the function mode, the `torch.cuda.synchronize`
wrapper and dynamo's recompile hook. Each is kept per source line, rule and step, and they come from
every thread of the process, hence the lock. No torch import."""

from __future__ import annotations

import threading
from collections import Counter

from perflint.measures.events import TRANSFER
from pytest_perf.attribution import Site


class PythonCounts:
    def __init__(self):
        self.hits: Counter = Counter()  # (metric, site, rule, step) -> n
        self.bytes: Counter = Counter()  # (site, rule, step) -> transfer bytes
        self.step = 0  # steps marked so far in this segment
        self.sites: list[Site] = []  # index -> site: the `pytest_perf::site#N` ranges name them
        self._index: dict[Site, int] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """A new segment: fresh counts, the same site numbering (ranges of old segments are gone)."""
        self.hits.clear()
        self.bytes.clear()
        self.step = 0

    def count(self, metric: str, site: Site, rule: str | None, nbytes: int = 0) -> None:
        with self._lock:
            self.hits[(metric, site, rule, self.step)] += 1
            if nbytes and metric == TRANSFER:
                self.bytes[(site, rule, self.step)] += nbytes

    def site_index(self, site: Site) -> int:
        with self._lock:
            idx = self._index.get(site)
            if idx is None:
                idx = self._index[site] = len(self.sites)
                self.sites.append(site)
            return idx
