"""PFL107 fixed: `torch.where` keeps the shape fixed, so the host never waits for a count."""

import torch


class PositiveSum(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0, x, 0).sum()


def run(rows: torch.Tensor):
    model = PositiveSum()
    total = torch.zeros(())
    for x in rows:
        total += model(x)
    return total
