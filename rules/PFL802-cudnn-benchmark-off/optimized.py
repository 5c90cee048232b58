"""PFL802 fixed: the input shape is fixed, so cuDNN may time its algorithms once and keep the fastest
(no effect on the CPU)."""

import torch
from torch import nn


def build():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),  # noqa: PFL401 (this pair is about cuDNN)
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def run(state, batches):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    previous = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True  # a script sets this once, at the top
    try:
        model = build()
        model.load_state_dict(state)
        model.to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for x, y in batches:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
            opt.step()
    finally:
        torch.backends.cudnn.benchmark = previous
    return model[0].weight.detach().cpu()
