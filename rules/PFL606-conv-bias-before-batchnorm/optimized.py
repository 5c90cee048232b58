"""PFL606 fixed: `bias=False`; BatchNorm's own shift (beta) does the job."""

import torch
from torch import nn


def run(batches):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return model(batches[0][0]).detach()
