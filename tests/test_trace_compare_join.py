"""`perflint trace BEFORE --compare AFTER` and `perflint src/ --trace TRACE`, on the real traces (the A/B
pair trace_diff control/test; the 2021 ResNet-50 trace recorded with stacks) and on a trace recorded
here on the CPU from the bundled example."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perflint.trace.cli import main as trace_main
from tests.test_trace_real import FILES, TRACES

ROOT = Path(__file__).resolve().parents[1]
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason=f"recorded traces not found at {TRACES}")
CONTROL, TEST = str(TRACES / FILES["control"]), str(TRACES / FILES["test"])


@needs_traces
def test_compare_two_real_traces(capsys):
    """control (A100, rank 3 of 8) -> test (V100, rank 1 of 2): per metric, device work and op, largest
    change first."""
    assert trace_main([CONTROL, "--compare", TEST, "--output-format", "json"]) == 0
    (c,) = json.loads(capsys.readouterr().out)
    metrics = {ch["name"]: ch for ch in c["changes"] if ch["section"] == "metric"}
    assert metrics["kernels"]["before"] == 8568 and metrics["kernels"]["after"] == 9876
    assert metrics["kernels"]["delta"] == 9876 - 8568
    work = [ch for ch in c["changes"] if ch["section"] == "device work"]
    assert [abs(ch["delta"]) for ch in work] == sorted((abs(ch["delta"]) for ch in work), reverse=True)
    ops = [ch for ch in c["changes"] if ch["section"] == "op"]
    assert ops and abs(ops[0]["delta"]) >= abs(ops[-1]["delta"])


@needs_traces
def test_compare_fails_on_a_relative_regression(capsys):
    """test launches 15% more kernels than control: +10% fails, +20% holds."""
    assert trace_main([CONTROL, "--compare", TEST, "--budget", "max_kernels=+10%"]) == 1
    out = capsys.readouterr().out
    assert "budget broken: kernels 9876 > 9424.8" in out
    assert trace_main([CONTROL, "--compare", TEST, "--budget", "max_kernels=+20%"]) == 0


@needs_traces
def test_compare_with_a_saved_report(tmp_path, capsys):
    """A saved `--output-format json` report is a baseline as good as the trace itself."""
    assert trace_main([CONTROL, "--output-format", "json"]) == 0
    saved = tmp_path / "baseline.json"
    saved.write_text(capsys.readouterr().out)
    trace_main([str(saved), "--compare", TEST, "--output-format", "json"])
    from_saved = json.loads(capsys.readouterr().out)
    trace_main([CONTROL, "--compare", TEST, "--output-format", "json"])
    from_trace = json.loads(capsys.readouterr().out)
    assert from_saved[0]["changes"] == from_trace[0]["changes"]


def test_relative_budget_without_compare_is_a_usage_error(tmp_path, capsys):
    from tests.test_trace_synthetic import kineto_trace

    path = tmp_path / "t.json"
    path.write_text(json.dumps(kineto_trace()))
    assert trace_main([str(path), "--budget", "max_kernels=+10%"]) == 2
    assert "needs --compare" in capsys.readouterr().err


def _lint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflint", "--no-cache", *args], capture_output=True, text=True,
                          cwd=ROOT)


@needs_traces
def test_join_lists_what_the_linter_missed_on_a_real_trace(tmp_path):
    """ResNet-50 (2021, with stacks): the script that ran is not among the linted files, so its costly
    line (44: the pageable loader-batch copies and their syncs) is listed as missed, and the example's
    findings are not seen in this trace."""
    done = _lint("examples/train_antipattern.py", "--trace", str(TRACES / FILES["resnet_legacy"]),
                 "--output-format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert {f["trace"]["status"] for f in report["findings"]} == {"not seen in this trace"}
    (missed,) = report["missed"]
    assert missed["place"] == "resnet50_profiler_api.py:44" and missed["rules"] == ["PFL503"]
    m = missed["measured"]
    assert (m["syncs"], m["transfers"], m["calls"]) == (12, 12, 12)


@pytest.fixture(scope="module")
def example_trace(tmp_path_factory):
    """A trace recorded here on the CPU from examples/train_antipattern.py, with stacks and shapes."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_antipattern as example
    finally:
        sys.path.pop(0)
    model, data = example.make_model(), example.batches(4)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        example.train(model, data)
    folder = tmp_path_factory.mktemp("example")
    prof.export_chrome_trace(str(folder / "train.json"))
    with open(folder / "train.json", "rb") as f, gzip.open(folder / "train.json.gz", "wb") as g:
        shutil.copyfileobj(f, g)
    del torch
    return str(folder / "train.json.gz")


def test_join_confirms_the_examples_findings(example_trace):
    """Python frames name functions by their `def` line, so findings are matched within `train` by the
    ops their rule is about: 4 steps give 4 aten::item (PFL101), 4 aten::is_nonzero (PFL105, when the
    linter reports it: it may keep only a step's first wait), 4 aten::cat (PFL302)."""
    done = _lint("--select", "PFL101,PFL105,PFL302,PFL801", "examples/train_antipattern.py",
                 "--trace", example_trace, "--output-format", "json")
    report = json.loads(done.stdout)
    by_code = {f["code"]: f["trace"] for f in report["findings"]}
    assert {"PFL101", "PFL302", "PFL801"} <= set(by_code)
    expected = {"PFL101": {"aten::item": 4}, "PFL105": {"aten::is_nonzero": 4}, "PFL302": {"aten::cat": 4}}
    for code, ops in expected.items():
        if code in by_code:
            assert by_code[code]["status"] == "confirmed" and by_code[code]["measured"]["ops"] == ops, code
            assert by_code[code]["where"] == "function at line 24"  # def train(...)
    assert by_code["PFL801"]["status"] == "not seen in this trace"  # a TF32 setting: no op shows it


def test_join_text_and_errors(example_trace, tmp_path):
    done = _lint("--select", "PFL101", "examples/train_antipattern.py", "--trace", example_trace)
    assert "    trace: confirmed (function at line 24: 4 op call(s); 4x aten::item)" in done.stdout
    assert "1 of 1 finding(s) confirmed" in done.stdout
    missing = _lint("examples/train_antipattern.py", "--trace", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


def test_linter_without_trace_imports_neither_torch_nor_numpy():
    code = ("import sys; from perflint.cli import main; main(['--no-cache', '--quiet', 'examples/train_optimized.py']);"
            "print([m for m in ('torch', 'numpy') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1] == "[]"
