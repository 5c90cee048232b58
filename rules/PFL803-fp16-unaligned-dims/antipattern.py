"""PFL803: a language-model head with a vocabulary of 1001 under fp16 autocast (on CUDA when there is
one; without CUDA, autocast is disabled and it runs in FP32)."""

import torch
from torch import nn

VOCAB = 1001


def make_inputs():
    torch.manual_seed(0)
    weight = torch.randn(VOCAB, 64) * 0.1
    hidden = torch.randn(32, 64)
    targets = torch.randint(0, VOCAB, (32,))
    return weight, hidden, targets


def run(weight, hidden, targets):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    head = nn.Linear(64, 1001, bias=False)  # expect: PFL803
    with torch.no_grad():
        head.weight.copy_(weight)
    head.to(device)
    with torch.autocast("cuda", dtype=torch.float16, enabled=device == "cuda"):
        logits = head(hidden.to(device))
    return nn.functional.cross_entropy(logits.float(), targets.to(device)).cpu()
