"""PFL203 fixed: from pinned memory the copies are queued with `non_blocking=True` and overlap compute."""

import torch
from torch import nn


def run(model, loader, device):
    total = torch.zeros((), device=device)
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            total = total + nn.functional.mse_loss(model(x), y)
    return total.cpu()
