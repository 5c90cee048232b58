"""PFL702 fixed: the first accum-1 micro-steps run forward and backward under `no_sync()`, so only the
last one all-reduces."""

from contextlib import nullcontext

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from pytest_perf.distributed import single_rank_group


def run(net, batches, accum=4):
    with single_rank_group():
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
