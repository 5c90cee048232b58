"""CPU wall-time ratio antipattern / optimized for every reference pair, in one run.

Usage: python benchmarks/bench_rule_pairs.py [--repeat N] [--write]

Each side runs once to warm up, then N times alternately; the figure is the ratio of the medians. A
pair whose effect exists only on a GPU is listed but not timed. With --write, the ratio of every pair
that is at least 1.2x faster on the CPU, and whose antipattern takes at least 0.5 ms (shorter runs are mostly
timer noise), goes into `perflint/effects.json` (the `benchmark` field quoted by the rule pages); the
others are left without a speed claim.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perflint.rule import all_rules  # noqa: E402
from tests.pairs import EFFECTS, code_of, load, pair_dirs  # noqa: E402

COMMAND = "python benchmarks/bench_rule_pairs.py --write"
THRESHOLD = 1.2
MIN_SECONDS = 0.5e-3


def _time(run, make_inputs) -> float:
    inputs = make_inputs()
    start = time.perf_counter()
    run(*inputs)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    rules = all_rules()
    effects = json.loads(EFFECTS.read_text()) if EFFECTS.exists() else {}
    for directory in pair_dirs():
        rule = rules[code_of(directory)]
        if rule.gpu_only:
            print(f"{rule.code:7s} GPU only: not timed")
            continue
        anti, opt = load(directory / "antipattern.py"), load(directory / "optimized.py")
        anti.run(*anti.make_inputs())
        opt.run(*anti.make_inputs())
        a_times, o_times = [], []
        for _ in range(args.repeat):
            a_times.append(_time(anti.run, anti.make_inputs))
            o_times.append(_time(opt.run, anti.make_inputs))
        a, o = statistics.median(a_times), statistics.median(o_times)
        ratio = a / o
        print(f"{rule.code:7s} antipattern {a * 1e3:9.2f} ms  optimized {o * 1e3:9.2f} ms  ratio {ratio:6.2f}x")
        entry = effects.setdefault(rule.code, {})
        if ratio >= THRESHOLD and a >= MIN_SECONDS:
            entry["benchmark"] = (f"CPU wall time, one thread: {a * 1e3:.2f} ms -> {o * 1e3:.2f} ms, "
                                  f"{ratio:.1f}x faster (median of {args.repeat}, `{COMMAND}`).")
        else:
            entry.pop("benchmark", None)
    if args.write:
        EFFECTS.write_text(json.dumps(dict(sorted(effects.items())), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
