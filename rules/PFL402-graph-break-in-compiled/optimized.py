"""PFL402 fixed: the scale stays a tensor, so the whole function is one graph."""

import torch


def run(x, w):
    torch._dynamo.reset()  # graph breaks happen while dynamo traces: measure a cold start, as a new process

    @torch.compile(backend="eager")
    def normalize(x, w):
        y = x @ w
        scale = y.abs().max()
        return y / scale

    return normalize(x, w)
