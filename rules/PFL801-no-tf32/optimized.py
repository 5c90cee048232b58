"""PFL801 fixed: FP32 matmuls may use TF32 tensor cores (on Ampere or newer; no effect on the CPU)."""

import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))  # noqa: PFL401 (this pair is about TF32)


def run(state, batches):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True  # a script sets this once, at the top
    try:
        model = build()
        model.load_state_dict(state)
        model.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for x, y in batches:
            opt.zero_grad()
            nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()
            opt.step()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return model[0].weight.detach().cpu()
