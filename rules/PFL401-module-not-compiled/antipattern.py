"""PFL401: a training loop runs a model built here in eager mode, one kernel per op, forward and backward."""

import torch
from torch import nn


def make_inputs():
    torch.manual_seed(0)
    return ([torch.randn(8, 16) for _ in range(10)],)


# The code's intended run is on a GPU; these tests run it on the CPU.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def run(xs):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 1)).to(DEVICE)  # expect: PFL401
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for x in xs:
        loss = model(x.to(DEVICE)).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)
