"""PFL601: evaluation with autograd on keeps every layer's activations alive until the output is dropped."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return model, [torch.randn(128, 64) for _ in range(4)]


def evaluate(model, batches):
    model.eval()
    preds = []
    for x in batches:
        preds.append(model(x).argmax(1))  # expect: PFL601
    return torch.cat(preds)


def run(model, batches):
    return evaluate(model, batches)
