"""What bounds each trace (perflint.trace.bounds) and the roofline behind it (perflint.trace.roofline), on
the real traces in shared/traces: every trace gets a verdict; per family the verdict and the figures
behind it are pinned and checked against counts taken independently from the events; FLOPs and bytes
agree with hand computations for a GEMM, a convolution, an elementwise kernel and (recorded here on the
CPU) scaled-dot-product attention."""

from __future__ import annotations

import numpy as np
import pytest

from perflint.trace import analyze, load_trace, metrics_of
from perflint.trace.bounds import REGIMES
from perflint.trace.device_columns import device_work
from perflint.trace.opcost import op_cost
from perflint.trace.peaks import peak_of
from perflint.trace.roofline import kernel_costs, roofline_figures
from tests.test_trace_real import FILES, TRACES

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"recorded traces not found at {TRACES}")

# Whole file: the dominant regime and every share of 0.1% or more (they add up to 1 with the rest).
VERDICTS = {
    "mi250": ("overhead", {"overhead": 0.889, "input": 0.007, "memory": 0.012, "sync": 0.092}),
    "cpu_only": ("communication", {"overhead": 0.140, "communication": 0.860}),
    "alexnet": ("overhead", {"overhead": 0.976, "input": 0.001, "sync": 0.023}),
    "event_sync": ("overhead", {"overhead": 0.926, "memory": 0.016, "sync": 0.057}),
    "event_sync_multi": ("overhead", {"overhead": 0.981, "compute": 0.019, "sync": 0.001}),
    "df_index": ("overhead", {"overhead": 0.424, "memory": 0.132, "compute": 0.238, "communication": 0.206}),
    "nccl": ("overhead", {"overhead": 0.717, "memory": 0.113, "compute": 0.060, "communication": 0.057,
                          "sync": 0.053}),
    "negq": ("other", {"overhead": 0.097, "input": 0.015, "memory": 0.095, "compute": 0.096,
                       "communication": 0.150, "sync": 0.028, "other": 0.518}),
    "ns_res": ("compute", {"overhead": 0.022, "memory": 0.349, "compute": 0.606, "sync": 0.023}),
    "control": ("memory", {"overhead": 0.150, "input": 0.037, "memory": 0.542, "compute": 0.071,
                           "communication": 0.186, "sync": 0.014}),
    "test": ("memory", {"overhead": 0.036, "input": 0.013, "memory": 0.579, "compute": 0.283,
                        "communication": 0.088}),
    "sampled0": ("overhead", {"overhead": 0.303, "input": 0.001, "memory": 0.116, "compute": 0.055,
                              "communication": 0.273, "other": 0.252}),
    "sampled1": ("overhead", {"overhead": 0.283, "input": 0.004, "memory": 0.167, "compute": 0.056,
                              "communication": 0.242, "other": 0.248}),
    "resnet_legacy": ("compute", {"overhead": 0.097, "input": 0.345, "memory": 0.180, "compute": 0.376,
                                  "sync": 0.002}),
    "dlrm0": ("overhead", {"overhead": 0.402, "input": 0.081, "memory": 0.070, "compute": 0.002,
                           "communication": 0.382, "sync": 0.064}),
    "dlrm1": ("communication", {"overhead": 0.287, "input": 0.050, "memory": 0.062, "compute": 0.001,
                                "communication": 0.554, "sync": 0.047}),
    "dlrm2": ("overhead", {"overhead": 0.498, "input": 0.104, "memory": 0.080, "compute": 0.002,
                           "communication": 0.246, "sync": 0.069}),
    "dlrm3": ("communication", {"overhead": 0.330, "input": 0.067, "memory": 0.064, "compute": 0.001,
                                "communication": 0.488, "sync": 0.050}),
    "dlrm4": ("overhead", {"overhead": 0.460, "input": 0.062, "memory": 0.062, "compute": 0.001,
                           "communication": 0.363, "sync": 0.051}),
    "dlrm5": ("overhead", {"overhead": 0.476, "input": 0.064, "memory": 0.057, "compute": 0.001,
                           "communication": 0.348, "sync": 0.052}),
    "dlrm6": ("overhead", {"overhead": 0.497, "input": 0.105, "memory": 0.079, "compute": 0.002,
                           "communication": 0.250, "sync": 0.068}),
    "dlrm7": ("overhead", {"overhead": 0.619, "input": 0.098, "memory": 0.083, "compute": 0.002,
                           "communication": 0.126, "sync": 0.073}),
}


@pytest.fixture(scope="module")
def fig():
    cache = {}

    def get(key):
        if key not in cache:
            trace = load_trace(TRACES / FILES[key])
            cache[key] = (trace, analyze(trace))
        return cache[key]
    return get


def test_every_trace_gets_a_verdict():
    assert set(VERDICTS) == set(FILES) and len(FILES) == 22


@pytest.mark.parametrize("key", sorted(VERDICTS))
def test_verdict_and_shares(fig, key):
    _, f = fig(key)
    dominant, shares = VERDICTS[key]
    whole = f.bounds.whole
    assert whole.dominant == dominant
    assert sum(whole.shares.values()) == pytest.approx(1.0)
    assert {r: round(v, 3) for r, v in whole.shares.items() if v >= 0.0005} == pytest.approx(shares, abs=0.0015)
    assert whole.sentence.startswith("Whole file is bound by") and "Cure:" in whole.sentence
    metrics = metrics_of(f)
    assert metrics["overhead_share"] == pytest.approx(whole.shares["overhead"])
    for step in f.bounds.steps:  # every step gets its own verdict, and its shares add up too
        assert step.dominant in REGIMES and sum(step.shares.values()) == pytest.approx(1.0)


def test_overhead_family_short_kernels_and_starved_gpu(fig):
    """df_index_resolver (V100 DDP rank): half its kernels are shorter than 10 us and the GPU idles 42% of
    the file waiting for launches (HTA counts 643,612 us idle of 1,396,669 in its window)."""
    trace, f = fig("df_index")
    work = device_work(trace)
    compute = work.dur[work.cls == 0]
    assert np.median(compute) == 8.0 and np.mean(compute < 10) == pytest.approx(0.521, abs=0.001)
    assert f.timeline.host_wait_us / f.bounds.whole.dur_us == pytest.approx(0.407, abs=0.005)
    assert [s.dominant for s in f.bounds.steps] == ["overhead"] * 4 + ["communication"]


def test_memory_bound_family_is_elementwise_and_embedding(fig):
    """trace_diff control (A100, TorchRec-style): the memory-bound time is elementwise and embedding
    kernels; its GEMMs, whose shapes the trace records, reach 22% of the TF32 peak."""
    _, f = fig("control")
    kinds = {k.name: k.time_us for k in f.kernels.kinds}
    assert kinds["elementwise"] + kinds["embedding"] > kinds["gemm"]
    gemm = next(c for c in f.roofline.kernel_classes if c.name == "gemm")
    assert gemm.compute_peak == pytest.approx(0.223, abs=0.002) and gemm.bound == "memory"


def test_compute_family_convolutions(fig):
    """ns_resolution_trace (V100 ResNet): the GPU is busy 98% of the time, queue always full (overlap
    99.9%), and convolution and GEMM kernels (compute-bound by name: the trace has no shapes) take 61%."""
    _, f = fig("ns_res")
    assert f.timeline.utilisation > 0.98 and f.queue.queue_overlap > 0.998
    assert f.bounds.whole.by_name_us > 0.9 * f.timeline.busy_us


def test_communication_family_ranks_one_and_three(fig):
    """param DLRM, 8 ranks: ranks 1 and 3 (the ones launching ~65 more kernels) spend the most time in
    exposed communication; the others wait on the host."""
    dominant = {r: fig(f"dlrm{r}")[1].bounds.whole.dominant for r in range(8)}
    assert {r for r, d in dominant.items() if d == "communication"} == {1, 3}


def test_input_family_loader_copies(fig):
    """resnet50 with num_workers=0: the input pipeline is a third of every step (the loader's __next__ and
    the pageable batch copies), the first step is bound by it, and the source line is the script's."""
    trace, f = fig("resnet_legacy")
    steps = {s.label: s for s in f.bounds.steps}
    assert steps["step 5"].dominant == "input"
    assert all(0.3 < s.shares["input"] < 0.45 for s in f.bounds.steps)
    loader = [h for h in trace.host_ops if h.name.startswith("enumerate(DataLoader)")]
    assert len(loader) == 6 and sum(h.dur for h in loader) / f.bounds.whole.dur_us == pytest.approx(0.39, abs=0.01)
    assert f.bounds.whole.sources == ["resnet50_profiler_api.py:46"]  # compute: the model's forward call


def test_other_family_queued_work_waits(fig):
    """negative_queue_length_values_check: 52% of the file the GPU idles with work already queued (HTA's
    per-stream breakdown calls the same time "other" on stream 7: 691,231 us)."""
    _, f = fig("negq")
    assert f.bounds.whole.shares["other"] > 0.5 and f.timeline.other_us > 0.5 * f.timeline.idle_us


def test_cpu_only_trace_collectives(fig):
    """The CPU-only gloo trace: the gloo:all_reduce annotations cover 86% of its span."""
    trace, f = fig("cpu_only")
    gloo = [h for h in trace.host_ops if h.name.startswith("gloo:")]
    start = min(h.ts for h in trace.host_ops)
    end = max(h.ts + h.dur for h in trace.host_ops)
    from perflint.measures import intervals
    covered = intervals.total(intervals.union([h.ts for h in gloo], [h.ts + h.dur for h in gloo]))
    assert f.bounds.whole.shares["communication"] == pytest.approx(covered / (end - start))
    assert metrics_of(f)["sync_share"] is None  # a CPU-only trace cannot tell


# --- roofline: hand computations on real kernels ------------------------------------------------


def _kernels_of(trace, op_name, dims):
    """(kernel duration, OpCost, kernel name) of the main kernels of ops with these input shapes."""
    work, costs = device_work(trace), kernel_costs(trace)
    found = []
    for row in np.flatnonzero(costs.main).tolist():
        op, cost = costs.ops[costs.op[row]]
        if op.name == op_name and op.inputs.dims[: len(dims)] == dims:
            found.append((float(work.dur[row]), cost, work.names[work.name[row]]))
    return found


def test_gemm_by_hand(fig):
    """control (A100 40GB): aten::addmm(bias[512], x[1024,1705], W[1705,512]), float32."""
    trace, _ = fig("control")
    (dur, cost, kernel), *_ = _kernels_of(trace, "aten::addmm", [[512], [1024, 1705], [1705, 512]])
    m, k, n = 1024, 1705, 512
    assert cost.flops == 2 * m * n * k + m * n  # TraceLens: 2MNK, plus MN for the bias
    assert cost.bytes == 4 * (m * k + k * n + m * n + n)
    peak, _ = peak_of(trace.device_name, trace.device_properties)
    assert peak.gpu == "A100 40GB" and peak.flops("tf32") == 156e12 and peak.tbps == 1.555
    tflops = cost.flops / (dur * 1e-6) / 1e12
    assert "s1688gemm" in kernel  # a TF32 tensor-core kernel: held to the TF32 peak
    assert cost.flops == 1_788_346_368 and cost.bytes == 12_574_720
    assert tflops == pytest.approx(1_788_346_368 / dur / 1e6)


def test_convolution_by_hand(fig):
    """resnet50 (V100): the stem conv, input [32,3,224,224], weight [64,3,7,7]; the trace records no
    stride, so the output size (112x112) comes from the batch norm that consumes it."""
    trace, _ = fig("resnet_legacy")
    found = _kernels_of(trace, "aten::cudnn_convolution", [[32, 3, 224, 224], [64, 3, 7, 7]])
    assert found
    dur, cost, kernel = found[0]
    out = 32 * 64 * 112 * 112
    assert cost.flops == 2 * (3 * 7 * 7) * out  # 2 * prod(weight[1:]) per output element
    assert cost.bytes == 4 * (32 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + out)
    assert cost.precision == "fp32" and not cost.assumed_dtype  # Input type says "float"


def test_elementwise_by_hand(fig):
    """resnet50: aten::add_ of two [32,256,56,56] tensors: one FLOP per element, three tensors moved."""
    trace, _ = fig("resnet_legacy")
    dur, cost, kernel = _kernels_of(trace, "aten::add_", [[32, 256, 56, 56], [32, 256, 56, 56]])[0]
    n = 32 * 256 * 56 * 56
    assert (cost.flops, cost.bytes) == (n, 3 * 4 * n)
    assert "elementwise" in kernel
    peak, _ = peak_of(trace.device_name)
    bandwidth = cost.bytes / (dur * 1e-6) / 1e12
    assert bandwidth / peak.tbps == pytest.approx(3 * 4 * n / dur / 1e6 / 0.9)


def test_attention_by_hand_on_a_cpu_recording(tmp_path):
    """No real GPU trace runs attention: record scaled_dot_product_attention on the CPU here."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    b, h, lq, lkv, e = 2, 4, 128, 96, 32
    q, k, v = torch.randn(b, h, lq, e), torch.randn(b, h, lkv, e), torch.randn(b, h, lkv, e)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
    path = tmp_path / "sdpa.json"
    prof.export_chrome_trace(str(path))
    trace = load_trace(path)
    ops = [op for op in trace.host_ops if "scaled_dot_product" in op.name and op.inputs is not None]
    cost = op_cost(ops[0])
    assert cost.category == "attention"
    assert cost.flops == 4 * b * h * lq * lkv * e  # QK^T and PV, 2 FLOPs per multiply-add each
    assert cost.bytes == 4 * (b * h * lq * e + 2 * b * h * lkv * e + b * h * lq * e)
    roof = roofline_figures(trace)
    assert roof.host_time and roof.ops[0].name.startswith("aten::")  # innermost costed op, host time


def test_unknown_gpu_still_reports_achieved_rates():
    peak, why = peak_of("NVIDIA Imaginary X1")
    assert peak is None and "unknown GPU" in why
    from tests.test_trace_synthetic import kineto_trace
    doc = kineto_trace()
    doc["deviceProperties"][0]["name"] = "NVIDIA Imaginary X1"
    doc["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 9,
                               "dur": 11, "args": {"Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}})
    r = analyze(load_trace(doc)).roofline
    (row,) = r.ops  # the gemm kernel [30,50] launched at 12, inside aten::mm [9,21]
    assert r.gpu is None and "unknown GPU" in r.identified
    assert row.tflops == pytest.approx(2 * 64 * 16 * 32 / 20e-6 / 1e12) and row.compute_peak is None


def test_amd_device_named_generically_is_found_by_compute_units(fig):
    trace, f = fig("mi250")
    assert trace.device_name == "AMD Radeon Graphics"
    assert f.roofline.gpu == "MI250 (one GCD)" and "104 CUs" in f.roofline.identified
