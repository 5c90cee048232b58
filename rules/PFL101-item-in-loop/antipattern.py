"""PFL101: a training loop that reads the loss with `.item()` every step."""

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
    total = 0.0
    for x, y in batches:
        loss = criterion(model(x), y)
        total += loss.item()  # expect: PFL101
    return total / len(batches)
