"""PFL401 fixed: the same model compiled with Inductor; GELU and LayerNorm run as one generated kernel.

Inductor compiles C++ on the first run (about 10-15 s with a cold cache, about 1 s warm)."""

import torch
from torch import nn


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def run(xs):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 1)).to(DEVICE)
    model.compile()  # in place: still an nn.Sequential, its state_dict keys unchanged
    with torch.no_grad():
        outs = [model(x.to(DEVICE)) for x in xs]
    return torch.cat(outs)
