"""PFL106: logging the loss tensor with an f-string on every step (to a buffer, to keep output quiet)."""

import io

import torch
from torch import nn


# The code's intended run is on a GPU; these tests run it on the CPU.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_inputs():
    torch.manual_seed(0)
    model = nn.Linear(16, 1).to(DEVICE)
    batches = [(torch.randn(8, 16, device=DEVICE), torch.randn(8, 1, device=DEVICE)) for _ in range(20)]
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
