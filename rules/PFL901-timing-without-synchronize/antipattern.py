"""PFL901: timing a model on CUDA (when there is one) without waiting for the GPU before reading the
clock. `TIMES` keeps the measurements; `run` returns the model's output."""

import time

import torch
from torch import nn

TIMES = []


def make_inputs():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
    return model, torch.randn(32, 64)


def run(model, x):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    x = x.to(device)
    with torch.no_grad():
        out = model(x)  # warm-up
        start = time.perf_counter()
        for _ in range(10):
            out = model(x)
        TIMES.append(time.perf_counter() - start)  # expect: PFL901
    return out.cpu()
