"""PFL802: a small conv net trained on CUDA (when there is one) with fixed input shapes and cuDNN's
heuristic algorithm choice."""

import torch
from torch import nn


def build():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),  # expect: PFL802  # noqa: PFL401
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def make_inputs():
    torch.manual_seed(0)
    state = build().state_dict()
    batches = [(torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))) for _ in range(5)]
    return state, batches


def run(state, batches):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = build()
    model.load_state_dict(state)
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
        opt.step()
    return model[0].weight.detach().cpu()
