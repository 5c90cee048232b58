"""PFL203: loader batches copied to the device with a blocking copy (GPU-only cost)."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_inputs():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(128, 16), torch.randn(128, 1))
    loader = DataLoader(data, batch_size=16, pin_memory=torch.cuda.is_available())
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return nn.Linear(16, 1).to(device), loader, device


def run(model, loader, device):
    total = torch.zeros((), device=device)
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)  # expect: PFL203
            total = total + nn.functional.mse_loss(model(x), y)
    return total.cpu()
