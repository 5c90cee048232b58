"""PFL503: batches from pageable memory are copied to the GPU; each copy blocks the host (GPU-only effect)."""

import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def make_inputs():
    torch.manual_seed(0)
    return (TensorDataset(torch.randn(64, 8), torch.randn(64, 1)),)


def run(dataset):
    loader = DataLoader(dataset, batch_size=16)  # expect: PFL503
    total = torch.zeros((), device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)  # expect: PFL203
        total += (x.sum(1, keepdim=True) * y).sum()
    return total.cpu()
