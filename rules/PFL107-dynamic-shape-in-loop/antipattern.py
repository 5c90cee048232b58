"""PFL107: summing the positive entries of each row with boolean-mask indexing."""

import torch


def make_inputs():
    torch.manual_seed(0)
    return (torch.randn(20, 64),)


def run(rows: torch.Tensor):
    total = torch.zeros(())
    for x in rows:
        positive = x[x > 0]  # expect: PFL107
        total += positive.sum()
    return total
