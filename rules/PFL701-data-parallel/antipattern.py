"""PFL701: a training loop on `nn.DataParallel`. Without GPUs DataParallel just calls the module, so
this runs on the CPU; the cost (per-step replicate/scatter/gather across GPUs) needs several GPUs."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    net = nn.Linear(16, 1)
    batches = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(10)]
    return net, batches


def run(net, batches):
    model = nn.DataParallel(net)  # expect: PFL701
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return net.weight.detach().clone()
