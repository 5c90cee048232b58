"""PFL501: the training process indexes and collates every batch itself, between steps."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def make_inputs():
    torch.manual_seed(0)
    return (TensorDataset(torch.randn(256, 16), torch.randn(256, 1)),)


def run(dataset):
    torch.manual_seed(1)
    model = nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(dataset, batch_size=32)  # expect: PFL501
    total = torch.zeros(())
    for x, y in loader:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total
