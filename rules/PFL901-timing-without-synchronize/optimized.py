"""PFL901 fixed: wait for the queued GPU work before each clock read (a no-op without CUDA)."""

import time

import torch

TIMES = []


def run(model, x):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    x = x.to(device)
    with torch.no_grad():
        out = model(x)  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(10):
            out = model(x)
        if device == "cuda":
            torch.cuda.synchronize()
        TIMES.append(time.perf_counter() - start)
    return out.cpu()
