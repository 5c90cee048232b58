"""PFL502 fixed: the same two workers serve all three epochs."""

import torch
from torch.utils.data import DataLoader


def run(dataset):
    loader = DataLoader(dataset, batch_size=16, num_workers=2, persistent_workers=True)
    total = torch.zeros(8)
    for epoch in range(3):
        for (x,) in loader:
            total += x.sum(0) * (epoch + 1)
    return total
