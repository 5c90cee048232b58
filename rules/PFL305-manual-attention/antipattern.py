"""PFL305: scaled dot-product attention written by hand."""

import math

import torch


def make_inputs():
    torch.manual_seed(0)
    return torch.randn(2, 4, 64, 32), torch.randn(2, 4, 64, 32), torch.randn(2, 4, 64, 32)


def attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    probs = scores.softmax(dim=-1)
    return probs @ v  # expect: PFL305


def run(q, k, v):
    with torch.no_grad():
        return attention(q, k, v)
