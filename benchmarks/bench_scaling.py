"""Measured versus predicted scaling efficiency of DDP (gloo, CPU) at 1 and 2 ranks, in one run.

Weak scaling: every rank trains the same per-rank batch, so efficiency = step time at 1 rank / step time
at 2 ranks (1.0 = perfect). The prediction uses perflint.scaling with inputs measured here, not guessed:
device throughput = the step's FLOPs (torch.utils.flop_counter) / the 1-rank step time, and the link's
bandwidth and latency fitted (`tests/scaling_fit.fit`) to all-reduces of the gradient buffer alone at two
sizes. Overlap is taken as 0 (on a CPU, gloo's reduction and the backward compete for the same cores).
Each world size runs in fresh processes (torch.multiprocessing spawn); runs alternate.

    python benchmarks/bench_scaling.py [--runs 3] [--width 512] [--depth 4] [--batch 64] [--steps 30]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from perflint.scaling import predict  # noqa: E402
from tests.scaling_fit import MeasuredCollective, fit  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, args, out):
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.flop_counter import FlopCounterMode

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    layers = [m for _ in range(args.depth) for m in (nn.Linear(args.width, args.width), nn.ReLU())]
    model = DDP(nn.Sequential(*layers))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.width)

    def step():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()

    for _ in range(5):
        step()
    times = []
    for _ in range(args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    n = sum(p.numel() for p in model.parameters())
    result = {"step_s": statistics.median(times), "grad_bytes": n * 4}
    with FlopCounterMode(display=False) as counter:  # every rank: the step's all-reduce needs them all
        step()
    result["flops"] = counter.get_total_flops()
    if world > 1:  # the link alone: all-reduce the gradient buffer and a 1/16 of it
        for frac in (1, 16):
            buf = torch.zeros(n // frac)
            for _ in range(3):
                dist.all_reduce(buf)
            ts = []
            for _ in range(args.steps):
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(buf)
                ts.append(time.perf_counter() - t0)
            result[f"allreduce_{frac}"] = (buf.numel() * 4, statistics.median(ts))
    if rank == 0:
        out.put(result)
    dist.destroy_process_group()


def run(world: int, args) -> dict:
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    mp.start_processes(_worker, args=(world, _port(), args, out), nprocs=world, join=True, start_method="spawn")
    return out.get(timeout=10)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=30)
    args = p.parse_args()
    rows = []
    for i in range(args.runs):
        one, two = run(1, args), run(2, args)
        measured = one["step_s"] / two["step_s"]
        sizes = [two["allreduce_1"], two["allreduce_16"]]
        link = fit([MeasuredCollective(0, 2, "all_reduce", k, int(b), t * 1e6) for k, (b, t) in enumerate(sizes)])
        tflops = one["flops"] / one["step_s"] / 1e12
        pred = predict(one["flops"], {"all_reduce": (1, one["grad_bytes"])}, 2, link.link_gbps or 1e-9, tflops,
                       overlap=0.0, latency_us=link.latency_us)
        rows.append((measured, pred.efficiency))
        print(f"run {i + 1}: step 1 rank {one['step_s'] * 1e3:.2f} ms, 2 ranks {two['step_s'] * 1e3:.2f} ms; "
              f"measured efficiency {measured:.2f}; predicted {pred.efficiency:.2f} "
              f"(compute {pred.compute_s * 1e3:.2f} ms at {tflops * 1e3:.1f} GFLOP/s, all-reduce of "
              f"{one['grad_bytes'] / 1e6:.2f} MB {pred.comm_s * 1e3:.2f} ms; link fit {link.link_gbps:.2f} "
              f"Gbit/s, {link.latency_us:.0f} us per step)", flush=True)
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"median over {args.runs} runs: measured {med[0]:.2f}, predicted {med[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
