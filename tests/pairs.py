"""Reference pairs: `rules/<CODE>-<name>/antipattern.py` and `optimized.py`.

Convention: `antipattern.py` defines `make_inputs()` (deterministic, seeded) and `run(*inputs)`;
`optimized.py` defines `run(*inputs)` for the same inputs and returns the same result. Both run on the
CPU in well under a second. `python -m tests.pairs` measures every pair with pytest_perf's recorder and
writes `perflint/effects.json`, which the rule pages quote and `test_rule_pairs.py` re-checks.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES_DIR = ROOT / "rules"
EFFECTS = ROOT / "perflint" / "effects.json"  # packaged: `perflint --explain` quotes it
COMMAND = "python -m tests.pairs"


def pair_dirs() -> list[Path]:
    return sorted(p.parent for p in RULES_DIR.glob("PFL*/antipattern.py"))


def load(path: Path):
    name = f"_pair_{path.parent.name.replace('-', '_')}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(run, inputs, metric: str = "") -> tuple[dict, object]:
    """Run once to warm up, then once under the recorder: (metrics, result). The plan collects what
    the rule's metric needs plus everything compatible with it (see `Plan.choose`)."""
    from pytest_perf.measure import Plan, Recorder

    plan = Plan.choose({metric} if metric else set(), everything=True)
    warm = Recorder(plan)  # warm up under the same plan: dynamo guards on the function-mode stack, so a
    warm.start()  # warm-up without the mode makes a compiled pair recompile (and count the trace's ops)
    try:
        run(*inputs)
    finally:
        warm.discard()
    recorder = Recorder(plan)
    recorder.start()
    try:
        result = run(*inputs)
    finally:
        recorder.stop()
    return recorder.result.metrics, result


def measure_pair(directory: Path, metric: str = "") -> tuple[dict, dict, object, object]:
    anti, opt = load(directory / "antipattern.py"), load(directory / "optimized.py")
    anti_metrics, anti_result = measure(anti.run, anti.make_inputs(), metric)
    opt_metrics, opt_result = measure(opt.run, anti.make_inputs(), metric)
    return anti_metrics, opt_metrics, anti_result, opt_result


# Pairs that run DDP on a one-rank gloo group. Tearing such a group down can deadlock inside torch: gloo
# work launched under the recorder's TorchFunctionMode keeps that Python object in its thread-local
# state, the gloo worker thread needs the GIL to release it, and DDP's reducer destroys the group (joining
# that thread) while holding the GIL (stacks seen with py-spy; about 1 run in 10). So the test measures
# them in a child process that keeps every DDP module alive (their reducers never release a group) and
# exits with os._exit once it has printed its figures, under a timeout, with one retry.
ISOLATED = ("PFL701", "PFL702", "PFL703")
_CHILD = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.pairs import measure_pair
import torch
from torch.nn.parallel import DistributedDataParallel
kept, init = [], DistributedDataParallel.__init__
DistributedDataParallel.__init__ = lambda self, *a, **k: (init(self, *a, **k), kept.append(self))[0]
a, o, ar, orr = measure_pair(Path({directory!r}), {metric!r})
plain = lambda r: r.tolist() if isinstance(r, torch.Tensor) else r
print(json.dumps([a, o, plain(ar), plain(orr)]), flush=True)
os._exit(0)
"""

def measure_pair_isolated(directory: Path, metric: str = "", timeout: float = 60,
                          tries: int = 2) -> tuple[dict, dict, object, object]:
    """measure_pair in a child process (see ISOLATED); tensors come back as nested lists."""
    import subprocess

    code = _CHILD.format(root=str(ROOT), directory=str(directory), metric=metric)
    for attempt in range(tries):
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            if attempt == tries - 1:
                raise
            continue
        if done.returncode != 0:
            raise RuntimeError(f"measuring {directory.name} failed:\n{done.stderr[-3000:]}")
        anti, opt, anti_result, opt_result = json.loads(done.stdout.strip().splitlines()[-1])
        return anti, opt, anti_result, opt_result
    raise AssertionError("unreachable")


def code_of(directory: Path) -> str:
    return directory.name.split("-", 1)[0]


def main() -> int:
    from perflint.rule import all_rules

    rules = all_rules()
    effects = json.loads(EFFECTS.read_text()) if EFFECTS.exists() else {}
    for directory in pair_dirs():
        rule = rules.get(code_of(directory))
        if rule is None or not rule.proof_metric or rule.gpu_only:
            continue
        metric = rule.proof_metric
        anti, opt, _, _ = measure_pair(directory, metric)
        entry = effects.get(rule.code, {})
        entry.update({"metric": metric, "antipattern": anti[metric], "optimized": opt[metric], "command": COMMAND})
        effects[rule.code] = entry
        print(f"{rule.code} {metric}: {anti[metric]} -> {opt[metric]}")
    EFFECTS.write_text(json.dumps(dict(sorted(effects.items())), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
