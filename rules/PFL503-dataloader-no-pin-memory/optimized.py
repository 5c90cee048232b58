"""PFL503 fixed: the loader pins each batch, and the copy to the GPU is asynchronous (on a CPU-only
machine PyTorch ignores `pin_memory` with a warning)."""

import warnings

import torch
from torch.utils.data import DataLoader

device = "cuda" if torch.cuda.is_available() else "cpu"


def run(dataset):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*pin_memory.*")
        loader = DataLoader(dataset, batch_size=16, pin_memory=True)
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            total += (x.sum(1, keepdim=True) * y).sum()
    return total.cpu()
