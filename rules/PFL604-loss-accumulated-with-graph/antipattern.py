"""PFL604: a training loop also sums a held-out loss tensor; that loss is never backpropagated, so every
step's graph, with the activations it saved, stays reachable from the total."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    batches = [(torch.randn(64, 32), torch.randn(64, 1)) for _ in range(8)]
    return batches, (torch.randn(64, 32), torch.randn(64, 1))


def run(batches, held_out):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()
    xv, yv = held_out
    held_out_loss = 0.0
    for x, y in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        held_out_loss += loss_fn(model(xv), yv)  # expect: PFL604
    return held_out_loss.detach() / len(batches)
