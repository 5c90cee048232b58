"""PFL106: logging the loss tensor with an f-string on every step (to a buffer, to keep output quiet)."""

import io

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    model = nn.Linear(16, 1)
    batches = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(20)]
    return model, batches


def run(model, batches):
    criterion = nn.MSELoss()
    log = io.StringIO()
    total = torch.zeros(())
    for step, (x, y) in enumerate(batches):
        loss = criterion(model(x), y)
        loss.backward()
        total += loss.detach()
        print(f"step {step} loss {loss}", file=log)  # expect: PFL106
    return total
