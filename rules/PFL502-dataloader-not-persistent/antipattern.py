"""PFL502: every epoch starts (and then stops) the loader's two worker processes again."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def make_inputs():
    torch.manual_seed(0)
    return (TensorDataset(torch.randn(64, 8)),)


def run(dataset):
    loader = DataLoader(dataset, batch_size=16, num_workers=2)  # expect: PFL502
    total = torch.zeros(8)
    for epoch in range(3):
        for (x,) in loader:
            total += x.sum(0) * (epoch + 1)
    return total
