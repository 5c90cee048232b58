"""PFL703 fixed: every parameter gets a gradient, so DDP needs no search for unused ones."""

from contextlib import contextmanager

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


@contextmanager
def single_process_group():
    """A one-rank gloo group for the duration of the block (an existing group is reused, not destroyed)."""
    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def run(net, batches):
    with single_process_group():
        model = DistributedDataParallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for x, y in batches:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    return net[0].weight.detach().clone()
