"""A data-parallel scaling model: how much of N ranks' throughput survives communication.

Weak scaling (every rank keeps its per-rank batch), so one rank's step time is the compute time and N
ranks add the communication that computation does not hide:

    compute    = step FLOPs / device throughput
    comm       = sum over collectives of  f_kind(N) * bytes / bandwidth  +  steps_kind(N) * latency
    exposed    = comm - min(overlap * comm, compute)
    efficiency = throughput(N) / (N * throughput(1)) = compute / (compute + exposed)

with the bandwidth-optimal ring costs (bytes = what one rank passes in, as NCCL's "In msg nelems"):

    all_reduce      2(N-1)/N * bytes / bw + 2(N-1) * latency   (reduce-scatter then all-gather)
    reduce_scatter   (N-1)/N * bytes / bw +  (N-1) * latency
    all_to_all       (N-1)/N * bytes / bw +  (N-1) * latency
    all_gather        (N-1)  * bytes / bw +  (N-1) * latency   (each rank receives N-1 inputs)
    broadcast                  bytes / bw +  (N-1) * latency   (pipelined ring)

`overlap` is the measured share of communication time hidden behind computation (`comm_overlap`).
It is a model: it ignores stragglers, topology (it assumes one link speed for every hop), protocol
switches at small sizes and contention. tests/scaling_fit.py checks it against real traces (read with
perflint.trace). No torch import: `perflint trace` and the pytest plugin both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

# kind -> (bandwidth factor f(N), latency steps s(N))
COSTS = {
    "all_reduce": (lambda n: 2 * (n - 1) / n, lambda n: 2 * (n - 1)),
    "reduce_scatter": (lambda n: (n - 1) / n, lambda n: n - 1),
    "all_to_all": (lambda n: (n - 1) / n, lambda n: n - 1),
    "all_gather": (lambda n: n - 1, lambda n: n - 1),
    "broadcast": (lambda n: 1.0, lambda n: n - 1),
}
KINDS = tuple(COSTS)
_ALIASES = {"allreduce": "all_reduce", "allgather": "all_gather", "alltoall": "all_to_all",
            "reducescatter": "reduce_scatter", "sendrecv": "all_to_all", "bcast": "broadcast"}


def kind_of(name: str) -> str | None:
    """The model's kind for a collective name ("allreduce", "c10d::allreduce_", "gloo:all_reduce",
    "nccl:all_to_all", "_allgather_base_", ...); None for point-to-point and barriers."""
    key = name.rsplit(":", 1)[-1].strip("_").lower()
    key = key.removesuffix("_base").removesuffix("_coalesced").removesuffix("_into_tensor").removesuffix("_tensor")
    if key in COSTS:
        return key
    return _ALIASES.get(key.replace("_", ""))


def collective_seconds(kind: str, nbytes: float, world_size: int, link_gbps: float, latency_us: float,
                       count: int = 1) -> float:
    """Time of `count` collectives of one kind that pass `nbytes` in total."""
    if world_size < 2 or not count:
        return 0.0
    factor, steps = COSTS[kind]
    return factor(world_size) * nbytes / (link_gbps * 1e9 / 8) + count * steps(world_size) * latency_us * 1e-6


@dataclass(frozen=True)
class Prediction:
    world_size: int
    compute_s: float
    comm_s: float
    exposed_s: float
    efficiency: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def predict(flops: float, collectives: Mapping[str, tuple[int, float]], world_size: int, link_gbps: float,
            device_tflops: float, overlap: float = 0.0, latency_us: float = 5.0) -> Prediction:
    """Predicted per-step figures at `world_size` ranks.

    `collectives` maps a kind to (count, total bytes) per step as one rank issues them; unknown kinds
    raise, so a new collective cannot be silently free. `link_gbps` is gigabits per second per rank."""
    if link_gbps <= 0 or device_tflops <= 0:
        raise ValueError("link_gbps and device_tflops must be positive")
    compute = flops / (device_tflops * 1e12)
    comm = sum(collective_seconds(kind, nbytes, world_size, link_gbps, latency_us, count)
               for kind, (count, nbytes) in collectives.items())
    exposed = comm - min(max(0.0, min(overlap, 1.0)) * comm, compute)
    total = compute + exposed
    return Prediction(world_size, compute, comm, exposed, compute / total if total > 0 else 1.0)
