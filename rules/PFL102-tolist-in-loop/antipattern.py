"""PFL102: collecting predictions with `.tolist()` on every batch."""

import torch
from torch import nn


# The code's intended run is on a GPU; these tests run it on the CPU.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_inputs():
    torch.manual_seed(0)
    model = nn.Linear(16, 4).to(DEVICE)
    batches = [torch.randn(8, 16, device=DEVICE) for _ in range(20)]
    return model, batches


def run(model, batches):
    predictions = []
    with torch.no_grad():
        for x in batches:
            predictions.extend(model(x).argmax(-1).tolist())  # expect: PFL102
    return predictions
