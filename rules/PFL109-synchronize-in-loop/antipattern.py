"""PFL109: `torch.cuda.synchronize()` after every training step.

On a CPU-only torch build the call raises AssertionError ("Torch not compiled with CUDA enabled")
after pytest_perf has counted it, so it is wrapped in `suppress(AssertionError)` to run anywhere.
"""

from contextlib import suppress

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
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        opt.zero_grad()
        criterion(model(x), y).backward()
        opt.step()
        with suppress(AssertionError):
            torch.cuda.synchronize()  # expect: PFL109
    return model.weight.detach().clone()
