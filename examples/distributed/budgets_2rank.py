"""2-rank budget tests on DDP (gloo on the CPU): each reference pair passes its budget written the fast
way and fails it written the slow way. `pytest --perf-budget examples/distributed/budgets_2rank.py` (named
outside pytest's test_*.py pattern so that `pytest examples/` stays single-process): the cases with SLOW
in their ids fail on purpose. Every region starts after three warm-up updates: DDP's first iterations
also broadcast (it rebuilds its buckets; static_graph learns the graph), which would blur per-step counts."""

import pytest

from ddp_scenarios import batches, model, train

ACCUM = 4
WARMUP, MEASURED = 3, 3  # updates


def warm_then_measure(perf, ddp, data, accum=1, **kwargs):
    train(ddp, data[:WARMUP * accum], accum=accum, **kwargs)  # DDP rebuilds its buckets here
    with perf.region():
        train(ddp, data[WARMUP * accum:], accum=accum, step=perf.step, **kwargs)


@pytest.mark.perf_budget(world_size=2, max_collectives=1, per_step=True)
@pytest.mark.parametrize("sync", ["no_sync", "SLOW-every", "SLOW-no_sync_backward_only"])
def test_one_all_reduce_per_optimizer_step(perf, sync):
    """Gradient accumulation: 4 micro-steps all-reduce 4 times unless forward AND backward run under
    no_sync(); DDP arms the reduction in forward, so no_sync around backward alone gains nothing."""
    warm_then_measure(perf, model(), batches(ACCUM * (WARMUP + MEASURED)), accum=ACCUM, sync=sync.removeprefix("SLOW-"))


@pytest.mark.perf_budget(world_size=2, max_collectives=1, per_step=True)
@pytest.mark.parametrize("graph", ["static", "SLOW-find_unused"])
def test_static_graph(perf, graph):
    """A head that forward skips: find_unused_parameters=True searches the autograd graph every step and
    all-reduces a parameter-usage bitmap besides the gradients (2 collectives per step); static_graph=True
    learns the unused set once (1)."""
    kwargs = {"static_graph": True} if graph == "static" else {"find_unused_parameters": True}
    warm_then_measure(perf, model(unused=True, **kwargs), batches(WARMUP + MEASURED))


@pytest.mark.perf_budget(world_size=2, max_collectives=3)
@pytest.mark.parametrize("bucket_cap_mb", [25, "SLOW-0.001"])
def test_bucket_size(perf, bucket_cap_mb):
    """bucket_cap_mb: the default 25 MB packs this model's gradients into one all-reduce per backward;
    a tiny cap splits them (more collectives, each paying the latency). Overlap changes too, but that is
    a timing: see docs/distributed.md."""
    cap = float(str(bucket_cap_mb).removeprefix("SLOW-"))
    warm_then_measure(perf, model(bucket_cap_mb=cap), batches(WARMUP + MEASURED))


@pytest.mark.perf_budget(world_size=2, max_comm_bytes="102 KB", min_comm_overlap=0.0)
def test_comm_bytes(perf):
    """One fp32 copy of the gradients (8,450 parameters = 33,800 B) per update, 3 updates."""
    warm_then_measure(perf, model(), batches(WARMUP + MEASURED))


@pytest.mark.perf_budget(world_size=2, max_comm_bytes="100 KB")
def test_comm_bytes_SLOW(perf):
    warm_then_measure(perf, model(), batches(WARMUP + MEASURED))


def _model(world_size, device_tflops):
    return {"min": 0.5, "world_size": world_size, "link_gbps": 100, "device_tflops": device_tflops}


@pytest.mark.perf_budget(world_size=2, min_predicted_efficiency=_model(2, 0.001))
def test_predicted_efficiency(perf):
    """The model: this tiny model scales on 2 ranks of 1 GFLOP/s devices (compute dominates)..."""
    warm_then_measure(perf, model(), batches(WARMUP + MEASURED))


@pytest.mark.perf_budget(world_size=2, min_predicted_efficiency=_model(8, 10))
def test_predicted_efficiency_SLOW(perf):
    """... but not on 8 ranks of 10 TFLOP/s devices: the all-reduce's latency terms dominate."""
    warm_then_measure(perf, model(), batches(WARMUP + MEASURED))
