"""PFL902: timing the first calls of a model: the one-time costs of the first call are in the time.
`TIMES` keeps the measurements; `run` returns the model's output."""

import time

import torch
from torch import nn

TIMES = []


def make_inputs():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
    return model, torch.randn(32, 64)


def run(model, x):
    with torch.no_grad():
        start = time.perf_counter()  # expect: PFL902
        for _ in range(10):
            out = model(x)
        TIMES.append((time.perf_counter() - start) / 10)
    return out
