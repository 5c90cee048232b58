"""PFL703: DDP with `find_unused_parameters=True` on a model whose parameters are all used.
One gloo rank, so it runs anywhere."""

import warnings
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from pytest_perf.distributed import single_rank_group


def make_inputs():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
    batches = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(8)]
    return net, batches


def run(net, batches):
    with single_rank_group(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DDP itself warns that the flag found nothing
        model = DistributedDataParallel(net, find_unused_parameters=True)  # expect: PFL703
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for x, y in batches:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    return net[0].weight.detach().clone()
