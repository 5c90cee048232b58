"""PFL306: a soft-target cross entropy computed with log(softmax(x))."""

import torch


def make_inputs():
    torch.manual_seed(0)
    return torch.randn(64, 100), torch.softmax(torch.randn(64, 100), dim=-1)


def run(logits, targets):
    log_probs = torch.log(torch.softmax(logits, dim=-1))  # expect: PFL306
    return -(log_probs * targets).sum(-1).mean()
