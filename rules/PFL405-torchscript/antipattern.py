"""PFL405: a TorchScript model: the interpreter dispatches every aten op, nothing is fused on the CPU."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    return ([torch.randn(8, 16) for _ in range(10)],)


def run(xs):
    torch.manual_seed(1)
    model = torch.jit.script(  # expect: PFL405
        nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 1)))
    with torch.no_grad():
        outs = [model(x) for x in xs]
    return torch.cat(outs)
