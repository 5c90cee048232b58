"""perflint.scaling: the ring model by hand, and its fit to real NCCL traces."""

import glob
import os

import pytest

from perflint.measures.budgets import BudgetError, parse_budget
from perflint.scaling import collective_seconds, kind_of, predict
from tests.scaling_fit import fit, trace_collectives, transfer_times

TRACES = os.environ.get("PERFLINT_TRACES") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "traces")


def test_ring_all_reduce_by_hand():
    # 8 ranks, 100 MB, 100 Gbit/s = 12.5 GB/s: 2*7/8 * 1e8 / 12.5e9 = 14 ms; latency 14 steps x 5 us = 70 us
    assert collective_seconds("all_reduce", 1e8, 8, 100, 5) == pytest.approx(0.014 + 70e-6)
    assert collective_seconds("all_gather", 1e6, 4, 8, 0) == pytest.approx(3 * 1e6 / 1e9)
    assert collective_seconds("broadcast", 1e6, 4, 8, 1) == pytest.approx(1e-3 + 3e-6)
    assert collective_seconds("all_reduce", 1e8, 1, 100, 5) == 0.0


def test_prediction_by_hand():
    # compute 10 ms (1e11 FLOPs at 10 TFLOP/s); comm: 2 ranks, 25 MB over 100 Gbit/s = 2 ms + 2 x 10 us
    p = predict(1e11, {"all_reduce": (1, 25e6)}, world_size=2, link_gbps=100, device_tflops=10, latency_us=10)
    assert (p.compute_s, p.comm_s) == (pytest.approx(0.01), pytest.approx(0.00202))
    assert p.efficiency == pytest.approx(0.01 / 0.01202)
    half = predict(1e11, {"all_reduce": (1, 25e6)}, 2, 100, 10, overlap=0.5, latency_us=10)
    assert half.exposed_s == pytest.approx(0.00101)
    # overlap cannot hide more communication than there is computation
    assert predict(1e9, {"all_reduce": (1, 25e6)}, 2, 100, 10, overlap=1.0, latency_us=0).exposed_s == \
        pytest.approx(0.002 - 1e-4)
    with pytest.raises(KeyError):
        predict(1, {"gossip": (1, 1)}, 2, 1, 1)


@pytest.mark.parametrize("name, kind", [("c10d::allreduce_", "all_reduce"), ("gloo:all_gather", "all_gather"),
                                        ("_allgather_base_", "all_gather"), ("nccl:all_to_all", "all_to_all"),
                                        ("reduce_scatter_tensor_coalesced_", "reduce_scatter"),
                                        ("allreduce", "all_reduce"), ("SendRecv", "all_to_all"), ("barrier", None)])
def test_kind_names(name, kind):
    assert kind_of(name) == kind


def test_budget_keys_validate_the_model():
    b = parse_budget({"min_predicted_efficiency": {"min": 0.8, "world_size": 8, "link_gbps": 100,
                                                   "device_tflops": 50}, "world_size": 2})
    assert b.limits["min_predicted_efficiency"] == 0.8 and b.scaling_model["world_size"] == 8
    with pytest.raises(BudgetError, match="needs 'device_tflops'"):
        parse_budget({"min_predicted_efficiency": {"min": 0.8, "world_size": 8, "link_gbps": 100}})
    with pytest.raises(BudgetError, match="needs the model's assumptions"):
        parse_budget({"min_predicted_efficiency": 0.8})
    with pytest.raises(BudgetError, match="ratio"):
        parse_budget({"min_scaling_efficiency": 1.5})


@pytest.mark.skipif(not os.path.isdir(os.path.join(TRACES, "param_dlrm_8rank")), reason="real traces not here")
def test_model_against_the_8_rank_dlrm_traces():
    """V100 NVLink, 8 ranks: sizes from the nccl:* annotations, transfer = shortest duration over ranks.
    The fitted model explains the three all-reduces within 16% (at ~41 GB/s bus rate, 1.6 us per step)."""
    found = [c for p in sorted(glob.glob(os.path.join(TRACES, "param_dlrm_8rank", "*.json.gz")))
             for c in trace_collectives(p)]
    assert len(found) == 64 and {c.rank for c in found} == set(range(8))
    best = [c for c in transfer_times(found) if c.kind == "all_reduce"]
    assert [(c.nbytes, c.dur_us) for c in best] == [(1576964, 86.0), (448, 20.0), (907840, 69.0)]
    f = fit(best)
    assert 300 < f.link_gbps < 360 and 1.0 < f.latency_us < 2.5
    assert max(abs(e) for e in f.errors) < 0.2


@pytest.mark.skipif(not os.path.isdir(os.path.join(TRACES, "hta")), reason="real traces not here")
def test_model_against_nccl_data_one_rank_of_two():
    """A100, rank 0 of 2 only: durations include waiting for the peer, so the model cannot fit them well
    (errors up to ~60% on the all-reduces): documented, asserted so a change shows."""
    found = trace_collectives(os.path.join(TRACES, "hta", "nccl_parser_config", "nccl_data.json.gz"))
    reduces = [c for c in found if c.kind == "all_reduce"]
    assert len(found) == 21 and len(reduces) == 15 and reduces[0].nbytes == 2049000 * 4
    f = fit(reduces)
    assert max(abs(e) for e in f.errors) > 0.3
