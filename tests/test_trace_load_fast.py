"""The optional fast paths of `load_trace`: isal's inflate (zlib without it) and msgspec's union of one
struct per phase. Each must build the very trace the general readers build, and hand them whatever it
does not fit."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

import perflint.trace.load as load_module
import perflint.trace.msgspec_reader as typed
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
