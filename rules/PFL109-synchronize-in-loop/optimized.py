"""PFL109 fixed: no synchronize in the loop; the host keeps queuing work ahead of the device."""

import torch
from torch import nn


def run(model, batches):
    criterion = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
    return model.weight.detach().clone()
