"""The optional fast paths of `load_trace`: isal's inflate (zlib without it), msgspec's union of one
struct per phase, and a second process for the second half of a large file. Each must build the very trace the general readers build, and hand them whatever it
does not fit."""

from __future__ import annotations

import gzip
import json
import os
import signal
import sys
import threading
import tracemalloc

import pytest

import perflint.trace.load as load_module
import perflint.trace.msgspec_reader as typed
from perflint.trace import forked
from perflint.trace.model import CommInfo, Inputs
from perflint.trace import TraceError, load_trace
from tests.test_trace_synthetic import kineto_trace


@pytest.fixture(params=["isal", "zlib"])
def inflate(request, monkeypatch):
    """Gunzip with isal, or with zlib as if isal were not installed."""
    if request.param == "isal" and load_module._isal is None:
        pytest.skip("isal is not installed")
    if request.param == "zlib":
        monkeypatch.setattr(load_module, "_isal", None)


def test_gunzip_members_and_memory(inflate):
    """One member is inflated into a buffer of the trailer's size, never copied (peak: the text once);
    further members are found by the trailer's size and CRC, even when the first has the same size."""
    text = json.dumps([{"ph": "X", "ts": i} for i in range(100_000)]).encode()  # 2.4 MB
    data = gzip.compress(text)
    tracemalloc.start()
    try:
        assert load_module._gunzip(data) == text
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.2 * len(text)
    half = len(text) // 2
    assert load_module._gunzip(gzip.compress(text[:100]) + gzip.compress(text[100:])) == text
    assert load_module._gunzip(gzip.compress(text[:half]) + gzip.compress(text[half: 2 * half])) \
        == text[: 2 * half]


@pytest.mark.parametrize("damage", ["crc", "size", "deflate", "truncated"])
def test_corrupt_gzip_is_one_trace_error(tmp_path, inflate, damage):
    data = bytearray(gzip.compress(json.dumps(kineto_trace()).encode()))
    if damage == "truncated":
        del data[-20:]
    else:
        data[{"crc": -6, "size": -3, "deflate": 30}[damage]] ^= 1
    path = tmp_path / "t.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="truncated or corrupt gzip") as info:
        load_trace(path)
    assert str(info.value).startswith(str(path) + ": ") and "\n" not in str(info.value)


@pytest.fixture
def general(monkeypatch):
    """Records the files the general reader reads, and loads a file with it alone."""
    if typed._DECODER is None:
        pytest.skip("msgspec is not installed")
    read = []
    real = load_module._from_bytes
    monkeypatch.setattr(load_module, "_from_bytes", lambda raw, p: read.append(p) or real(raw, p))

    def load(path):
        with monkeypatch.context() as m:
            m.setattr(typed, "_DECODER", None)
            return load_trace(path)

    load.read = read
    return load


def _memory(ph, total, device_type=1):
    return {"ph": ph, "name": "[memory]", "ts": 5, "pid": 0, "tid": 0,
            "args": {"Device Type": device_type, "Total Allocated": total, "Bytes": 8}}


def test_every_phase_takes_the_typed_path(tmp_path, general):
    """Each phase letter of the Chrome trace format has its struct: keys the general reader ignores are
    skipped whatever their type; instants ("i", legacy "I") give the peak memory."""
    doc = kineto_trace()
    odd = {"name": 7, "ts": "x", "args": [1], "cat": None}
    doc["traceEvents"] += [{"ph": ph, **odd} for ph in "BECbnestfSTpFPNODMVvRc()"]
    doc["traceEvents"] += [_memory("i", 300), _memory("I", 500), _memory("i", 900, device_type=0),
                           {"ph": "i", "name": "x", "args": {"Total Allocated": "y"}}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    fast = load_trace(path)
    assert general.read == [] and fast.peak_memory == 500
    assert repr(fast) == repr(general(path)) and fast == general(path)


@pytest.mark.parametrize("odd", ['{"name": "x"}', '{"ph": null}', '{"ph": "Z"}', '{"ph": 3}',
                                 '{"ph": "i", "name": "[memory]", "ph": "X", "cat": "cpu_op", "ts": 5, "dur": 1}'],
                         ids=["missing", "null", "unknown", "number", "twice"])
def test_events_outside_the_union_go_to_the_general_reader(tmp_path, general, odd):
    text = json.dumps(kineto_trace(), indent=1)
    path = tmp_path / "t.json"
    path.write_text(text.replace('"traceEvents": [', '"traceEvents": [' + odd + ",", 1))
    fast = load_trace(path)
    assert general.read == [str(path)]
    assert repr(fast) == repr(general(path)) and fast == general(path)
    if odd.endswith("1}"):  # the last "ph" counts, as in a dict
        assert ("[memory]", 5) in [(op.name, op.ts) for op in fast.host_ops]


def test_no_event_with_ph_is_an_error(tmp_path, general):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [{"name": "a", "ts": 1}, {"cat": "cpu_op"}]}))
    for load in (load_trace, general):
        with pytest.raises(TraceError, match="no event has a 'ph' field"):
            load(path)


# Two processes: a forked child reads the text after the split (the first cut past its middle) while this
# process reads the text before it; the parts join into the trace one process builds.


def _big_trace(n: int = 400, stack: str = "step") -> dict:
    """kineto_trace's events repeated n times (later copies shifted in time), with what the tail must carry
    back: argument shapes, collective kernels, [memory] peaks, repaired and dropped events, and metadata
    after the event array. A `stack` of "}, {" puts a false cut between events inside each cpu_op."""
    base = kineto_trace()
    events = []
    for k in range(n):
        for e in base["traceEvents"]:
            e = json.loads(json.dumps(e))
            if "ts" in e:
                e["ts"] += 1000 * k
            if e.get("cat") == "cpu_op":
                e["args"] = {"Input Dims": [[k, 3], []], "Input type": ["float", "Scalar"],
                             "Call stack": f"train.py({k}): {stack};"}
            events.append(e)
        events.append(_memory("i", 10 * k))
        if k % 50 == 7:
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::odd", "ts": 1000 * k, "dur": -1})
            events.append({"ph": "X", "cat": "kernel", "name": "bad", "ts": 1000 * k, "dur": 1e30})
    return {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0, "name": "Test GPU"}],
            "distributedInfo": {"rank": 3, "world_size": 8}}


@pytest.fixture
def split(monkeypatch):
    """Splits any file (SPLIT_MIN 0) in small pieces, and records the children forked."""
    if typed._DECODER is None or not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        pytest.skip("needs msgspec and Linux's fork")
    monkeypatch.setattr(load_module, "SPLIT_MIN", 0)
    monkeypatch.setattr(typed, "PIECE", 4096)
    monkeypatch.setattr(forked, "available", lambda: True)  # also on a one-CPU machine
    children = []
    real = forked.Child.__init__

    def spy(self, work):
        real(self, work)
        children.append(self)

    monkeypatch.setattr(forked.Child, "__init__", spy)
    return children


@pytest.mark.parametrize("gz", [False, True], ids=["json", "gzip"])
def test_two_processes_build_the_trace_one_builds(tmp_path, split, gz):
    text = json.dumps(_big_trace(), indent=1).encode()
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(text) if gz else text)
    calls = []
    two = load_trace(path, processes=2, meanwhile=lambda: calls.append(1))
    assert len(split) == 1 and calls == [1] and split[0].result() is not None  # the child's part was used
    one = load_trace(path)
    assert len(split) == 1
    assert repr(two) == repr(one) and two == one
    assert two.peak_memory == 3990 and two.problems and two.rank == 3 and two.world_size == 8
    assert type(two.host_ops[-1].inputs) is Inputs and two.host_ops[-1].inputs.dims[0][0] == 399
    assert [type(d.comm) for d in two.device[-8:] if d.comm] == [CommInfo]


@pytest.mark.parametrize("at", [0.02, 0.3, 0.5, 0.77, 0.999, 1.5])
def test_head_and_tail_meet_at_one_cut(at):
    """Whatever the split, the head's pieces up to SPLIT and the tail's pieces are all events, once each."""
    if typed._DECODER is None:
        pytest.skip("msgspec is not installed")
    text = json.dumps(_big_trace(60, stack="}, {")).encode()
    chunks = [text[i: i + 3000] for i in range(0, len(text), 3000)]
    whole = [e for p in typed.pieces(chunks, {}) for e in p]
    head = []
    for piece in typed.pieces(chunks, {}, int(len(text) * at)):
        if piece is typed.SPLIT:
            tail = [e for p in typed.pieces(chunks, {}, int(len(text) * at), tail=True) for e in p]
            assert head + tail == whole
            return
        head += piece
    # No SPLIT: no cut past the split (at 1.5), or the cut there was inside an event ("}, {" in a call
    # stack) and the head read the rest at once. Either way the head has it all and the child is ignored.
    assert head == whole


def test_a_false_cut_at_the_split_leaves_the_work_to_the_parent(tmp_path, split):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_big_trace(100, stack="}, {")))
    assert load_trace(path, processes=2) == load_trace(path)
    assert len(split) == 1


@pytest.mark.parametrize("failure", ["raises", "killed", "interrupted"])
def test_a_failing_child_leaves_the_work_to_the_parent(tmp_path, split, monkeypatch, failure):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_big_trace(100)))
    real = load_module._tail

    def tail(*args):
        if failure == "raises":
            raise MemoryError
        os.kill(os.getpid(), signal.SIGKILL if failure == "killed" else signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(load_module, "_tail", tail)
    two = load_trace(path, processes=2)
    assert len(split) == 1 and split[0].result() is None
    assert two == load_trace(path)


def test_a_process_that_cannot_fork_reads_alone(tmp_path, split, monkeypatch):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_big_trace(100)))
    opened = []
    real_pipe = os.pipe

    def pipe():
        opened.extend(real_pipe())
        return tuple(opened[-2:])

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "pipe", pipe)
    monkeypatch.setattr(os, "fork", no_fork)
    assert load_trace(path, processes=2) == load_trace(path)
    assert split == [] and len(opened) == 2
    for fd in opened:  # both ends closed again
        with pytest.raises(OSError):
            os.fstat(fd)


def test_the_parent_failing_ends_the_child(tmp_path, split):
    """Ctrl-C (or any error) in this process kills and reaps the child: no process is left behind."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_big_trace(100)))

    def interrupt():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        load_trace(path, processes=2, meanwhile=interrupt)
    (child,) = split
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)


def test_corrupt_gzip_in_the_tail_is_the_same_error(tmp_path, split):
    data = bytearray(gzip.compress(json.dumps(_big_trace(100)).encode()))
    data[-6] ^= 1  # the CRC: only the end of the stream tells
    path = tmp_path / "t.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError, match="truncated or corrupt gzip"):
        load_trace(path, processes=2)
    assert len(split) == 1


def test_no_fork_with_other_threads_or_small_files(tmp_path, monkeypatch):
    if not sys.platform.startswith("linux"):
        assert not forked.available()
        return
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    with monkeypatch.context() as m:  # another test may have left a thread behind (a timeout watcher)
        m.setattr(threading, "active_count", lambda: 1)
        assert forked.available()
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    thread.start()
    try:
        assert not forked.available()
    finally:
        done.set()
        thread.join()
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert not forked.available()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    forks = []
    monkeypatch.setattr(forked, "Child", lambda work: forks.append(work))
    path = tmp_path / "t.json"
    path.write_text(json.dumps(kineto_trace()))  # far below SPLIT_MIN
    load_trace(path, processes=2)
    assert forks == []


def test_the_command_reports_the_same_with_one_or_two_processes(tmp_path, split, capsys):
    from perflint.trace.cli import main

    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(_big_trace(120)).encode()))
    reports = []
    for jobs in ([], ["--jobs", "1"], ["--jobs", "8"]):
        assert main([str(path), "--output-format", "json", *jobs]) == 0
        reports.append(capsys.readouterr().out)
    assert len(split) == 2  # the default and --jobs 8 (two halves at most); --jobs 1 forks nothing
    assert reports[0] == reports[1] == reports[2] and '"kernels"' in reports[0]
    assert main([str(path), "--jobs", "-1"]) == 2
    assert capsys.readouterr().err == "perflint trace: error: --jobs must be >= 0\n"
