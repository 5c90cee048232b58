"""`perflint trace` on input a user would get wrong or a file that is broken: one-line errors with exit 2,
warnings that name what was dropped (both readers alike), budgets that mean nothing for a trace; and the
fixes of what a user saw as wrong (collectives named freely, loader-batch syncs, the steps header, sizes
in the unit written, GitHub annotation escaping, no linter import on the trace path)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import perflint.trace.json_reader as jsontext
import perflint.trace.msgspec_reader as typed
from perflint.trace import analyze, load_trace, metrics
from perflint.trace.cli import main
from tests.test_trace_synthetic import device, ev, kineto_trace, launch


def _write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _run(args):
    return subprocess.run([sys.executable, "-m", "perflint", "trace", *args], capture_output=True, text=True)


# --- issue 14: malformed events and files ----------------------------------------------------------


def test_tid_that_is_an_object_does_not_sink_the_folder(tmp_path, capsys):
    """One event with a list/object tid used to raise TypeError (exit 1) and hide the good traces."""
    bad = kineto_trace()
    bad["traceEvents"] += [ev("cpu_op", "aten::mul", 3, 1, tid=[1]), ev("cpu_op", "aten::mul", 4, 1, tid={"a": 1})]
    _write(tmp_path, "a_bad.json", bad)
    _write(tmp_path, "b_good.json", kineto_trace())
    assert main([str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and out.count("== ") == 2
    assert err.count("\n") == 1 and "a_bad.json: 2 malformed event(s): 2 with a tid that is neither" in err


@pytest.mark.parametrize("reader", ["msgspec", "json"])
def test_corrupt_events_are_named_in_one_warning_and_readers_agree(tmp_path, monkeypatch, capsys, reader):
    if reader == "json":
        monkeypatch.setattr(typed, "_DECODER", None)
        monkeypatch.setattr(jsontext, "_orjson", None)
    doc = kineto_trace()
    doc["traceEvents"] += [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "tid": 1, "dur": 5},  # no ts
        {"ph": "X", "cat": "cuda_runtime", "tid": 1, "ts": 70, "dur": 5},  # no name
        ev("cuda_runtime", "cudaDeviceSynchronize", 95, -3),  # negative dur: read as 0
        ev("cuda_runtime", "cudaDeviceSynchronize", 96, 1e300),  # impossible dur: dropped
    ]
    path = _write(tmp_path, "t.json", doc)
    trace = load_trace(path)
    assert trace.problems == {"without a numeric ts (dropped)": 1, "without a string name (dropped)": 1,
                              "with a negative dur (read as 0)": 1,
                              "with a dur that is not a number, or longer than 3,000 years (dropped)": 1}
    assert metrics(trace)["syncs"] == 2  # the original sync and the repaired cudaDeviceSynchronize
    main([path])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "4 malformed event(s)" in err and "RuntimeWarning" not in err


@pytest.mark.parametrize("events", [
    [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": "abc", "dur": 1}],
    [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1}, {"ph": "X", "cat": "cpu_op", "name": "a", "dur": 2}],
], ids=["string_ts", "no_ts"])
def test_a_trace_with_nothing_usable_is_an_error_not_a_pass(tmp_path, capsys, events):
    path = _write(tmp_path, "t.json", {"traceEvents": events})
    assert main([path, "--budget", "max_syncs=0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perflint trace: error: ") and "no usable events" in err and err.count("\n") == 1


@pytest.mark.parametrize("budget", ["max_syncs=inf", "min_overlap=nan", "max_transfer_bytes=inf", "max_ops=-inf"])
def test_non_finite_budgets_are_one_line_errors(tmp_path, capsys, budget):
    path = _write(tmp_path, "t.json", kineto_trace())
    assert main([path, "--budget", budget]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "finite" in err


def test_closed_pipe_prints_no_traceback(tmp_path):
    files = [_write(tmp_path, f"t{k}.json", kineto_trace()) for k in range(40)]  # well over a pipe's 64 KB
    shell = f"{sys.executable} -m perflint trace {' '.join(files)} | head -1"
    done = subprocess.run(shell, shell=True, capture_output=True, text=True)
    assert done.stdout.startswith("== ") and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


# --- issue 12.5: what a user saw as wrong ---------------------------------------------------------------


@pytest.mark.parametrize("key", ["world_size=2", "timeout=30", "baseline=true"])
def test_budget_keys_without_meaning_for_a_trace_are_rejected(tmp_path, capsys, key):
    path = _write(tmp_path, "t.json", kineto_trace())
    assert main([path, "--budget", key]) == 2
    err = capsys.readouterr().err
    assert "has no meaning for a trace" in err and "max_syncs" in err and err.count("\n") == 1


def test_steps_header_says_it_once(tmp_path, capsys):
    path = _write(tmp_path, "t.json", kineto_trace())
    main([path, "--steps", "1:2"])
    header = capsys.readouterr().out.splitlines()[1]
    assert header.count("steps") == 1 and "steps 1:2" in header
    main([path])
    assert "whole file, steps 1..2" in capsys.readouterr().out


def test_sizes_shown_in_the_unit_written(tmp_path, capsys):
    path = _write(tmp_path, "t.json", kineto_trace())
    main([path, "--budget", "max_transfer_bytes=100MB"])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("transfer_bytes"))
    assert "100 MB" in row and "0.001004 MB" in row and "MiB" not in row


def test_github_annotation_properties_are_escaped(tmp_path, capsys):
    doc = kineto_trace()
    doc["traceEvents"] += [ev("python_function", "dir,with:odd%chars/train.py(42): step", 59, 32)]
    path = _write(tmp_path, "t.json", doc)
    main([path, "--output-format", "github"])
    warning = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("::warning"))
    assert warning.startswith("::warning file=dir%2Cwith%3Aodd%25chars/train.py,line=42,title=PFL101::")


def test_trace_command_does_not_import_the_linter():
    code = ("import sys; from perflint.cli import main; main(['trace', '--help']);"
            "print(sorted(m for m in sys.modules if m.startswith(('libcst', 'perflint.rule', 'perflint.engine'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("name, collective", [
    ("void c10d::symmetric_memory::multimem_all_reduce_kernel<float, 16, 4>(float*, unsigned long)", "AllReduce"),
    ("void c10d::symmetric_memory::two_shot_all_reduce_kernel<c10::BFloat16, 8>(...)", "AllReduce"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals)", "AllReduce"),
    ("void vllm::cross_device_reduce_2stage<half, 4>(vllm::RankData*, vllm::RankSignals)", "AllReduce"),
    ("void tensorrt_llm::kernels::oneShotAllReduceKernel<half, 8, false>(AllReduceParams)", "AllReduce"),
    ("void tensorrt_llm::kernels::twoShotAllReduceKernel<__nv_bfloat16, 4>(AllReduceParams)", "AllReduce"),
    ("rcclKernel_AllGather_RING_LL_Sum_float", "AllGather"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "ReduceScatter"),
    ("oneccl_allreduce_kernel<float>", "AllReduce"),
    ("void deep_ep::intranode::dispatch<8, 768>(int4*, float*)", "AllToAll"),
])
def test_collectives_not_named_nccl_are_communication(name, collective):
    doc = {"traceEvents": [launch(0, 1), device("kernel", name, 5, 10, 1, stream=20), launch(1, 2),
                           device("kernel", "void at::native::vectorized_elementwise_kernel<4>", 8, 4, 2)]}
    k = analyze(load_trace(doc)).kernels
    assert [(c.name, c.count) for c in k.collectives] == [(collective, 1)]
    assert k.comm_us == 10 and k.comm_overlap == pytest.approx(4 / 10)


def test_a_kernel_launched_by_a_collective_op_is_communication():
    """A custom all-reduce kernel with an arbitrary name, launched inside the op that runs it."""
    doc = {"traceEvents": [ev("cpu_op", "_C_custom_ar::all_reduce", 0, 5), launch(1, 1),
                           device("kernel", "my_fancy_kernel<8>", 5, 10, 1),
                           ev("cpu_op", "aten::relu", 6, 2), launch(7, 2), device("kernel", "my_other_kernel", 20, 3, 2)]}
    k = analyze(load_trace(doc)).kernels
    assert [(c.name, c.count) for c in k.classes][:2] == [("compute", 1), ("communication", 1)]


def test_pageable_copy_of_a_loader_batch_is_the_loaders_rule():
    """`x.to(device)` right after the DataLoader yields it: PFL503 (pin_memory) for pageable memory, PFL203
    (non_blocking) for pinned; a tensor made and moved with no loader around is still PFL201."""
    def doc(copy_name, loader=True):
        events = [ev("cpu_op", "aten::to", 20, 10), ev("cpu_op", "aten::copy_", 21, 8),
                  launch(22, 1, "cudaMemcpyAsync", 2), launch(25, 2, "cudaStreamSynchronize", 4),
                  device("gpu_memcpy", copy_name, 24, 3, 1, bytes=4096)]
        if loader:
            events.append(ev("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 15))
        return {"traceEvents": events}
    rules = [analyze(load_trace(doc(name, loader))).syncs[0].rule for name, loader in [
        ("Memcpy HtoD (Pageable -> Device)", True), ("Memcpy HtoD (Pinned -> Device)", True),
        ("Memcpy HtoD (Pageable -> Device)", False)]]
    assert rules == ["PFL503", "PFL203", "PFL201"]
