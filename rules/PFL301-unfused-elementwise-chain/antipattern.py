"""PFL301: the tanh approximation of GELU written out by hand in `forward`: one kernel per elementwise op."""

import math

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.linear = linear

    def forward(self, x):
        h = self.linear(x)
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * h * (1.0 + torch.tanh(c * (h + 0.044715 * torch.pow(h, 3.0))))  # expect: PFL301


def make_inputs():
    torch.manual_seed(0)
    return nn.Linear(64, 64), torch.randn(128, 64)


def run(linear, x):
    with torch.no_grad():
        return Block(linear)(x)
