"""`perflint trace` on tiny traces built here, whose every figure is computed by hand in the comments,
in both schemas, with CUDA and HIP names, int and float timestamps; plus broken input and the CLI."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

import perflint.trace.json_reader as jsontext
import perflint.trace.load as load_module
import perflint.trace.msgspec_reader as typed
from perflint.trace import TraceError, analyze, load_trace, metrics
from perflint.trace.cli import main
from perflint.trace.steps import find_steps, parse_range


def ev(cat, name, ts, dur, tid=1, pid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def launch(ts, corr, name="cudaLaunchKernel", dur=2):
    return ev("cuda_runtime", name, ts, dur, correlation=corr)


def device(cat, name, ts, dur, corr, stream=7, **args):
    return ev(cat, name, ts, dur, tid=stream, pid=0, stream=stream, correlation=corr, device=0, **args)


ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def kineto_trace():
    """Two steps. Device work on stream 7: gemm [30,50] add [50,60] DtoH copy [70,72] mul [150,160]
    HtoD copy [180,190]; stream 20: allreduce [155,175]. `.item()` at 60..90 copies 4 bytes to pageable
    memory and synchronises. A launch at 190 has no recorded kernel (step 2 is partial)."""
    events = [
        ev("user_annotation", "ProfilerStep#1", 0, 100),
        ev("user_annotation", "ProfilerStep#2", 100, 100),
        ev("cpu_op", "aten::mm", 10, 10), launch(12, 1),
        ev("cpu_op", "aten::add", 20, 5), launch(21, 2),
        ev("cpu_op", "aten::item", 60, 30),
        ev("cpu_op", "aten::_local_scalar_dense", 61, 28),
        launch(62, 3, "cudaMemcpyAsync", 3), launch(66, 4, "cudaStreamSynchronize", 22),
        ev("cpu_op", "aten::mul", 110, 10), launch(111, 5), launch(112, 6),
        ev("cpu_op", "aten::copy_", 130, 10), launch(131, 7, "cudaMemcpyAsync"),
        launch(190, 99),
        device("kernel", "gemm", 30, 20, 1),
        device("kernel", "add", 50, 10, 2),
        device("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 70, 2, 3, bytes=4),
        device("cuda_sync", "Stream Sync", 66, 22, 4),
        device("kernel", "mul", 150, 10, 5),
        device("kernel", ALLREDUCE, 155, 20, 6, stream=20, **{"Collective name": "allreduce",
                                                              "In msg nelems": 10, "dtype": "Float"}),
        device("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 180, 10, 7, bytes=1000),
        {"ph": "s", "cat": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 12, "name": "ac2g"},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
    ]
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU"}],
            "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": events}


EXPECTED = {"syncs": 1, "ops": 5, "kernels": 4, "transfers": 2, "transfer_bytes": 1004, "graph_breaks": None,
            "recompiles": None, "peak_memory": None, "queue_overlap": pytest.approx(45 / 67),
            "collectives": 1, "comm_bytes": 40, "comm_overlap": 0.25,
            # What bounds the 200 us of the file (perflint.trace.bounds), by hand: busy, by priority,
            # compute gemm [30,50] 20; memory add [50,60] + DtoH [70,72] + mul [150,160] 22 (kernels with
            # no known FLOPs and a name that is not a GEMM/conv/attention); input HtoD [180,190] 10;
            # communication alone [160,175] 15. Idle: [72,150] 78 is a sync (cudaStreamSynchronize
            # returns at 88); [0,30] [60,70] [175,180] [190,200] 55 are host overhead.
            "overhead_share": 55 / 200, "input_share": 10 / 200, "memory_bound_share": 22 / 200,
            "compute_bound_share": 20 / 200, "exposed_comm_share": 15 / 200, "sync_share": 78 / 200}


def legacy(doc):
    """The same trace in the 2021 schema: Operator/Runtime/Kernel/Memcpy, tid "stream 7", no stream arg,
    no cuda_sync records."""
    cats = {"cpu_op": "Operator", "user_annotation": "Operator", "cuda_runtime": "Runtime", "kernel": "Kernel",
            "gpu_memcpy": "Memcpy"}
    out = []
    for e in copy.deepcopy(doc["traceEvents"]):
        if e.get("cat") == "cuda_sync":
            continue
        if e.get("cat") in cats:
            if e["cat"] in ("kernel", "gpu_memcpy"):
                e["tid"] = f"stream {e['args'].pop('stream')}"
            e["cat"] = cats[e["cat"]]
        out.append(e)
    return {"schemaVersion": 1, "traceEvents": out}


def hip(doc):
    names = {"cudaLaunchKernel": "hipLaunchKernel", "cudaMemcpyAsync": "hipMemcpyAsync",
             "cudaStreamSynchronize": "hipStreamSynchronize"}
    doc = copy.deepcopy(doc)
    for e in doc["traceEvents"]:
        e["name"] = names.get(e["name"], e["name"])
    return doc


def shifted(doc, by=0.25):
    """Float timestamps (exact in binary, so every difference stays exact)."""
    doc = copy.deepcopy(doc)
    for e in doc["traceEvents"]:
        if "ts" in e:
            e["ts"] = e["ts"] + by
    return doc


@pytest.mark.parametrize("variant", [lambda d: d, legacy, hip, shifted], ids=["kineto", "legacy", "hip", "float_ts"])
def test_hand_computed_metrics(variant):
    assert metrics(load_trace(variant(kineto_trace()))) == EXPECTED


def test_hand_computed_figures():
    fig = analyze(load_trace(kineto_trace()))
    t = fig.timeline
    # busy = [30,60] + [70,72] + [150,175] + [180,190] = 67 of a 160 us span
    assert (t.span_us, t.busy_us, t.idle_us, t.compute_us) == (160, 67, 93, 40)
    # gaps: [60,70] copy launched at 62 -> host wait; [72,150] mul launched at 111 -> host wait;
    # [175,180] HtoD copy launched at 131, gap < 30 us -> kernel wait
    assert (t.host_wait_us, t.kernel_wait_us, t.other_us) == (88, 5, 0)
    assert [(g.start_us, g.dur_us, g.cause) for g in t.longest_gaps] == [
        (72, 78, "host wait"), (60, 10, "host wait"), (175, 5, "kernel wait")]
    assert t.longest_gaps[0].cpu_ops == ["aten::item", "aten::_local_scalar_dense", "aten::mul"]
    # per stream (HTA): stream 7 gaps add 0 (kernel wait), copy 10 (host), mul 78 (host), HtoD 20 (kernel)
    assert [(s.stream, s.host_wait_us, s.kernel_wait_us, s.other_us) for s in t.streams] == [
        (7, 88, 20, 0), (20, 0, 0, 0)]
    q = fig.queue
    # stream 7 queue: 1@12 2@21 1@30 0@50 1@62 0@70 1@111 2@131 1@150 0@180 -> area 143 over 168 us
    assert [(s.stream, s.launches, s.max) for s in q.streams] == [(7, 5, 2), (20, 1, 1)]
    assert q.streams[0].mean == pytest.approx(143 / 168)
    assert q.lead_median_us == 39 and q.lead_p90_us == 49  # leads 8 18 29 39 43 49
    k = fig.kernels
    assert [(c.name, c.count, c.time_us) for c in k.classes] == [
        ("compute", 3, 40), ("communication", 1, 20), ("memcpy", 2, 12), ("memset", 0, 0)]
    assert [(c.name, c.count, c.bytes) for c in k.collectives] == [("allreduce", 1, 40)]
    (sync,) = fig.syncs
    assert (sync.call, sync.op, sync.top_op, sync.rule, sync.wait_us) == (
        "cudaStreamSynchronize", "aten::_local_scalar_dense", "aten::item", "PFL101", 22)
    assert [(r.direction, r.host_memory, r.count, r.bytes) for r in fig.transfers.rows] == [
        ("DtoH", "pageable", 1, 4), ("HtoD", "pinned", 1, 1000)]
    assert fig.transfers.pageable == 1


def test_steps_and_partial_step():
    trace = load_trace(kineto_trace())
    assert [(s.number, s.start, s.end, s.partial) for s in find_steps(trace)] == [
        (1, 0, 100, False), (2, 100, 200, True)]
    first, second = metrics(trace, "1:1"), metrics(trace, (2, 2))
    assert (first["kernels"], first["syncs"], first["transfers"], first["collectives"]) == (2, 1, 1, 0)
    assert (second["kernels"], second["syncs"], second["transfers"], second["comm_overlap"]) == (2, 0, 1, 0.25)
    assert metrics(trace, "1:2") == EXPECTED


@pytest.mark.parametrize("text,expected", [("3:5", (3, 5)), ("3:", (3, None)), (":5", (None, 5)), ("4", (4, 4))])
def test_parse_step_range(text, expected):
    assert parse_range(text) == expected


@pytest.mark.parametrize("text", ["", ":", "a:b", "5:3", "1:2:3", "-1"])
def test_parse_step_range_rejects(text):
    with pytest.raises(ValueError):
        parse_range(text)


def test_sync_pair_in_one_op_counts_once_but_a_lone_pageable_copy_counts():
    doc = kineto_trace()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("args", {}).get("correlation") != 4]
    (sync,) = analyze(load_trace(doc)).syncs
    assert (sync.call, sync.rule) == ("cudaMemcpyAsync DtoH to pageable memory", "PFL101")


def test_item_on_a_cpu_tensor_is_not_a_sync():
    doc = {"traceEvents": [ev("cpu_op", "aten::item", 0, 5), ev("cpu_op", "aten::_local_scalar_dense", 1, 3),
                           launch(10, 1), device("kernel", "k", 12, 3, 1)]}
    assert metrics(load_trace(doc))["syncs"] == 0


def test_python_stack_gives_the_source_line():
    doc = kineto_trace()
    doc["traceEvents"] += [
        ev("python_function", "train.py(42): step", 59, 32),
        ev("python_function", "/usr/lib/python3.11/site-packages/torch/_tensor.py(10): item", 59.5, 31),
    ]
    assert analyze(load_trace(doc)).syncs[0].source == "train.py:42"


def test_cpu_only_trace():
    m = metrics(load_trace({"traceEvents": [ev("cpu_op", "aten::add", 0, 5), ev("cpu_op", "aten::mul", 6, 5),
                                            ev("user_annotation", "gloo:all_reduce", 1, 3)]}))
    assert (m["ops"], m["kernels"], m["syncs"], m["queue_overlap"], m["collectives"]) == (2, None, None, None, 1)


def test_cpu_only_collectives_count_the_calling_op_once():
    """c10d::allreduce_ on the calling thread and its gloo:all_reduce on a worker thread are one collective."""
    events = [ev("cpu_op", "c10d::allreduce_", 0, 5), ev("user_annotation", "gloo:all_reduce", 1, 9, tid=2),
              ev("cpu_op", "c10d::broadcast_", 20, 5), ev("user_annotation", "gloo:broadcast", 21, 9, tid=2)]
    assert metrics(load_trace({"traceEvents": events}))["collectives"] == 2


def test_defensive_decoding(tmp_path):
    """Missing fields, negative durations, string timestamps, non-dict events and bad UTF-8 are survived."""
    events = [ev("cpu_op", "aten::mm", 0, -5), {"ph": "X", "cat": "kernel", "name": "k", "ts": "7", "dur": 2},
              {"ph": "X", "cat": "kernel", "ts": None}, 3, "x", {"ph": "X", "cat": "cpu_op"},
              device("kernel", "ok", 10, 1, 1, stream="7")]
    trace = load_trace({"traceEvents": events})
    assert [(h.name, h.dur) for h in trace.host_ops] == [("aten::mm", 0)]
    assert [(d.name, d.ts, d.stream) for d in trace.device] == [("k", 7.0, -1), ("ok", 10, 7)]
    raw = json.dumps(kineto_trace()).replace("aten::mm", "aten::\\u00e9mm").encode()
    raw = raw.replace("aten::\\u00e9mm".encode(), b"aten::\xff\xfemm")  # invalid UTF-8 bytes
    path = tmp_path / "bad_utf8.json"
    path.write_bytes(raw)
    trace = load_trace(path)
    assert any(h.name.startswith("aten::\ufffd") for h in trace.host_ops)
    assert metrics(trace)["kernels"] == 4


def _write(tmp_path, name, data: bytes | str | dict | list):
    """A trace file; text and documents are gzipped when the name says so, bytes are written as given."""
    path = tmp_path / name
    if not isinstance(data, bytes):
        data = (data if isinstance(data, str) else json.dumps(data)).encode()
        data = gzip.compress(data) if name.endswith(".gz") else data
    path.write_bytes(data)
    return path


def _use_reader(monkeypatch, reader):
    """Select a reader as if only some optional parsers were installed: msgspec (typed fast path),
    orjson (msgspec missing) or json (both missing)."""
    if reader == "msgspec" and typed._DECODER is None:
        pytest.skip("msgspec is not installed")
    if reader == "orjson" and jsontext._orjson is None:
        pytest.skip("orjson is not installed")
    if reader != "msgspec":
        monkeypatch.setattr(typed, "_DECODER", None)
    if reader == "json":
        monkeypatch.setattr(jsontext, "_orjson", None)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("reader", ["msgspec", "orjson", "json"])
def test_readers_agree(tmp_path, monkeypatch, stream, reader):
    _use_reader(monkeypatch, reader)
    path = _write(tmp_path, "t.json.gz", kineto_trace())
    trace = load_trace(path, stream=stream)
    assert metrics(trace) == EXPECTED and (trace.rank, trace.world_size, trace.device_name) == (0, 1, "Test GPU")


@pytest.mark.parametrize("reader", ["orjson", "json"])
def test_streaming_handles_metadata_after_events_and_small_chunks(tmp_path, monkeypatch, reader):
    """The dict reader's event-by-event streaming (files over STREAM_THRESHOLD without msgspec)."""
    _use_reader(monkeypatch, reader)
    doc = kineto_trace()
    reordered = {"traceEvents": doc["traceEvents"], "distributedInfo": {"rank": 3}, "x": [1, {"y": "}"}]}
    monkeypatch.setattr(jsontext, "_CHUNK", 7)  # events split across many reads
    trace = load_trace(_write(tmp_path, "t.json", reordered), stream=True)
    assert trace.rank == 3 and metrics(trace) == EXPECTED
    assert metrics(load_trace(_write(tmp_path, "list.json", doc["traceEvents"]), stream=True)) == EXPECTED


@pytest.mark.parametrize("indent", [2, None], ids=["kineto_layout", "one_line"])
def test_piecewise_parse_matches_whole_parse(tmp_path, monkeypatch, indent):
    """Big files are parsed a few MB at a time, cut between two events; a cut that would land inside an
    event (objects nested in args) falls back to parsing the whole document."""
    doc = kineto_trace()
    meta_after = {"traceEvents": doc["traceEvents"], "distributedInfo": {"rank": 5}, "traceName": "x"}
    path = _write(tmp_path, "t.json", json.dumps(meta_after, indent=indent))
    whole_parses = []
    _use_reader(monkeypatch, "orjson" if jsontext._orjson is not None else "json")
    monkeypatch.setattr(jsontext, "PIECE", 64)
    real = load_module._from_document
    monkeypatch.setattr(load_module, "_from_document", lambda d, p: whole_parses.append(p) or real(d, p))
    trace = load_trace(path)
    assert metrics(trace) == EXPECTED and trace.rank == 5 and whole_parses == []
    doc["traceEvents"][2]["args"]["nested"] = [{"a": 1}, {"b": 2}] * 20
    trace = load_trace(_write(tmp_path, "nested.json", json.dumps(doc, indent=indent)))
    assert metrics(trace) == EXPECTED and len(whole_parses) == 1


@pytest.mark.parametrize("odd", ["string_ts", "list_args", "number_event", "float_correlation"])
def test_typed_reader_falls_back_on_unexpected_types(tmp_path, monkeypatch, odd):
    """An event the typed schema does not fit sends the whole file to the general reader: same trace."""
    doc = kineto_trace()
    events = doc["traceEvents"]
    if odd == "string_ts":
        events[2]["ts"] = str(events[2]["ts"])
    elif odd == "list_args":
        events.append({"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1, "dur": 1, "args": [1]})
    elif odd == "number_event":
        events.append(3)
    else:
        next(e for e in events if e.get("cat") == "kernel")["args"]["correlation"] = 1.0
    path = _write(tmp_path, "odd.json", doc)
    fast = load_trace(path)
    _use_reader(monkeypatch, "orjson" if jsontext._orjson is not None else "json")
    assert fast == load_trace(path)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("indent", [2, None], ids=["kineto_layout", "one_line"])
def test_typed_reader_cuts_between_events(tmp_path, monkeypatch, indent, gz):
    """The typed reader decodes the text as it is read (here a few bytes at a time), PIECE bytes at a
    time, cut between events, with metadata before and after the events; after a cut inside an event
    ("},{" in its args) it decodes the rest at once, unless that exceeds TYPED_LIMIT (too many structs
    at once): then the dict reader reads the file."""
    if typed._DECODER is None:
        pytest.skip("msgspec is not installed")
    monkeypatch.setattr(typed, "PIECE", 64)
    monkeypatch.setattr(load_module, "TEXT_CHUNK", 7)
    monkeypatch.setattr(load_module, "GZIP_CHUNK", 3)
    general = []
    monkeypatch.setattr(load_module, "_from_bytes", lambda raw, p: general.append(p) or real_from_bytes(raw, p))
    name = "t.json.gz" if gz else "t.json"
    doc = kineto_trace()
    meta_after = {"distributedInfo": {"rank": 5}, "traceEvents": doc["traceEvents"], "deviceProperties":
                  [{"name": "Test GPU"}, {"name": "other"}], "after": [{"x": "},{"}]}
    trace = load_trace(_write(tmp_path, name, json.dumps(meta_after, indent=indent)))
    assert metrics(trace) == EXPECTED and (trace.rank, trace.device_name) == (5, "Test GPU") and general == []
    assert metrics(load_trace(_write(tmp_path, "list" + name, json.dumps(doc["traceEvents"], indent=indent)))) \
        == EXPECTED and general == []
    doc["traceEvents"][2]["args"]["nested"] = [{"a": 1}, {"b": 2}] * 20
    nested = _write(tmp_path, "nested" + name, json.dumps(doc, indent=indent))
    assert metrics(load_trace(nested)) == EXPECTED and general == []  # the rest after the bad cut at once
    monkeypatch.setattr(typed, "TYPED_LIMIT", 100)
    assert metrics(load_trace(nested)) == EXPECTED and len(general) == 1


real_from_bytes = load_module._from_bytes


@pytest.mark.parametrize("reader", ["msgspec", "orjson"])
def test_multi_member_gzip(tmp_path, monkeypatch, reader):
    """`cat a.gz b.gz` is valid gzip, and so is zero padding after the last member: the streaming inflate
    starts a new member after each one; the one-shot inflate (dict reader) reads only the first, so it is
    detected (size and CRC of the trailer) and the file read as a whole. Other trailing bytes are an
    error."""
    _use_reader(monkeypatch, reader)
    text = json.dumps(kineto_trace()).encode()
    members = gzip.compress(text[:100]) + gzip.compress(text[100:])
    assert metrics(load_trace(_write(tmp_path, "t.json.gz", members))) == EXPECTED
    assert metrics(load_trace(_write(tmp_path, "padded.json.gz", members + bytes(512)))) == EXPECTED
    with pytest.raises(TraceError, match="garbage.json.gz: truncated or corrupt gzip"):
        load_trace(_write(tmp_path, "garbage.json.gz", members + b"garbage"))


BROKEN = {
    "truncated.json.gz": lambda: gzip.compress(json.dumps(kineto_trace()).encode())[:200],
    "truncated.json": lambda: json.dumps(kineto_trace())[:300],
    "not_json.json": lambda: "this is not json",
    "empty.json": lambda: "",
    "no_events.json": lambda: json.dumps({"hello": "world"}),
    "number.json": lambda: "42",
    "list_of_numbers.json": lambda: "[1, 2, 3]",
    "garbage.json.gz": lambda: b"\x1f\x8b" + b"\x00" * 40,
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_input_raises_trace_error(tmp_path, name, stream):
    path = _write(tmp_path, name, BROKEN[name]())
    with pytest.raises(TraceError) as info:
        load_trace(path, stream=stream)
    assert str(info.value).startswith(str(path) + ": ") and "\n" not in str(info.value)


def test_missing_file_raises_trace_error(tmp_path):
    with pytest.raises(TraceError, match="missing.json"):
        load_trace(tmp_path / "missing.json")


# --- CLI -------------------------------------------------------------------------------------------


@pytest.fixture
def trace_file(tmp_path):
    return str(_write(tmp_path, "rank0.pt.trace.json.gz", kineto_trace()))


def test_cli_budgets_hold(trace_file, capsys):
    code = main([trace_file, "--budget", "max_syncs=1", "--budget", "max_transfer_bytes=1KiB",
                 "--budget", "min_overlap=0.5", "--budget", "max_graph_breaks=0"])
    out = capsys.readouterr().out
    assert code == 0
    assert "all budgets hold" in out and "PASS" in out and "skip: a profiler trace does not record" in out
    assert "Host syncs: 1" in out and "PFL101" in out and "step 2 partial (1 launches" in out


def test_cli_broken_budget_exits_1(trace_file, capsys):
    assert main([trace_file, "--budget", "max_syncs=0", "--budget", "max_kernels=10"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "1 budget(s) broken" in out


def test_cli_steps_and_json(trace_file, capsys):
    assert main([trace_file, "--steps", "2:2", "--budget", "max_syncs=0", "--output-format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (result,) = doc["traces"]
    assert result["metrics"]["kernels"] == 2 and result["figures"]["selection"] == "steps 2:2"
    assert result["verdicts"] == [{"key": "max_syncs", "metric": "syncs", "measured": 0, "limit": 0,
                                   "status": "pass", "reason": ""}]


def test_cli_github_annotations(trace_file, capsys):
    assert main([trace_file, "--budget", "max_syncs=0", "--output-format", "github"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("::error title=perflint trace budget::") and "::notice" in out


def test_cli_per_step_budget(trace_file, capsys):
    assert main([trace_file, "--budget", "max_kernels=2", "--budget", "per_step=true"]) == 1
    out = capsys.readouterr().out
    assert [line.split() for line in out.splitlines() if line.startswith("kernels ")] == [
        ["kernels", "4", "2", "FAIL"]]  # the whole file breaks the budget; each step (2 kernels) holds
    assert "step 1:" not in out and "step 2:" not in out
    assert main([trace_file, "--budget", "max_kernels=1", "--budget", "per_step=true"]) == 1
    out = capsys.readouterr().out
    assert "step 1: kernels 2 > 1" in out and "step 2: kernels 2 > 1" in out


def test_cli_budget_file_toml_and_json(tmp_path, trace_file, capsys):
    toml = tmp_path / "budget.toml"
    toml.write_text('[budget]\nmax_syncs = 0\nops = {"aten::mm" = 0}\n')
    assert main([trace_file, "--budget-file", str(toml)]) == 1
    out = capsys.readouterr().out
    assert "ops[aten::mm]" in out
    as_json = tmp_path / "budget.json"
    as_json.write_text(json.dumps({"max_syncs": 1, "max_transfer_bytes": "2 KB"}))
    assert main([trace_file, "--budget-file", str(as_json), "--budget", "max_kernels=4"]) == 0


@pytest.mark.parametrize("args,message", [
    (["--budget", "max_sync=1"], "unknown budget key 'max_sync'"),
    (["--budget", "max_syncs"], "--budget expects KEY=VALUE"),
    (["--budget", "min_overlap=2"], "ratio between 0 and 1"),
    (["--steps", "x"], "--steps expects"),
    (["--output-format", "xml"], "invalid choice"),
    (["--budget-file", "/nonexistent/b.toml"], "--budget-file"),
])
def test_cli_usage_errors_exit_2_with_one_line(trace_file, capsys, args, message):
    assert main([trace_file, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perflint trace: error: ") and message in err and err.count("\n") == 1


def test_cli_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "--budget KEY=VALUE" in capsys.readouterr().out


def test_cli_no_arguments_is_a_usage_error(capsys):
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("perflint trace: error: ")


def test_cli_bad_file_among_good_ones(tmp_path, trace_file, capsys):
    bad = _write(tmp_path, "bad.json.gz", BROKEN["truncated.json.gz"]())
    assert main([str(bad), trace_file, "--budget", "max_syncs=5"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [captured.err.strip()]
    assert captured.err.startswith(f"perflint trace: error: {bad}: truncated or corrupt gzip")
    assert "rank0.pt.trace.json.gz" in captured.out and "all budgets hold" in captured.out


def test_cli_steps_without_profiler_steps(tmp_path, capsys):
    path = _write(tmp_path, "nosteps.json", {"traceEvents": [ev("cpu_op", "aten::add", 0, 1)]})
    assert main([str(path), "--steps", "1:2"]) == 2
    assert "no ProfilerStep#N annotations" in capsys.readouterr().err


def test_cli_folder_of_ranks(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    for rank, dur in ((0, 20), (1, 50)):  # rank 0's allreduce is short: it arrived last, rank 1 waited 30 us
        doc = kineto_trace()
        doc["distributedInfo"] = {"rank": rank, "world_size": 2}
        for e in doc["traceEvents"]:
            if e["name"] == ALLREDUCE:
                e["dur"] = dur
        _write(folder, f"rank{rank}.json", doc)
    (folder / "notes.txt").write_text("not a trace")
    assert main([str(folder), "--budget", "max_syncs=1", "--output-format", "json"]) == 0
    job = json.loads(capsys.readouterr().out)["job"]
    assert job["ranks"] == [0, 1] and job["straggler"] == 0 and job["matched"] == 1
    assert [(b["rank"], b["transfer_us"], b["wait_us"]) for b in job["balance"]] == [(0, 20, 0), (1, 20, 30)]


def test_module_entry_point(trace_file):
    done = subprocess.run([sys.executable, "-m", "perflint.trace.cli", trace_file, "--budget", "max_syncs=0"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 1 and "FAIL" in done.stdout and not done.stderr


def test_package_imports_without_torch():
    code = ("import sys, perflint.trace, perflint.trace.cli, perflint.trace.ranks; "
            "assert 'torch' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1]).returncode == 0


def test_unreadable_path_names_the_os_error(tmp_path):
    with pytest.raises(TraceError) as missing:
        load_trace(tmp_path / "missing.json.gz")
    with pytest.raises(TraceError) as folder:
        load_trace(tmp_path)
    assert missing.value.reason == "No such file or directory" and folder.value.reason == "Is a directory"
