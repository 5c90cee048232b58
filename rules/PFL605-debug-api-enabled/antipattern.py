"""PFL605: training with anomaly detection on: every backward node's output is checked for NaN."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    return [(torch.randn(16, 32), torch.randn(16, 1)) for _ in range(5)],


def run(batches):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torch.autograd.detect_anomaly():  # expect: PFL605
        for x, y in batches:
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
    return model[0].weight.detach().clone()
