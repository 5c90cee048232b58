"""PFL607: `foreach=False` updates the parameters one tensor at a time: several ops per parameter."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    return [(torch.randn(16, 32), torch.randn(16, 1)) for _ in range(5)],


def run(batches):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)  # expect: PFL607
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return model[0].weight.detach().clone()
