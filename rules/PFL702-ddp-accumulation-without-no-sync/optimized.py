"""PFL702 fixed: the first accum-1 micro-steps run forward and backward under `no_sync()`, so only the
last one all-reduces."""

from contextlib import contextmanager, nullcontext

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


def run(net, batches, accum=4):
    with single_process_group():
        model = DistributedDataParallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i, (x, y) in enumerate(batches):
            sync = (i + 1) % accum == 0
            with nullcontext() if sync else model.no_sync():
                loss = nn.functional.mse_loss(model(x), y) / accum
                loss.backward()
            if sync:
                opt.step()
                opt.zero_grad()
    return net.weight.detach().clone()
