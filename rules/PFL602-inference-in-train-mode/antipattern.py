"""PFL602: evaluation under no_grad but in training mode: dropout draws and applies a mask per batch.

The classifier is built to be confident (each class has 128 hidden units voting for it), so its
predictions are the same in both modes and the pair can compare them; a real model's would differ."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    hidden = nn.Linear(4, 512, bias=False)
    out = nn.Linear(512, 4, bias=False)
    with torch.no_grad():
        votes = torch.eye(4).repeat(128, 1)  # hidden unit j listens to class j % 4 ...
        hidden.weight.copy_(votes)
        out.weight.copy_(votes.T)  # ... and votes for it
    model = nn.Sequential(hidden, nn.ReLU(), nn.Dropout(0.2), out)
    labels = torch.randint(0, 4, (8, 256))
    batches = [torch.eye(4)[y] + 0.1 * torch.randn(256, 4) for y in labels]
    return model, batches


@torch.no_grad()
def evaluate(model, batches):
    return torch.cat([model(x).argmax(1) for x in batches])  # expect: PFL602


def run(model, batches):
    return evaluate(model, batches)
