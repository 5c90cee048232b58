"""PFL801: an MLP trained in FP32 on CUDA (when there is one) without allowing TF32 matmuls."""

import torch
from torch import nn


def build():
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1))  # noqa: PFL401 (this pair is about TF32)


def make_inputs():
    torch.manual_seed(0)
    state = build().state_dict()
    batches = [(torch.randn(32, 64), torch.randn(32, 1)) for _ in range(5)]
    return state, batches


def run(state, batches):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = build()
    model.load_state_dict(state)
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in batches:
        opt.zero_grad()
        nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()  # expect: PFL801
        opt.step()
    return model[0].weight.detach().cpu()
