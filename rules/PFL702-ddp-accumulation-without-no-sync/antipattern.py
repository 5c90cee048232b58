"""PFL702: gradient accumulation (4 micro-steps per update, 4 updates) under DDP without `no_sync()`:
every micro-step all-reduces the gradients. One gloo rank, so it runs anywhere."""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from pytest_perf.distributed import single_rank_group


def make_inputs():
    torch.manual_seed(0)
    net = nn.Linear(16, 1)
    batches = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(16)]
    return net, batches


def run(net, batches, accum=4):
    with single_rank_group():
        model = DistributedDataParallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for i, (x, y) in enumerate(batches):
            loss = nn.functional.mse_loss(model(x), y) / accum
            loss.backward()  # expect: PFL702
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
    return net.weight.detach().clone()
