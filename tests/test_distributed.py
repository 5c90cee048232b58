"""world_size=N tests on 2 gloo ranks: the reference pairs pass and fail their budgets, a failing rank
fails the test with its traceback, a hang is killed by the timeout and leaves no process behind."""

import os
import re
import shutil
import textwrap
import uuid

import pytest

pytest_plugins = ["pytester"]
pytest.importorskip("torch.distributed")
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "distributed")


def _outcomes(result):
    out = {}
    for line in result.outlines:
        for status in ("PASSED", "FAILED"):
            if line.startswith(status + " ") or f" {status}" in line and "::" in line:
                name = line.split("::")[-1].split(" ")[0]
                out[name] = status
    return out


def test_reference_pairs_pass_fast_and_fail_slow(pytester):
    """One spawn of 2 ranks runs all 11 cases: every case with SLOW in its id fails, the others pass."""
    for name in ("ddp_scenarios.py", "budgets_2rank.py"):
        shutil.copy(os.path.join(EXAMPLE, name), pytester.path / name)
    result = pytester.runpytest_subprocess("--perf-budget", "-rA", "budgets_2rank.py", timeout=400)
    got = _outcomes(result)
    assert len(got) == 11, result.stdout.str()[-3000:]
    assert {n for n, s in got.items() if s == "FAILED"} == {n for n in got if "SLOW" in n}
    result.stdout.fnmatch_lines([  # the summary table, sorted by test id
        "*test_bucket_size?25?*collectives ?rank 0?*3*PASS*",
        "*test_bucket_size?SLOW-0.001?*collectives ?rank 0?*6*FAIL*",
        "*SLOW-every?*collectives ?rank 0? (worst step)*4*FAIL*",
        "*SLOW-no_sync_backward_only?*collectives ?rank 1? (worst step)*4*FAIL*",
        "*test_one_all_reduce_per_optimizer_step?no_sync?*collectives ?rank 0? (worst step)*1*PASS*",
        "*test_predicted_efficiency_SLOW*predicted_efficiency ?rank 0?*FAIL*",
        "*test_static_graph?SLOW-find_unused?*collectives ?rank 0? (worst step)*2*FAIL*",
        "*test_static_graph?static?*collectives ?rank 0? (worst step)*1*PASS*",
    ])


def test_failing_rank_traceback_and_hang_kill_every_rank(pytester):
    tag = uuid.uuid4().hex
    pytester.makepyfile(test_ranks=textwrap.dedent(f"""
        import time, pytest, torch, torch.distributed as dist
        TAG = "{tag}"

        @pytest.mark.perf_budget(world_size=2)
        def test_rank1_raises(perf_rank):
            if perf_rank.rank == 1:
                raise ValueError("boom on rank 1")
            dist.barrier()  # rank 0 waits for rank 1, which never comes

        @pytest.mark.perf_budget(world_size=2, min_scaling_efficiency=0.0, max_collectives=1)
        def test_scaling_efficiency_is_measured_when_asked(perf_rank):
            dist.all_reduce(torch.ones(4))

        @pytest.mark.perf_budget(world_size=2, timeout=8)
        def test_hang(perf_rank):
            if perf_rank.rank == 0:
                time.sleep(600)

        @pytest.mark.perf_budget(world_size=2)
        def test_runs_after_the_pool_was_killed(perf_rank):
            t = torch.ones(1)
            dist.all_reduce(t)
            assert t.item() == perf_rank.world_size
    """))
    result = pytester.runpytest_subprocess("--perf-budget", "test_ranks.py", timeout=300)
    result.assert_outcomes(failed=2, passed=2)
    result.stdout.fnmatch_lines(["*test_scaling_efficiency_is_measured_when_asked*scaling_efficiency*PASS*"])
    result.stdout.fnmatch_lines(["*rank 1 failed (call)*", "*ValueError: boom on rank 1*"], consecutive=False)
    result.stdout.fnmatch_lines(["*ranks 0 of 2 did not finish within 8 s (every rank was killed)*"])
    leftovers = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"pytest_perf.distributed" in cmd and str(pytester.path).encode() in cmd:
            leftovers.append(pid)
    assert leftovers == []


def test_the_same_tests_run_under_torchrun(tmp_path):
    """torchrun --nproc-per-node 2: every pytest process is a rank and uses torchrun's process group;
    the counts are the same as in the pool. The process group of the run is killed on timeout."""
    import signal
    import subprocess
    import sys

    for name in ("ddp_scenarios.py", "budgets_2rank.py"):
        shutil.copy(os.path.join(EXAMPLE, name), tmp_path / name)
    from pytest_perf.distributed import free_port

    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(free_port()),
           "-m", "pytest", "--perf-budget", "-p", "no:cacheprovider", "-q", "budgets_2rank.py", "-k", "bucket"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    text = out.decode("utf-8", "replace")
    assert proc.returncode != 0  # the SLOW case fails on both ranks
    assert text.count("1 failed, 1 passed") == 2, text[-3000:]
    assert len(re.findall(r"test_bucket_size\[SLOW-0\.001\]\s+collectives\s+6\s+≤ 3\s+FAIL", text)) == 2
