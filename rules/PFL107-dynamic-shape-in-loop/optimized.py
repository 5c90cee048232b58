"""PFL107 fixed: `torch.where` keeps the shape fixed, so the host never waits for a count."""

import torch


def run(rows: torch.Tensor):
    total = torch.zeros(())
    for x in rows:
        total += torch.where(x > 0, x, 0).sum()
    return total
