"""PFL402: `.item()` inside a compiled function splits it in two graphs with a host read in between."""

import torch


def make_inputs():
    torch.manual_seed(0)
    return torch.randn(64, 32), torch.randn(32, 32)


def run(x, w):
    torch._dynamo.reset()  # graph breaks happen while dynamo traces: measure a cold start, as a new process

    @torch.compile(backend="eager")
    def normalize(x, w):
        y = x @ w
        scale = y.abs().max().item()  # expect: PFL402
        return y / scale

    return normalize(x, w)
