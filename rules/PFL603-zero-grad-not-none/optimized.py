"""PFL603 fixed: `zero_grad()` sets the gradients to None; backward writes fresh ones."""

import torch
from torch import nn


def run(batches):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return model[0].weight.detach().clone()
