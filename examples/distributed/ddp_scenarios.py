"""Data-parallel training loops written the slow way and the fast way, for 2-rank budget tests.

Each function builds a DDP model on the current process group (set up by pytest_perf for
`world_size=N` tests) and runs `updates` optimizer steps of `accum` micro-batches each, calling
`step()` after every optimizer step so per-step budgets see one update at a time.
"""

from contextlib import nullcontext

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TwoHeads(nn.Module):
    """A head that `forward` can skip: with find_unused_parameters=True DDP walks the graph every step."""

    def __init__(self, width=64, unused=False):
        super().__init__()
        self.unused = unused
        self.body = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.head = nn.Linear(width, 1)
        self.aux = nn.Linear(width, 1)  # trained only when not `unused`


    def forward(self, x):
        h = self.body(x)
        return self.head(h) if self.unused else self.head(h) + self.aux(h)


def batches(n, width=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, width, generator=g), torch.randn(8, 1, generator=g)) for _ in range(n)]


def model(unused=False, **ddp_kwargs):
    torch.manual_seed(0)
    return DDP(TwoHeads(unused=unused), **ddp_kwargs)


def train(ddp, data, accum=1, sync="every", step=lambda: None):
    """sync: "every" (all-reduce on every micro-step), "no_sync" (forward and backward of the first
    accum-1 micro-steps under no_sync), "no_sync_backward_only" (only backward under no_sync)."""
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for i, (x, y) in enumerate(data):
        last = (i + 1) % accum == 0
        skip = ddp.no_sync() if sync != "every" and not last else nullcontext()
        with skip if sync == "no_sync" else nullcontext():
            loss = nn.functional.mse_loss(ddp(x), y) / accum
        with skip if sync == "no_sync_backward_only" else nullcontext():
            loss.backward()
        if last:
            opt.step()
            opt.zero_grad()
            step()
