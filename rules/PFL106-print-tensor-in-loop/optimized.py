"""PFL106 fixed: log every k steps, reading the loss once per log line."""

import io

import torch
from torch import nn


def run(model, batches):
    criterion = nn.MSELoss()
    log = io.StringIO()
    total = torch.zeros(())
    for step, (x, y) in enumerate(batches):
        loss = criterion(model(x), y)
        loss.backward()
        total += loss.detach()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", file=log)
    return total
