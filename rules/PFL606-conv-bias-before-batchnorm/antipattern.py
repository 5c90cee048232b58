"""PFL606: a convolution's bias right before BatchNorm: cancelled by the mean subtraction, yet it is
added, reduced in backward and updated by the optimizer every step."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    return [(torch.randn(4, 3, 8, 8), torch.randn(4, 8, 8, 8)) for _ in range(5)],


def run(batches):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())  # expect: PFL606
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return model(batches[0][0]).detach()
