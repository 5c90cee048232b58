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
switches at small sizes and contention. `fit()` and `trace_collectives()` check it against real
traces. No torch import: `perflint trace` and the pytest plugin both use it.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from typing import Iterable, Mapping

# kind -> (bandwidth factor f(N), latency steps s(N))
_COSTS = {
    "all_reduce": (lambda n: 2 * (n - 1) / n, lambda n: 2 * (n - 1)),
    "reduce_scatter": (lambda n: (n - 1) / n, lambda n: n - 1),
    "all_to_all": (lambda n: (n - 1) / n, lambda n: n - 1),
    "all_gather": (lambda n: n - 1, lambda n: n - 1),
    "broadcast": (lambda n: 1.0, lambda n: n - 1),
}
KINDS = tuple(_COSTS)
_ALIASES = {"allreduce": "all_reduce", "allgather": "all_gather", "alltoall": "all_to_all",
            "reducescatter": "reduce_scatter", "sendrecv": "all_to_all", "bcast": "broadcast"}


def kind_of(name: str) -> str | None:
    """The model's kind for a collective name ("allreduce", "c10d::allreduce_", "gloo:all_reduce",
    "nccl:all_to_all", "_allgather_base_", ...); None for point-to-point and barriers."""
    key = name.rsplit(":", 1)[-1].strip("_").lower()
    key = key.removesuffix("_base").removesuffix("_coalesced").removesuffix("_into_tensor").removesuffix("_tensor")
    if key in _COSTS:
        return key
    return _ALIASES.get(key.replace("_", ""))


def collective_seconds(kind: str, nbytes: float, world_size: int, link_gbps: float, latency_us: float,
                       count: int = 1) -> float:
    """Time of `count` collectives of one kind that pass `nbytes` in total."""
    if world_size < 2 or not count:
        return 0.0
    factor, steps = _COSTS[kind]
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


# -- checking the model against real multi-rank traces -------------------------------------------------
_DTYPE_BYTES = {"float": 4, "float32": 4, "c10::float": 4, "double": 8, "float64": 8, "c10::half": 2,
                "half": 2, "float16": 2, "c10::bfloat16": 2, "bfloat16": 2, "long int": 8, "long": 8,
                "int64": 8, "int": 4, "int32": 4, "short int": 2, "signed char": 1, "unsigned char": 1,
                "bool": 1, "int8": 1, "uint8": 1}


@dataclass(frozen=True)
class Collective:
    """One collective on one rank, as a trace records it: its device time and its size."""

    rank: int
    world_size: int
    kind: str
    index: int  # k-th of its kind on this rank
    nbytes: int
    dur_us: float


def _nbytes(dims, types) -> int | None:
    try:
        n = 1
        for d in dims[0]:
            n *= int(d)
        return n * _DTYPE_BYTES[str(types[0]).lower()]
    except (IndexError, KeyError, TypeError, ValueError):
        return None


def trace_collectives(path: str) -> list[Collective]:
    """Collectives of one Kineto trace: NCCL kernels in device order, sized from their own args
    ("In msg nelems", newer Kineto) or else from the k-th `nccl:<kind>` host annotation of the same
    kind (its "Input Dims"; NCCL runs one stream's collectives in issue order). Unsized ones are left out."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    info = doc.get("distributedInfo") or {}
    rank, world = int(info.get("rank", 0)), int(info.get("world_size", 1))
    events = doc.get("traceEvents", [])
    sizes: dict[str, list[int | None]] = {}
    for e in sorted((e for e in events if e.get("cat") == "user_annotation"
                     and str(e.get("name", "")).startswith("nccl:")), key=lambda e: e.get("ts", 0)):
        kind = kind_of(e["name"])
        if kind:
            args = e.get("args", {})
            sizes.setdefault(kind, []).append(_nbytes(args.get("Input Dims"), args.get("Input type")))
    out: list[Collective] = []
    seen: dict[str, int] = {}
    for e in sorted((e for e in events if e.get("cat") == "kernel" and str(e.get("name", "")).startswith("nccl")),
                    key=lambda e: e.get("ts", 0)):
        args = e.get("args", {})
        kind = kind_of(args.get("Collective name") or e["name"].split("_")[1])
        if kind is None:
            continue
        i = seen[kind] = seen.get(kind, -1) + 1
        nbytes = None
        if "In msg nelems" in args:
            nbytes = _nbytes([[args["In msg nelems"]]], [args.get("dtype", "")])
            world = int(args.get("Group size", world))
        elif i < len(sizes.get(kind, [])):
            nbytes = sizes[kind][i]
        if nbytes is not None:
            out.append(Collective(rank, world, kind, i, nbytes, float(e["dur"])))
    return out


def transfer_times(collectives: Iterable[Collective]) -> list[Collective]:
    """Per (kind, index), the shortest duration over the ranks: the last rank to arrive waits for no one,
    so its time is the transfer (perflint.trace.ranks uses the same rule)."""
    best: dict[tuple[str, int], Collective] = {}
    for c in collectives:
        key = (c.kind, c.index)
        if key not in best or c.dur_us < best[key].dur_us:
            best[key] = c
    return [best[k] for k in sorted(best)]


@dataclass(frozen=True)
class Fit:
    """Bandwidth and latency that best explain measured collective times (least squares)."""

    link_gbps: float | None
    latency_us: float
    errors: list[float]  # per collective, (predicted - measured) / measured


def fit(collectives: list[Collective]) -> Fit:
    """Least-squares fit of the model's two hardware numbers to measured times: t = x / bw + s * latency,
    with x = f_kind(N) * bytes and s = steps_kind(N)."""
    rows = []
    for c in collectives:
        factor, steps = _COSTS[c.kind]
        rows.append((factor(c.world_size) * c.nbytes, steps(c.world_size), c.dur_us * 1e-6))
    sxx = sum(x * x for x, _, _ in rows)
    sss = sum(s * s for _, s, _ in rows)
    sxs = sum(x * s for x, s, _ in rows)
    sxy = sum(x * y for x, _, y in rows)
    ssy = sum(s * y for _, s, y in rows)
    det = sxx * sss - sxs * sxs
    if len(rows) < 2 or det <= 0:
        raise ValueError("need collectives of at least two different sizes to fit bandwidth and latency")
    inv_bw = (sxy * sss - sxs * ssy) / det  # seconds per byte
    lat = (sxx * ssy - sxs * sxy) / det
    if inv_bw <= 0 or lat < 0:  # a non-physical fit: keep the other term at zero and refit the one left
        inv_bw, lat = (max(sxy / sxx, 1e-18), 0.0) if inv_bw > 0 else (0.0, ssy / sss)
    gbps = 8 / inv_bw / 1e9 if inv_bw > 0 else None
    errors = [((x * inv_bw + s * lat) - y) / y for x, s, y in rows]
    return Fit(gbps, lat * 1e6, errors)
