"""PFL101 fixed: accumulate the loss on the device, read it once after the loop."""

import torch
from torch import nn


def run(model, batches):
    criterion = nn.MSELoss()
    total = torch.zeros(())
    for x, y in batches:
        loss = criterion(model(x), y)
        total += loss.detach()
    return total.item() / len(batches)
