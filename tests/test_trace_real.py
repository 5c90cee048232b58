"""Every recorded trace in shared/traces through `perflint trace`'s analysis, checked against the figures
HTA 0.5.0 computed for the same files (HTA_0.5.0_reference_output.txt) and against counts taken
independently from the raw JSON.

Where our definition differs from HTA's, the test says how and reproduces HTA's number by applying
HTA's convention to our events (see `as_hta_sees_it`): that both documents the difference and proves
the rest of the computation agrees.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import replace
from pathlib import Path

import pytest

from perflint.trace import analyze, load_trace, metrics, metrics_of
from perflint.trace.steps import find_steps, window

TRACES = Path(os.environ.get("PERFLINT_TRACES") or Path(__file__).resolve().parents[1].parent / "shared" / "traces")
pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"recorded traces not found at {TRACES} "
                                "(set PERFLINT_TRACES to the shared/traces folder)")

DLRM = [f"param_dlrm_8rank/worker{r}_step_12.{ts}.pt.trace.json.gz" for r, ts in enumerate(
    ["1694128201545", "1694128201556", "1694128201554", "1694128201557", "1694128201547", "1694128201549",
     "1694128201553", "1694128201553"])]
FILES = {
    "mi250": "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "cpu_only": "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "alexnet": "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "event_sync": "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "event_sync_multi": "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "df_index": "hta/df_index_resolver/df_index_resolver.json.gz",
    "nccl": "hta/nccl_parser_config/nccl_data.json.gz",
    "negq": "hta/negative_queue_length_values_check/rank0.json.gz",
    "ns_res": "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "control": "hta/trace_diff/control/control.json.gz",
    "test": "hta/trace_diff/test/test.json.gz",
    "sampled0": "hta/trace_filter/sampled_rank-0.json.gz",
    "sampled1": "hta/trace_filter/sampled_rank-1.json.gz",
    "resnet_legacy": "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    **{f"dlrm{r}": f for r, f in enumerate(DLRM)},
}

# HTA 0.5.0 get_temporal_breakdown: idle, compute, non-compute, kernel_time (us); get_comm_comp_overlap (%).
HTA_TEMPORAL = {
    "dlrm0": (6419, 1034, 5556, 13009, 4.50), "dlrm1": (6428, 1246, 11075, 18749, 2.47),
    "dlrm2": (7046, 1068, 3236, 11350, 7.88), "dlrm3": (8145, 1240, 9468, 18853, 3.31),
    "dlrm4": (8887, 1126, 6576, 16589, 0.56), "dlrm5": (9121, 1041, 6230, 16392, 0.64),
    "dlrm6": (7051, 1051, 3308, 11410, 7.56), "dlrm7": (8308, 1059, 1600, 10967, 9.51),
    "sampled0": (321378, 106252, 172428, 600058, 11.81), "sampled1": (328671, 135548, 136455, 600674, 20.05),
    "nccl": (338781, 75169, 21636, 435586, 14.31), "alexnet": (12929684, 10637, 55690, 12996011, None),
    "event_sync": (207, 49, 7, 263, None), "negq": (705853, 143836, 166865, 1016554, 1.37),
    "df_index": (643612, 496485, 256572, 1396669, 0.0), "control": (62119, 234760, 86525, 383404, 47.03),
    "test": (46910, 429216, 152245, 628371, 68.8), "ns_res": (10113, 372150, 2371, 384634, None),
    "resnet_legacy": (327463, 492891, 10140, 830494, None), "mi250": (8780, 96, 35, 8911, None),
}
# HTA queue_length_summary max per stream (rank 0 / the file's rank).
HTA_QUEUE_MAX = {
    "dlrm0": {7: 25, 22: 1, 24: 1, 84: 1}, "sampled0": {7: 76, 23: 4, 25: 8, 84: 1, 203: 1},
    "nccl": {7: 10, 40: 1}, "alexnet": {7: 18, 20: 2}, "event_sync": {7: 1},
    "negq": {7: 946, 25: 4, 27: 17, 84: 3, 285: 4, 363: 4}, "df_index": {7: 73, 14: 20},
    "control": {7: 287, 20: 10, 21: 2, 22: 22}, "test": {7: 1013, 14: 9, 15: 5, 16: 23},
    "ns_res": {7: 1022}, "resnet_legacy": {7: 567}, "mi250": {0: 1},
}
# HTA get_idle_time_breakdown: stream -> (host_wait, kernel_wait, other) in us.
HTA_STREAM_IDLE = {
    "dlrm0": {22: (145, 0, 0), 7: (11448, 123, 0), 24: (5906, 18, 0), 84: (4740, 3, 0)},
    "sampled0": {23: (596037, 70, 34), 84: (148934, 6, 0), 25: (0, 9, 47865), 7: (213825, 1985, 261740)},
    "nccl": {7: (357247, 2155, 0), 40: (381499, 0, 0)},
    "alexnet": {7: (12855007, 104, 0), 20: (12011718, 3, 0)},
    "negq": {7: (0, 17159, 691231), 25: (628598, 85, 0), 27: (792592, 1000, 7135), 285: (0, 0, 675305),
             363: (0, 75, 673182), 84: (62901, 12, 665192)},
    "df_index": {7: (791330, 16727, 73829), 14: (933139, 5568, 4444)},
    "control": {21: (237710, 71, 0), 20: (346996, 621, 7470), 7: (102154, 14226, 32183), 22: (271786, 1253, 0)},
    "test": {16: (422925, 829, 0), 7: (2960, 42372, 41756), 15: (348483, 138, 38936), 14: (520794, 1087, 14536)},
    "ns_res": {7: (1709, 8404, 0)}, "resnet_legacy": {7: (318934, 8529, 0)}, "mi250": {0: (8780, 0, 0)},
}
FLOAT_TS = {"nccl", "ns_res", "mi250"}  # sub-microsecond timestamps
WITH_CUDA_SYNC = {"alexnet", "event_sync"}  # traces whose cuda_sync records HTA counts as device time


@pytest.fixture(scope="session")
def traces():
    return {key: load_trace(TRACES / rel) for key, rel in FILES.items()}


@pytest.fixture(scope="session")
def hta_view(traces):
    """analyze(as_hta_sees_it(...)) per trace, computed once for all the HTA comparisons."""
    cache = {}

    def get(key):
        if key not in cache:
            cache[key] = analyze(as_hta_sees_it(traces[key], key))
        return cache[key]
    return get


@pytest.fixture(scope="session")
def whole(traces):
    """Figures of the whole file per trace, computed once."""
    cache = {}

    def get(key):
        if key not in cache:
            cache[key] = analyze(traces[key])
        return cache[key]
    return get


@pytest.fixture(scope="session")
def raw_events():
    try:
        from orjson import loads
    except ImportError:
        loads = json.loads

    def read(key):
        with gzip.open(TRACES / FILES[key]) as f:
            return loads(f.read())["traceEvents"]
    return read


def hta_window(trace):
    """What HTA 0.5.0 analyses by default: with two or more steps, everything before the last step, and
    only device work whose launch call is in the trace."""
    steps = find_steps(trace)
    if len(steps) < 2:
        return trace
    return window(trace, float("-inf"), steps[-1].start, orphans=False)


def as_hta_sees_it(trace, key):
    """Our events under HTA 0.5.0's conventions, which differ from ours in three documented ways:
    1. HTA analyses only what precedes the last ProfilerStep (when there are 2+) and drops device work
       whose launch is not in the trace; we analyse the whole file unless --steps is given.
    2. HTA rounds sub-microsecond events inward (start up, end down: up to 2 us lost per event); we keep
       the file's precision.
    3. HTA's temporal breakdown counts `cuda_sync` records on a stream (the stream waiting for the host)
       as non-compute device time; we count only kernels, copies and memsets as device work.
    """
    trace = hta_window(trace)
    if key in FLOAT_TS:
        def inward(e):
            start, end = math.ceil(e.ts), math.floor(e.ts + e.dur)
            return e._replace(ts=start, dur=end - start)
        trace = replace(trace, host_ops=[inward(e) for e in trace.host_ops],
                        runtime=[inward(e) for e in trace.runtime], device=[inward(e) for e in trace.device])
    return trace


def _temporal(fig):
    t = fig.timeline
    return t.idle_us, t.compute_us, t.non_compute_us, t.span_us


def _close(ours, theirs, rel=0.01, abs_=1.0):
    return ours == pytest.approx(theirs, rel=rel, abs=abs_)


@pytest.mark.parametrize("key", sorted(set(HTA_TEMPORAL) - WITH_CUDA_SYNC))
def test_temporal_breakdown_and_comm_overlap_match_hta(hta_view, key):
    fig = hta_view(key)
    idle, compute, non_compute, span, overlap = HTA_TEMPORAL[key]
    assert _close(_temporal(fig), (idle, compute, non_compute, span))
    if overlap is None:
        assert fig.kernels.comm_overlap is None
    else:
        assert _close(100 * fig.kernels.comm_overlap, overlap, abs_=0.01)


@pytest.mark.parametrize("key", sorted(WITH_CUDA_SYNC))
def test_cuda_sync_records_are_not_device_work(traces, key):
    """Same compute time as HTA; HTA's idle/non-compute differ only by the cuda_sync records it counts."""
    trace = as_hta_sees_it(traces[key], key)
    fig = analyze(trace)
    idle, compute, non_compute, span = HTA_TEMPORAL[key][:4]
    assert _close(fig.timeline.compute_us, compute)
    as_work = [d._replace(kind="memset") if d.kind == "sync" and d.stream >= 0 else d for d in trace.device]
    hta_like = analyze(replace(trace, device=[d for d in as_work if d.kind != "sync"]))
    assert _close(_temporal(hta_like), (idle, compute, non_compute, span))
    assert _temporal(fig) != pytest.approx((idle, compute, non_compute, span), abs=0.5)


@pytest.mark.parametrize("key", sorted(FLOAT_TS))
def test_sub_microsecond_precision_is_kept(traces, hta_view, key):
    """Without HTA's inward rounding the busy time is larger: each event keeps its fractional part."""
    ours = analyze(hta_window(traces[key])).timeline
    rounded = hta_view(key).timeline
    assert ours.busy_us > rounded.busy_us
    assert ours.span_us == pytest.approx(rounded.span_us, abs=2)


@pytest.mark.parametrize("key", sorted(HTA_QUEUE_MAX))
def test_queue_length_max_matches_hta(hta_view, key):
    fig = hta_view(key)
    assert {s.stream: s.max for s in fig.queue.streams} == HTA_QUEUE_MAX[key]


def test_queue_near_the_limit(whole):
    """ns_resolution_trace's stream 7 reaches 1022 of 1024 entries; no time is spent at the limit."""
    fig = whole("ns_res")
    (stream,) = fig.queue.streams
    assert (stream.stream, stream.max, stream.time_full_us) == (7, 1022, 0.0)
    assert stream.mean > 500


@pytest.mark.parametrize("key", sorted(HTA_STREAM_IDLE))
def test_idle_breakdown_per_stream_matches_hta(hta_view, key):
    fig = hta_view(key)
    ours = {s.stream: (s.host_wait_us, s.kernel_wait_us, s.other_us) for s in fig.timeline.streams}
    assert set(ours) >= set(HTA_STREAM_IDLE[key])
    for stream, theirs in HTA_STREAM_IDLE[key].items():
        assert _close(ours[stream], theirs), stream


BIG = {"df_index", "negq", "control", "test"}  # > 1.2 MB gzipped: checked against SOURCES.md counts instead


@pytest.mark.parametrize("key", sorted(set(FILES) - BIG))
def test_whole_file_counts_match_the_raw_json(whole, raw_events, key):
    events = raw_events(key)
    kernels = sum(1 for e in events if e.get("cat") in ("kernel", "Kernel"))
    copies = [e for e in events if e.get("cat") in ("gpu_memcpy", "Memcpy")]
    host_device = [e for e in copies if e["name"].startswith(("Memcpy HtoD", "Memcpy DtoH"))]
    m = metrics_of(whole(key))
    if key == "cpu_only":
        assert m["kernels"] is None and m["syncs"] is None and m["transfers"] is None
        assert m["collectives"] == sum(1 for e in events if e.get("name", "").startswith("gloo:"))
        return
    assert m["kernels"] == kernels
    assert m["transfers"] == len(host_device)
    sizes = [e["args"].get("bytes") for e in host_device]
    assert m["transfer_bytes"] == (None if None in sizes else sum(sizes))
    nccl = sum(1 for e in events if e.get("cat") == "kernel" and e["name"].startswith("nccl"))
    assert m["collectives"] == nccl


def test_documented_kernel_counts(whole):
    """The counts SOURCES.md states for these files."""
    counts = {k: whole(k).kernels.kernels for k in ("df_index", "nccl", "ns_res", "resnet_legacy", "control")}
    assert counts == {"df_index": 19370, "nccl": 2700, "ns_res": 4350, "resnet_legacy": 8772, "control": 8568}
    assert sum(c.count for c in whole("df_index").kernels.collectives if c.name == "AllReduce") == 2020


def test_event_sync_trace_syncs_are_attributed(whole):
    """event_sync_trace: `if t:` -> is_nonzero -> item -> _local_scalar_dense -> cudaMemcpyAsync (1 byte,
    pageable) + cudaStreamSynchronize is ONE sync named PFL105; plus cudaEventSynchronize and
    cudaDeviceSynchronize outside any aten op."""
    syncs = whole("event_sync").syncs
    assert [(s.call, s.op, s.top_op, s.rule) for s in syncs] == [
        ("cudaStreamSynchronize", "aten::_local_scalar_dense", "aten::is_nonzero", "PFL105"),
        ("cudaEventSynchronize", None, None, "PFL109"),
        ("cudaDeviceSynchronize", None, None, "PFL109"),
    ]
    assert all(s.wait_us >= 0 for s in syncs)


def test_legacy_trace_syncs_have_python_source_lines(whole):
    """The 2021 trace recorded stacks: each blocking input copy points at the script line."""
    syncs = whole("resnet_legacy").syncs
    copies = [s for s in syncs if s.op == "aten::copy_"]
    assert len(copies) == 12 and len(syncs) == 13
    assert {s.source for s in copies} == {"resnet50_profiler_api.py:44"}
    # The blocking host-to-device copy of the batch the DataLoader just produced (line 42 iterates the
    # loader, line 44 moves the batch): the loader-copy rules, not PFL201 (a tensor created, then moved).
    # The copies are "Memcpy HtoD (Pageable -> Device)": pin the loader's memory first (PFL503).
    assert {s.rule for s in copies} == {"PFL503"}


def test_hip_names_are_recognised(whole):
    m = whole("mi250")
    assert [(s.call, s.rule) for s in m.syncs] == [("hipMemcpyWithStream", "PFL103")] * 2 + [
        ("hipDeviceSynchronize", "PFL109")]
    assert [(r.direction, r.host_memory, r.count) for r in m.transfers.rows] == [("HtoD", "-", 2)]
    assert m.kernels.kernels == 14


def test_sync_heavy_trace(traces, whole):
    """negative_queue_length_values_check: the 75 cudaStreamSynchronize calls SOURCES.md lists are 75
    syncs, each with a rule; a blocking copy followed by its synchronize in the same op is not counted
    twice."""
    assert sum(1 for c in traces["negq"].runtime if c.name == "cudaStreamSynchronize") == 75
    syncs = whole("negq").syncs
    assert sum(1 for s in syncs if s.call == "cudaStreamSynchronize") == 75
    assert not any(s.call.endswith("pageable memory") and s.op == t.op and s.call != t.call
                   for s in syncs for t in syncs if t.call == "cudaStreamSynchronize" and abs(s.at_us - t.at_us) < 1)
    assert all(s.rule for s in syncs)


def test_cpu_only_trace_has_no_gpu_figures(traces, whole):
    fig = whole("cpu_only")
    assert not fig.has_device and fig.timeline.utilisation is None and fig.queue.queue_overlap is None
    assert metrics(traces["cpu_only"])["ops"] == 4


def test_steps_partial_last_step_and_selection(traces, whole):
    """resnet50 (legacy) records steps 5..10 (HTA drops #10); selecting 5:9 equals HTA's window."""
    trace = traces["resnet_legacy"]
    steps = find_steps(trace)
    assert [s.number for s in steps] == [5, 6, 7, 8, 9, 10]
    selected = analyze(trace, "5:9")
    assert _temporal(selected) == _temporal(analyze(hta_window(trace)))
    everything = whole("resnet_legacy")
    assert everything.kernels.kernels > selected.kernels.kernels
    single = [metrics(trace, (n, n))["kernels"] for n in (5, 6, 7, 8, 9, 10)]
    assert sum(single) == everything.kernels.kernels


def test_comm_bytes_from_collective_args(whole, raw_events):
    events = raw_events("nccl")
    size = {"Float": 4, "Long": 8}  # the dtypes this trace's collectives use
    expected = sum(e["args"]["In msg nelems"] * size[e["args"]["dtype"]] for e in events
                   if e.get("cat") == "kernel" and e["name"].startswith("nccl"))
    assert whole("nccl").kernels.comm_bytes == expected > 0


def test_eight_rank_job(traces, whole):
    from perflint.trace.ranks import job_figures

    ranks = [(traces[f"dlrm{r}"], whole(f"dlrm{r}")) for r in range(8)]
    job = job_figures(ranks)
    assert job.ranks == list(range(8)) and job.matched == 8 and job.unmatched == 0
    for b in job.balance:  # every rank's collective time is its transfer plus its waiting
        comm = sum(d.dur for d in traces[f"dlrm{b.rank}"].device if d.name.startswith("nccl"))
        assert b.transfer_us + b.wait_us == pytest.approx(comm)
    assert sum(b.last_to_arrive for b in job.balance) == 8
    # ranks 1 and 3 launch ~65 more kernels (SOURCES.md); they also do the most compute
    busiest = sorted(job.balance, key=lambda b: -b.compute_us)[:2]
    assert {b.rank for b in busiest} == {1, 3}
    assert job.imbalance == pytest.approx(max(b.compute_us for b in job.balance)
                                          / (sum(b.compute_us for b in job.balance) / 8))


def test_streaming_reader_gives_the_same_trace():
    path = TRACES / FILES["nccl"]
    assert load_trace(path, stream=True).device == load_trace(path, stream=False).device


@pytest.mark.parametrize("key", ["nccl", "resnet_legacy", "mi250", "control"])
def test_typed_reader_gives_the_same_trace(key, monkeypatch):
    """msgspec's typed fast path and the general reader build identical traces (types included)."""
    import perflint.trace.msgspec_reader as typed

    if typed._DECODER is None:
        pytest.skip("msgspec is not installed")
    fast = load_trace(TRACES / FILES[key])
    monkeypatch.setattr(typed, "_DECODER", None)
    general = load_trace(TRACES / FILES[key])
    assert repr(fast) == repr(general) and fast == general


@pytest.mark.parametrize("key", ["df_index", "control", "resnet_legacy", "ns_res", "dlrm0"])
def test_two_processes_read_each_real_trace_as_one(traces, key, monkeypatch):
    """The forked read (perflint/trace/forked.py) on real files: every event, in order, and the metadata."""
    import sys

    import perflint.trace.load as load_module
    from perflint.trace import forked

    if not sys.platform.startswith("linux"):
        pytest.skip("the two-process read is Linux-only")
    monkeypatch.setattr(load_module, "SPLIT_MIN", 0)  # dlrm0 is 0.6 MB: split it too
    monkeypatch.setattr(forked, "available", lambda: True)
    children = []
    real = forked.Child.__init__
    monkeypatch.setattr(forked.Child, "__init__", lambda self, work: (real(self, work), children.append(self))[0])
    two = load_trace(TRACES / FILES[key], processes=2)
    assert len(children) == 1 and children[0].result() is not None
    assert two == traces[key] and two.device_properties == traces[key].device_properties
