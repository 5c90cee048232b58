"""PFL803 fixed: the head is padded to 1024 outputs (a multiple of 64); the extra logits are dropped."""

import torch
from torch import nn

VOCAB = 1001


def run(weight, hidden, targets):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    head = nn.Linear(64, 1024, bias=False)
    with torch.no_grad():
        head.weight.zero_()
        head.weight[:VOCAB].copy_(weight)
    head.to(device)
    with torch.autocast("cuda", dtype=torch.float16, enabled=device == "cuda"):
        logits = head(hidden.to(device))[:, :VOCAB]
    return nn.functional.cross_entropy(logits.float(), targets.to(device)).cpu()
