"""The perf_budget plugin end to end, through pytester: marker, keys, fixture, reports, baselines, errors."""

import json
import os
import re
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]
torch = pytest.importorskip("torch")

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


@pytest.fixture
def pytester(pytester, monkeypatch):
    """pytester, but in-process runs forget only the test modules they imported: torch cannot be imported
    twice (its operator libraries register once per process) and the inner runs import torch._dynamo,
    sympy and friends lazily."""
    from _pytest.pytester import SysModulesSnapshot

    def snapshot(self):
        return SysModulesSnapshot(preserve=lambda name: not name.startswith(("test_", "conftest")))

    if hasattr(type(pytester), "_Pytester__take_sys_modules_snapshot"):
        monkeypatch.setattr(type(pytester), "_Pytester__take_sys_modules_snapshot", snapshot)
        monkeypatch.setattr(pytester, "_sys_modules_snapshot", snapshot(pytester))
    return pytester


ITEMS = """
    import pytest, torch

    @pytest.mark.perf_budget(max_syncs={budget})
    def test_items():
        t = torch.ones(3)
        for _ in range({n}):
            t.sum().item()
"""


def write(pytester, name, source, **fmt):
    return pytester.makepyfile(**{name: textwrap.dedent(source).format(**fmt) if fmt else textwrap.dedent(source)})


def outcomes(reprec):
    """nodeid name -> outcome of its call (or setup, when that failed)."""
    out = {}
    for rep in reprec.getreports("pytest_runtest_logreport"):
        if rep.when == "call" or rep.outcome != "passed":
            out[rep.nodeid.split("::")[-1]] = rep.outcome
    return out


def test_off_by_default_marked_tests_just_run(pytester):
    write(pytester, "test_off", ITEMS, budget=0, n=3)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["perf budgets: off*--perf-budget*"])


def test_over_budget_fails_with_the_line_and_rule(pytester):
    write(pytester, "test_on", ITEMS, budget=2, n=3)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "perf budgets: on*",
        "*syncs 3 > 2: test_on.py:7 `t.sum().item()` (3x, PFL101)*",
        "*test_on.py::test_items*syncs*3*2*FAIL*",
    ])
    assert "Traceback" not in result.stdout.str()


def test_ini_option_turns_budgets_on(pytester):
    write(pytester, "test_ini", ITEMS, budget=0, n=1)
    pytester.makeini("[pytest]\nperf_budget = true\n")
    pytester.runpytest().assert_outcomes(failed=1)


EVERY_KEY = """
    import pytest, torch

    def body(n):
        x = torch.ones(256)
        for _ in range(n):
            x.sum().item()
            x.cpu()

    def compiled(n):
        torch._dynamo.reset()
        def f(x):
            if x.sum().item() > 0:
                x = x + 1
            return x * 2
        fn = torch.compile(f, backend="eager")
        for size in range(2, 2 + n):
            fn(torch.ones(size))

    @pytest.mark.perf_budget(max_syncs=4)
    def test_syncs_pass(): body(2)
    @pytest.mark.perf_budget(max_syncs=3)
    def test_syncs_fail(): body(2)
    @pytest.mark.perf_budget(max_ops=8)
    def test_ops_pass(): body(2)
    @pytest.mark.perf_budget(max_ops=5)
    def test_ops_fail(): body(2)
    @pytest.mark.perf_budget(max_kernels=8)
    def test_kernels_pass(): body(2)
    @pytest.mark.perf_budget(max_kernels=5)
    def test_kernels_fail(): body(2)
    @pytest.mark.perf_budget(max_transfers=2)
    def test_transfers_pass(): body(2)
    @pytest.mark.perf_budget(max_transfers=1)
    def test_transfers_fail(): body(2)
    @pytest.mark.perf_budget(max_transfer_bytes="2 KiB")
    def test_transfer_bytes_pass(): body(2)
    @pytest.mark.perf_budget(max_transfer_bytes="1 KiB")
    def test_transfer_bytes_fail(): body(2)
    @pytest.mark.perf_budget(max_peak_memory="1 MB")
    def test_peak_memory_pass(): torch.zeros(1000)
    @pytest.mark.perf_budget(max_peak_memory="1 MB")
    def test_peak_memory_fail(): torch.zeros(1_000_000)
    @pytest.mark.perf_budget(ops={"aten::cat": 1})
    def test_op_caps_pass(): torch.cat([torch.ones(1)] * 2)
    @pytest.mark.perf_budget(ops={"aten::cat": 1})
    def test_op_caps_fail(): [torch.cat([torch.ones(1)] * 2) for _ in range(2)]
    @pytest.mark.perf_budget(max_graph_breaks=0)
    def test_graph_breaks_fail(): compiled(1)
    @pytest.mark.perf_budget(max_graph_breaks=5)
    def test_graph_breaks_pass(): compiled(1)
    @pytest.mark.perf_budget(max_recompiles=0)
    def test_recompiles_fail(): compiled(2)
    @pytest.mark.perf_budget(max_recompiles=0)
    def test_recompiles_pass(): compiled(1)
    @pytest.mark.perf_budget(max_syncs=2, per_step=True)
    def test_per_step_pass(perf):
        for _ in range(3):
            body(1)
            perf.step()
    @pytest.mark.perf_budget(max_syncs=2, per_step=True)
    def test_per_step_fail(perf):
        for n in range(3):
            body(n)
            perf.step()
    @pytest.mark.perf_budget(max_syncs=9, per_step=True)
    def test_per_step_without_steps_fail(): body(1)
    @pytest.mark.perf_budget(min_overlap=0.5, max_comm_bytes="1 MB", min_comm_overlap=0.1, max_collectives=0)
    def test_unmeasurable_here_are_skipped_pass(): body(1)
"""


def test_every_key_passes_within_and_fails_over_budget(pytester):
    write(pytester, "test_keys", EVERY_KEY)
    reprec = pytester.inline_run("--perf-budget")
    got = outcomes(reprec)
    expected = {name: "failed" if name.endswith("_fail") else "passed" for name in got}
    assert got == expected and len(got) == 22
    text = "\n".join(str(r.longrepr) for r in reprec.getfailures())
    assert "per_step=True but the test marked no steps" in text
    assert "worst is step 3 of 3" in text
    assert "PFL402" in text and "PFL404" in text


def test_unmeasurable_budgets_are_reported_as_skipped(pytester):
    write(pytester, "test_keys", EVERY_KEY)
    result = pytester.runpytest("--perf-budget", "-k", "unmeasurable")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*queue_overlap*SKIP: needs a GPU*",
        "*comm_bytes*SKIP: not measured*",
        "*collectives*0*PASS*",
    ])


def test_collectives_are_counted_once(pytester):
    write(pytester, "test_dist", """
        import socket, pytest, torch, torch.distributed as dist

        @pytest.mark.perf_budget(max_collectives=2)
        def test_three_all_reduces():
            s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
            try:
                for _ in range(3):
                    dist.all_reduce(torch.ones(2))
            finally:
                dist.destroy_process_group()
    """)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*collectives 3 > 2*"])


@pytest.mark.parametrize("marker, message", [
    ("max_sync=0", "unknown budget key 'max_sync'; valid keys: max_syncs, max_ops,*"),
    ("max_syncs='many'", "*max_syncs must be a number*"),
    ("max_ops=-1", "*max_ops must not be negative*"),
    ("min_overlap=1.5", "*min_overlap is a ratio between 0 and 1*"),
    ("max_peak_memory='lots'", "*cannot read size 'lots'*"),
    ("5", "*perf_budget takes keyword arguments only*valid keys*"),
])
def test_a_bad_marker_is_a_collection_error_listing_valid_keys(pytester, marker, message):
    write(pytester, "test_bad", f"""
        import pytest

        @pytest.mark.perf_budget({marker})
        def test_x():
            pass

        def test_other():
            pass
    """)
    result = pytester.runpytest()  # also without --perf-budget: a typo should not wait for CI
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting test_bad.py*", f"*test_bad.py::test_x: invalid *{message}"])
    assert "Traceback" not in result.stdout.str()


FIXTURE = """
    import pytest, torch

    def syncs(n):
        t = torch.ones(2)
        for _ in range(n):
            t.sum().item()

    @pytest.mark.perf_budget(max_syncs=1)
    def test_region_skips_setup(perf):
        syncs(50)  # setup
        with perf.region():
            syncs(1)
        syncs(50)  # teardown-ish work after the region
        assert perf.metrics["syncs"] == 1

    @pytest.mark.perf_budget(max_syncs=1)
    def test_warmup_is_not_measured(perf):
        with perf.region():
            perf.warmup(lambda: syncs(10), n=3)
            syncs(1)
        assert perf.metrics["syncs"] == 1

    def test_metrics_without_a_marker(perf):
        with perf.region():
            syncs(4)
            with pytest.raises(RuntimeError, match="after a `with perf.region"):
                perf.metrics
        with perf.region():  # regions add up
            syncs(1)
        assert perf.metrics["syncs"] == 5 and perf.op_counts["aten::item"] == 5

    def test_steps_of_the_fixture(perf):
        with perf.region():
            for n in range(3):
                syncs(n)
                perf.step()
        assert [s["syncs"] for s in perf.steps] == [0, 1, 2]

    def test_metrics_before_measuring(perf):
        with pytest.raises(RuntimeError, match="nothing measured yet"):
            perf.metrics
"""


@pytest.mark.parametrize("flag", [[], ["--perf-budget"]])
def test_the_perf_fixture(pytester, flag):
    write(pytester, "test_fixture", FIXTURE)
    pytester.runpytest(*flag).assert_outcomes(passed=5)


REPORTED = """
    import pytest, torch

    @pytest.mark.perf_budget(max_syncs=0)
    def test_clean():
        torch.ones(2) + 1

    @pytest.mark.perf_budget(max_syncs=0)
    def test_dirty():
        torch.ones(2).sum().item()
"""


def test_json_report_trace_dir_and_github_annotations(pytester, monkeypatch):
    write(pytester, "test_rep", REPORTED)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = pytester.runpytest("--perf-budget", "--perf-report", "perf.json", "--perf-trace-dir", "traces")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "::error file=test_rep.py,line=9,title=perf budget max_syncs in test_rep.py%3A%3Atest_dirty::"
        "syncs 1 > 0: test_rep.py:9 `torch.ones(2).sum().item()` (1x, PFL101)"])
    report = json.loads((pytester.path / "perf.json").read_text())
    assert set(report["tests"]) == {"test_rep.py::test_clean", "test_rep.py::test_dirty"}
    dirty = report["tests"]["test_rep.py::test_dirty"]
    assert dirty["metrics"]["syncs"] == 1 and dirty["metrics"]["ops"] >= 3
    assert dirty["metrics"]["queue_overlap"] is None
    assert dirty["verdicts"][0]["status"] == "fail" and dirty["verdicts"][0]["line"] == 9
    traces = os.listdir(pytester.path / "traces")
    assert traces == ["test_rep.py_test_dirty.pt.trace.json"]
    trace = json.loads((pytester.path / "traces" / traces[0]).read_text())
    assert any(e.get("name") == "aten::_local_scalar_dense" for e in trace["traceEvents"])


def test_trace_all(pytester):
    write(pytester, "test_rep", REPORTED)
    pytester.runpytest("--perf-budget", "--perf-trace-dir", "traces", "--perf-trace-all")
    assert len(os.listdir(pytester.path / "traces")) == 2


BASELINED = """
    import pytest, torch

    @pytest.mark.perf_budget({marker})
    def test_loop():
        for _ in range({n}):
            torch.ones(2).sum().item()
"""


def test_baseline_update_then_fail_on_increase(pytester):
    write(pytester, "test_base", BASELINED, marker="", n=3)
    result = pytester.runpytest("--perf-update-baseline")
    result.assert_outcomes(passed=1)
    recorded = json.loads((pytester.path / ".perf-baseline.json").read_text())
    assert recorded["tests"]["test_base.py::test_loop"]["syncs"] == 3

    pytester.runpytest("--perf-fail-on-increase").assert_outcomes(passed=1)  # unchanged code
    write(pytester, "test_base", BASELINED, marker="", n=5)
    result = pytester.runpytest("--perf-fail-on-increase")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*syncs 5 > 3: test_base.py:6 `torch.ones(2).sum().item()` (5x, PFL101)*",
                                 "*syncs*5*3 (baseline)*FAIL*"])

    write(pytester, "test_base", BASELINED, marker="baseline=True", n=5)  # per-test opt-in, no flag
    pytester.runpytest("--perf-budget").assert_outcomes(failed=1)
    pytester.runpytest().assert_outcomes(passed=1)  # budgets off: runs normally


def test_no_recorded_baseline_is_a_skip_not_a_pass(pytester):
    write(pytester, "test_base", BASELINED, marker="baseline=True", n=1)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SKIP: no baseline recorded for this test*"])


def test_xdist_enforces_on_workers_and_summarises_once(pytester):
    pytest.importorskip("xdist")
    write(pytester, "test_rep", REPORTED)
    result = pytester.runpytest("--perf-budget", "-n", "2", "--perf-report", "perf.json")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert out.count("= perf budgets =") == 1
    result.stdout.fnmatch_lines(["*syncs 1 > 0: test_rep.py:9*PFL101*"])
    assert len(json.loads((pytester.path / "perf.json").read_text())["tests"]) == 2


def test_without_torch_marked_tests_error_with_an_install_hint(pytester, monkeypatch):
    write(pytester, "test_notorch", """
        import pytest

        @pytest.mark.perf_budget(max_syncs=0)
        def test_marked():
            pass

        def test_plain():
            pass

        def test_fixture(perf):
            pass
    """)
    monkeypatch.setitem(sys.modules, "torch", None)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*pip install 'torch-perflint?pytest?'*"])
    assert "Traceback" not in result.stdout.str()


def test_a_test_running_its_own_profiler_gets_a_clear_error(pytester):
    write(pytester, "test_prof", """
        import pytest, torch

        @pytest.mark.perf_budget(max_syncs=0)
        def test_own_profiler():
            with torch.profiler.profile():
                torch.ones(2) + 1

        @pytest.mark.perf_budget(max_syncs=0)
        def test_next_one_is_measured():
            torch.ones(2) + 1
    """)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*started its own torch profiler*"])
    assert "Traceback" not in result.stdout.str()
    assert not torch._C._autograd._profiler_enabled()


def test_a_failing_test_still_stops_the_profiler_and_reports(pytester):
    write(pytester, "test_fail", """
        import pytest, torch

        @pytest.mark.perf_budget(max_syncs=5)
        def test_raises():
            torch.ones(2).sum().item()
            raise ValueError("the test's own failure")
    """)
    result = pytester.runpytest("--perf-budget", "--perf-report", "perf.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ValueError: the test's own failure*"])
    report = json.loads((pytester.path / "perf.json").read_text())
    assert report["tests"]["test_fail.py::test_raises"]["metrics"]["syncs"] == 1
    assert not torch._C._autograd._profiler_enabled() and torch._C._len_torch_function_stack() == 0


def test_bundled_examples_pass_optimized_and_fail_antipattern(pytester):
    reprec = pytester.inline_run(EXAMPLES, "--perf-budget", "-p", "no:logging")
    got = outcomes(reprec)
    assert {n for n, o in got.items() if o == "failed"} == {n for n in got if "[antipattern]" in n}
    assert len(got) == 17
    text = "\n".join(str(r.longrepr) for r in reprec.getfailures())
    assert "train_antipattern.py:36 `total += loss.item()  # PFL101: a sync every step` (20x, PFL101)" in text


def test_an_interrupted_test_leaves_no_profiler_behind(pytester):
    write(pytester, "test_interrupt", """
        import pytest, torch

        @pytest.mark.perf_budget(max_syncs=0)
        def test_ctrl_c():
            torch.ones(2).sum().item()
            raise KeyboardInterrupt
    """)
    reprec = pytester.inline_run("--perf-budget", no_reraise_ctrlc=True)
    assert reprec.ret == pytest.ExitCode.INTERRUPTED
    assert not torch._C._autograd._profiler_enabled() and torch._C._len_torch_function_stack() == 0
    assert torch.cuda.synchronize.__module__ == "torch.cuda"


@pytest.mark.parametrize("marker", ["max_syncs=float('inf')", "max_ops=float('nan')", "min_overlap=float('nan')",
                                    "max_peak_memory=float('inf')", "timeout=float('inf'), world_size=2",
                                    "ops={'aten::cat': float('inf')}"])
@pytest.mark.parametrize("flag", [[], ["--perf-budget"]])
def test_an_infinite_or_nan_budget_is_a_collection_error(pytester, marker, flag):
    write(pytester, "test_bad", f"""
        import pytest

        @pytest.mark.perf_budget({marker})
        def test_x():
            pass
    """)
    result = pytester.runpytest(*flag)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # "errors during collection", not an INTERNALERROR (3)
    result.assert_outcomes(errors=1)
    assert re.search(r"test_bad.py::test_x: invalid @pytest.mark.perf_budget: .*\b(inf|nan)\b", result.stdout.str())
    assert "INTERNALERROR" not in result.stdout.str() and "Traceback" not in result.stdout.str()


def test_a_misspelled_key_gets_a_did_you_mean(pytester):
    write(pytester, "test_bad", """
        import pytest

        @pytest.mark.perf_budget(max_sync=0, min_overlapp=0.5)
        def test_x():
            pass
    """)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown budget key 'max_sync'; valid keys: *, timeout; did you mean 'max_syncs'?"])


def test_trace_dir_under_a_file_is_a_one_line_usage_error(pytester):
    write(pytester, "test_rep", REPORTED)
    (pytester.path / "notes.txt").write_text("the user's file")
    result = pytester.runpytest("--perf-budget", "--perf-trace-dir", "notes.txt/traces")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --perf-trace-dir notes.txt/traces: notes.txt is a file, not a folder"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert (pytester.path / "notes.txt").read_text() == "the user's file"


def test_an_unwritable_trace_keeps_the_budget_verdict(pytester):
    write(pytester, "test_rep", """
        import pytest, torch

        @pytest.mark.perf_budget(max_syncs=0)
        def test_dirty():
            open("traces", "w").close()  # the trace folder's name is taken while the run goes on
            torch.ones(2).sum().item()
    """)
    result = pytester.runpytest("--perf-budget", "--perf-trace-dir", "traces")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*syncs 1 > 0: test_rep.py:6 `torch.ones(2).sum().item()` (1x, PFL101)*",
                                 "*perf trace not written: *traces*"])
    assert "NotADirectoryError" not in result.stdout.str() and "Traceback" not in result.stdout.str()


THREADS = """
    import threading, pytest, torch

    X = torch.ones(3)

    def on_a_thread(work):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()

    def five_items():
        for _ in range(5):
            X.sum().item()

    def ten_adds():
        for _ in range(10):
            X + 1

    def two_lists():
        for _ in range(2):
            X.tolist()

    @pytest.mark.perf_budget(max_syncs=0)
    def test_syncs_on_a_thread():
        on_a_thread(five_items)

    @pytest.mark.perf_budget(max_syncs=0)
    def test_python_level_syncs_on_a_thread():
        on_a_thread(two_lists)

    @pytest.mark.perf_budget(max_ops=0)
    def test_ops_on_a_thread():
        on_a_thread(ten_adds)

    @pytest.fixture
    def waiting_thread():
        go = threading.Event()
        thread = threading.Thread(target=lambda: go.wait() and [X.sum().item() for _ in range(3)])
        thread.start()  # in setup: before the measurement starts
        yield lambda: (go.set(), thread.join())

    @pytest.mark.perf_budget(max_syncs=0)
    def test_a_thread_started_before_the_measurement(waiting_thread):
        waiting_thread()

    def test_no_function_mode_is_left_on_threads_after_measuring(perf):
        with perf.region():
            on_a_thread(five_items)
        assert perf.metrics["syncs"] == 5
        seen = []
        on_a_thread(lambda: seen.append(torch._C._len_torch_function_stack()))
        assert seen == [0]
"""


def test_work_on_other_threads_is_measured(pytester):
    write(pytester, "test_threads", THREADS)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(failed=4, passed=1)
    result.stdout.fnmatch_lines_random([
        "*syncs 5 > 0: test_threads.py:12 `X.sum().item()` (5x, PFL101)*",
        "*syncs 2 > 0: test_threads.py:20 `X.tolist()` (2x, PFL102)*",
        "*ops 10 > 0: most frequent ops aten::add 10x*",
        "*syncs 3 > 0: inside aten::item (3x, PFL101)*",  # no function mode there: the op names the rule
    ])


LOADER = """
    import pytest, torch
    from torch.utils.data import DataLoader, TensorDataset

    def loader():
        g = torch.Generator().manual_seed(0)
        rows = TensorDataset(torch.randn(64, 4, generator=g), torch.randn(64, 1, generator=g))
        return torch.nn.Linear(4, 1), DataLoader(rows, batch_size=8, shuffle=True)

    @pytest.mark.perf_budget(max_syncs=0)
    def test_iterating_a_shuffled_loader(perf):
        model, data = loader()
        with perf.region():
            for x, y in data:
                model(x)

    @pytest.mark.perf_budget(max_syncs=0)
    def test_item_on_the_output_still_counts(perf):
        model, data = loader()
        with perf.region():
            for x, y in data:
                model(x).sum().item()
"""


def test_a_shuffled_loader_is_host_bookkeeping_not_a_sync(pytester):
    write(pytester, "test_loader", LOADER)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*syncs 8 > 0: test_loader.py:21 `model(x).sum().item()` (8x, PFL101)"])
    assert "for x, y in data" not in result.stdout.str()


def test_profiler_chatter_stays_out_and_the_summary_names_the_worst_violation(pytester):
    write(pytester, "test_on", ITEMS, budget=2, n=3)
    write(pytester, "test_ok", ITEMS, budget=5, n=3)
    result = pytester.runpytest_subprocess("--perf-budget", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str() + result.stderr.str()
    assert "USDT" not in out and "profiler_st" not in out
    result.stdout.fnmatch_lines(["test_ok.py .*", "test_on.py F*",
                                 "FAILED test_on.py::test_items - Failed: perf budget exceeded: syncs 3 > 2*"])


def test_the_guides_example_run_is_real():
    """docs/pytest-perf.md shows a shortened real run of the bundled example: every line it shows comes out
    of that run, in that order (times aside). To refresh it: `COLUMNS=120 pytest --perf-budget -p no:logging
    examples/` and copy the lines."""
    import subprocess

    root = os.path.dirname(EXAMPLES)
    text = open(os.path.join(root, "docs", "pytest-perf.md"), encoding="utf-8").read()
    command, shown = re.search(r"```\n\$ (pytest --perf-budget [^\n]*)\n(.*?)\n```", text, re.S).groups()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    run = subprocess.run([sys.executable, "-m", *command.split()], cwd=root, env={**env, "COLUMNS": "120"},
                         capture_output=True, text=True, timeout=300)
    timeless = lambda line: re.sub(r"=+ (.*) in \d+\.\d+s =+", r"\1 in Ns", line)  # noqa: E731
    out = iter(map(timeless, run.stdout.splitlines()))
    missing = [line for line in shown.splitlines() if line != "..." and timeless(line) not in out]
    assert missing == [], run.stdout[-3000:]


def test_marker_help_is_generated_from_the_budget_tables(pytester):
    from perflint.measures.budgets import KEYS, OPTIONS, SCALING_KEYS

    result = pytester.runpytest("--markers")
    (line,) = [ln for ln in result.stdout.lines if ln.startswith("@pytest.mark.perf_budget(")]
    for key in [*KEYS, *SCALING_KEYS, *OPTIONS]:
        assert f"{key}=" in line
    assert "max_syncs=N" in line and "max_peak_memory=SIZE" in line and "min_overlap=0..1" in line


def test_the_marker_is_parsed_once_per_test(pytester, monkeypatch):
    from pytest_perf import plugin

    parsed = []
    real = plugin.parse_budget
    monkeypatch.setattr(plugin, "parse_budget", lambda values: parsed.append(values) or real(values))
    write(pytester, "test_once", """
        import pytest

        pytestmark = pytest.mark.perf_budget(max_ops=100)

        @pytest.mark.perf_budget(max_syncs=0)
        def test_a():
            pass

        def test_b():
            pass
    """)
    pytester.inline_run("--perf-budget").assertoutcome(passed=2)
    assert parsed == [{"max_ops": 100, "max_syncs": 0}, {"max_ops": 100}]


def test_verdicts_are_a_named_report_section_also_when_the_test_fails_itself(pytester):
    write(pytester, "test_section", """
        import pytest, torch

        @pytest.mark.perf_budget(max_syncs=0, min_overlap=0.5)
        def test_raises_and_syncs():
            torch.ones(2).sum().item()
            raise ValueError("the test's own failure")
    """)
    result = pytester.runpytest("--perf-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*ValueError: the test's own failure",
        "*- perf budget -*",
        "perf budget exceeded: syncs 1 > 0",
        "  syncs 1 > 0: test_section.py:5 `torch.ones(2).sum().item()` (1x, PFL101)",
        "",
        "metric *measured*budget*status",
        "syncs *1*≤ 0*FAIL",
        "queue_overlap*SKIP: needs a GPU",
    ])
