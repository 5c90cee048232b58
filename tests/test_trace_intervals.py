"""The array sweeps behind the trace figures, checked against brute force on random input."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from perflint.measures import intervals
from perflint.trace.hostindex import enclosing, top_level_ops
from perflint.trace.model import HostOp, Trace
from tests.conftest import SYNC_LOOP

SPANS = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)).map(lambda p: (p[0], p[0] + p[1])),
                 max_size=25)


def covered(spans) -> set[float]:
    """Half-unit points covered by the spans (on integer input, enough to tell intervals apart)."""
    return {t + 0.5 for s, e in spans for t in range(int(s), int(e))}


def pairs(s: intervals.Spans) -> list[tuple[float, float]]:
    return list(zip(s.starts.tolist(), s.ends.tolist()))


@settings(max_examples=300, deadline=None)
@given(SPANS, SPANS)
def test_union_intersect_total_match_brute_force(a, b):
    ua, ub = intervals.union(*zip(*a)) if a else intervals.EMPTY, intervals.union(*zip(*b)) if b else intervals.EMPTY
    for spans, u in ((a, ua), (b, ub)):
        merged = pairs(u)
        assert all(e1 < s2 for (_, e1), (s2, _) in zip(merged, merged[1:]))  # sorted, disjoint, not touching
        assert covered(merged) == covered(spans) and intervals.total(u) == len(covered(spans))
    both = pairs(intervals.intersect(ua, ub))
    assert all(s < e for s, e in both)
    assert covered(both) == covered(a) & covered(b)
    assert pairs(intervals.gaps(ua)) == [(e, s) for (_, e), (s, _) in zip(pairs(ua), pairs(ua)[1:])]


OPS = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15), st.sampled_from([1, 2]),
                         st.sampled_from(["op", "annotation"])), max_size=30)


@settings(max_examples=300, deadline=None)
@given(OPS, st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.integers(0, 50), st.integers(0, 5)), max_size=8))
def test_enclosing_and_top_level_match_their_definitions(ops, queries):
    host = [HostOp(f"e{k}", ts, dur, tid, kind) for k, (ts, dur, tid, kind) in enumerate(ops)]
    trace = Trace("t", host_ops=host)
    queries = [(tid, s, s + d) for tid, s, d in queries]
    for (tid, s, e), chain in zip(queries, enclosing(trace, queries)):
        expected = sorted((h for h in trace.host_ops if h.tid == tid and h.ts <= s and h.ts + h.dur >= e),
                          key=lambda h: (h.ts, -h.dur))
        assert sorted(chain, key=lambda h: h.name) == sorted(expected, key=lambda h: h.name)
        assert [(h.ts, -h.dur) for h in chain] == [(h.ts, -h.dur) for h in expected]  # outermost first
    tops = 0
    for tid in {h.tid for h in trace.host_ops}:
        reach = float("-inf")
        ops = sorted((h for h in trace.host_ops if h.tid == tid and h.kind == "op"), key=lambda h: (h.ts, -h.dur))
        for h in ops:
            tops += h.ts >= reach
            reach = max(reach, h.ts + h.dur)
    assert top_level_ops(trace) == tops


def test_trace_command_without_numpy_is_one_line_exit_2():
    code = "import sys; sys.modules['numpy'] = None\nfrom perflint.cli import main\nsys.exit(main(['trace', 'x.json']))\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "perflint trace: error: needs the 'numpy' package: pip install 'torch-perflint[trace]'\n"


def test_linter_does_not_import_numpy(tmp_path):
    (tmp_path / "a.py").write_text(SYNC_LOOP)
    code = "import sys; sys.modules['numpy'] = None\nfrom perflint.cli import main\nsys.exit(main(['--no-cache', 'a.py']))\n"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1 and "PFL101" in r.stdout, r.stderr
