"""Which user source line caused a counted event, and how to say so in one line.

Only the rare events that a budget may need to explain (syncs, transfers) capture a frame: the function
mode in `measure` calls `user_site()` for them, so ordinary ops pay nothing. No pytest, no torch import.
"""

from __future__ import annotations

import linecache
import os
import sys
from collections import Counter
from dataclasses import dataclass

from perflint.measures.budgets import Verdict
from perflint.measures.metrics import format_value, unit

_HERE = os.path.dirname(os.path.abspath(__file__))
_SKIP_DIRS: tuple[str, ...] = (_HERE + os.sep,)


def skip_library(module_file: str | None) -> None:
    """Frames inside this package directory are library frames, never the user's line (torch's own)."""
    global _SKIP_DIRS
    if module_file:
        d = os.path.dirname(os.path.abspath(module_file)) + os.sep
        if d not in _SKIP_DIRS:
            _SKIP_DIRS = (*_SKIP_DIRS, d)


@dataclass(frozen=True)
class Site:
    """A source line and the API called on it (e.g. `Tensor.item`), or a torch-internal op when no
    Python frame saw the call (file is then "<torch>")."""

    file: str
    line: int
    api: str

    @property
    def code(self) -> str:
        if self.file.startswith("<"):
            return ""
        return linecache.getline(self.file, self.line).strip()

    def location(self, root: str | None = None) -> str:
        if self.file == "<dynamo>":
            return self.api
        if self.file.startswith("<"):
            return f"inside {self.api}"
        path = self.file
        if root:
            try:
                rel = os.path.relpath(path, root)
                if not rel.startswith(".."):
                    path = rel
            except ValueError:  # another drive on Windows
                pass
        return f"{path}:{self.line}"


def user_site(api: str, depth: int = 2) -> Site:
    """The first frame outside torch and pytest_perf: the line the user wrote."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back
    if frame is None:
        return Site("<unknown>", 0, api)
    return Site(frame.f_code.co_filename, frame.f_lineno, api)


def causes(metric: str, hits: Counter) -> list[tuple[int, Site, str | None]]:
    """(count, site, rule) for one metric, biggest first; ties in a stable order."""
    return sorted(((n, site, rule) for (m, site, rule), n in hits.items() if m == metric),
                  key=lambda c: (-c[0], c[1].file, c[1].line, c[1].api))


def first_line(metric: str, hits: Counter) -> tuple[str, int] | None:
    """The user source line behind most of a metric: where a CI annotation goes."""
    for _, site, _ in causes(metric, hits):
        if not site.file.startswith("<"):
            return site.file, site.line
    return None


def explain(verdict: Verdict, hits: Counter, root: str | None = None, limit: int = 3,
            top_ops: Counter | None = None) -> str:
    """ "syncs 200 > 0: train.py:42 `loss.item()` (200x, PFL101); ..." for a failing verdict.

    `hits` counts (metric, Site, rule) triples; the biggest causes come first. Op counts have no source
    lines (that would need stacks for every op), so they name the most frequent ops instead."""
    found = causes(verdict.metric, hits)
    head = verdict.describe()
    if not found and top_ops and verdict.metric in ("ops", "kernels"):
        common = ", ".join(f"{name} {n}x" for name, n in sorted(top_ops.items(), key=lambda x: (-x[1], x[0]))[:limit])
        return f"{head}: most frequent ops {common}"
    if not found:
        return head
    parts = []
    bytes_ = unit(verdict.metric) == "bytes"
    for n, site, rule in found[:limit]:
        code = f" `{site.code}`" if site.code else ""
        tag = f", {rule}" if rule else ""
        note = f" [{site.api}]" if site.api.startswith(("recompile", "graph break")) and site.code else ""
        amount = format_value("bytes", n) if bytes_ else f"{n}x"
        parts.append(f"{site.location(root)}{code}{note} ({amount}{tag})")
    more = len(found) - limit
    return head + ": " + "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
