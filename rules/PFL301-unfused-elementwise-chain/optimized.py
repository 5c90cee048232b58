"""PFL301 fixed: the fused op computes the same tanh-approximated GELU in one kernel."""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, linear):
        super().__init__()
        self.linear = linear

    def forward(self, x):
        return F.gelu(self.linear(x), approximate="tanh")


def run(linear, x):
    with torch.no_grad():
        return Block(linear)(x)
