"""PFL108 fixed: `torch.stack` joins the losses on the device in one op."""

import torch
from torch import nn


def run(model, batches):
    criterion = nn.MSELoss()
    with torch.no_grad():
        losses = torch.stack([criterion(model(x), y) for x, y in batches])
    return losses.mean()
