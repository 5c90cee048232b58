"""Where libcst's parser crashes or crawls, and what perflint's depth guard costs (perflint/limits.py).

Usage: python benchmarks/bench_limits.py [CORPUS_DIR] [--timeout S]

For each kind of deep code, finds by bisection the smallest size at which `libcst.parse_module` kills its
process or runs past the timeout (each try in a fresh subprocess, so a crash costs nothing here) and
prints it as the depth that limits.py measures, with the parse time at MAX_DEPTH. With CORPUS_DIR, also
the guard's cost against a bare parse over every .py file there, how many files needed the level-by-level
count, and the deepest statement found.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from perflint.limits import _STRINGS, MAX_DEPTH, _crowded, _nesting, too_deep  # noqa: E402

KINDS = {
    "a + a + ...": lambda n: "x = " + " + ".join(["a"] * n) + "\n",
    "a and a and ...": lambda n: "x = " + " and ".join(["a"] * n) + "\n",
    "a.b.b...": lambda n: "x = a" + ".b" * n + "\n",
    "a[0][0]...": lambda n: "x = a" + "[0]" * n + "\n",
    "a.f().f()...": lambda n: "x = a" + ".f()" * n + "\n",
    "not not ... a": lambda n: "x = " + "not " * n + "a\n",
    "- - ... a": lambda n: "x = " + "-" * n + "a\n",
    "a if b else ...": lambda n: "x = " + "a if b else " * n + "a\n",
    "lambda: lambda: ...": lambda n: "x = " + "lambda: " * n + "a\n",
    "if/elif/elif...": lambda n: "if a:\n    pass\n" + "elif a:\n    pass\n" * n,
}
_PROBE = "import sys, libcst; libcst.parse_module(sys.stdin.read())"


def _parse(source: str, timeout: float) -> tuple[str, float]:
    start = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE], input=source, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "slow", timeout
    seconds = time.perf_counter() - start
    return ("crash" if r.returncode < 0 else "ok" if r.returncode == 0 else "error"), seconds


def _measure(source: str) -> int:
    """The depth as limits.py measures it: chain tokens and brackets, or the ast for `elif` chains."""
    if "elif" in source:
        tree, deepest, stack = ast.parse(source), 0, []
        stack.append((tree, 1))
        while stack:
            node, depth = stack.pop()
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
        return deepest
    return _nesting(_STRINGS.sub("''", source))


def depth_of(make, n: int) -> int:
    """Depth grows linearly with n for every kind here: measured at small sizes, extrapolated (a parse of
    the big ones could exhaust this process's own stack)."""
    d10, d20 = _measure(make(10)), _measure(make(20))
    return d10 + (n - 10) * (d20 - d10) // 10


def crash_point(make, timeout: float) -> tuple[int, str]:
    """The smallest n (to 2%) at which parsing is not ok, and what happens there; (0, "ok") if none to 40,000."""
    lo, hi = 100, 40_000
    outcome, _ = _parse(make(hi), timeout)
    if outcome == "ok":
        return 0, "ok"
    while hi - lo > max(2, lo // 50):
        mid = (lo + hi) // 2
        result, _ = _parse(make(mid), timeout)
        if result == "ok":
            lo = mid
        else:
            hi, outcome = mid, result
    return hi, outcome


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path, nargs="?")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    print(f"MAX_DEPTH = {MAX_DEPTH}; a fresh `python -c 'import libcst'` is included in each time")
    print(f"{'kind':22s} {'fails at depth':>15s} {'how':>6s} {'parse s at MAX_DEPTH':>21s}")
    for name, make in KINDS.items():
        n = max(n for n in range(1, 2 * MAX_DEPTH) if depth_of(make, n) <= MAX_DEPTH)
        outcome, seconds = _parse(make(n), args.timeout)
        at, how = crash_point(make, args.timeout)
        print(f"{name:22s} {depth_of(make, at) if at else '-':>15} {how:>6s} {seconds:17.2f} ({outcome})",
              flush=True)
    if args.corpus:
        import libcst

        files = sorted(p for p in args.corpus.rglob("*.py") if ".git" not in p.parts)
        texts = [p.read_bytes().decode("utf-8", "replace") for p in files]
        start = time.process_time()
        for t in texts:
            too_deep(t)
        guard = time.process_time() - start
        flagged = [t for t in texts if len(t) > MAX_DEPTH and any(True for _ in _crowded(t))]
        start = time.process_time()
        for t in texts:
            try:
                libcst.parse_module(t)
            except Exception:
                pass
        parse = time.process_time() - start
        deepest = max((_nesting(_STRINGS.sub("''", t)), str(p)) for p, t in zip(files, texts))
        print(f"{len(files)} files: guard {guard:.3f} s, parse {parse:.2f} s ({100 * guard / parse:.2f}%); "
              f"{len(flagged)} needed the level-by-level count; deepest statement {deepest[0]} ({deepest[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
