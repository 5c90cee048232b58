"""Traces written by `pytest --perf-budget --perf-trace-dir DIR` open in Perfetto (Chrome Trace Event
Format JSON) and in TensorBoard's profiler plugin (torch-tb-profiler, deprecated upstream, the optional
`tensorboard` extra): the real plugin parses them when it is installed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch", reason="the pytest plugin needs torch to record traces")

FAILING_BUDGET = textwrap.dedent("""\
    import pytest, torch

    @pytest.mark.perf_budget(max_syncs=0)
    def test_dirty():
        x = torch.ones(32, 32)
        (x @ x).sum().item()
    """)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The trace files of one real pytest run with a broken budget."""
    root = tmp_path_factory.mktemp("traced")
    (root / "test_traced.py").write_text(FAILING_BUDGET)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--perf-budget",
                        "--perf-trace-dir", "traces", "test_traced.py"], cwd=root, capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    files = sorted((root / "traces").iterdir())
    assert files, r.stdout
    return files


def test_traces_are_chrome_trace_event_format(traces):
    """What Perfetto's and chrome://tracing's JSON importers read."""
    for path in traces:
        assert path.name.endswith(".pt.trace.json")
        events = json.loads(path.read_text())["traceEvents"]
        assert isinstance(events, list) and events
        for e in events:
            assert isinstance(e["ph"], str) and len(e["ph"]) == 1
            if e["ph"] in "XBEi":
                assert isinstance(e["name"], str) and isinstance(e["ts"], (int, float)) and "pid" in e
            if e["ph"] == "X":
                assert e["dur"] >= 0
        assert any(e.get("ph") == "X" and e["name"].startswith("aten::") for e in events)


def test_tensorboard_profiler_plugin_loads_the_traces(traces, tmp_path):
    tb = pytest.importorskip("torch_tb_profiler", reason="pip install 'torch-perflint[tensorboard]' to check it")
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    for path in traces:
        worker = tb.consts.WORKER_PATTERN.match(path.name)
        assert worker, f"{path.name}: TensorBoard would not list this file as a worker of the run"
        data = RunProfileData.parse(worker.group(1), None, str(path), str(tmp_path))
        profile = RunGenerator(worker.group(1), None, data).generate_run_profile()
        assert {"overall", "operator", "trace"} <= {view.name for view in profile.views}
