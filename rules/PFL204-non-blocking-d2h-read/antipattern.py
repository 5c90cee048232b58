"""PFL204: predictions copied to the host without blocking, then read before the copy is known to be done."""

import torch


def make_inputs():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return (torch.randn(256, 100, device=device),)


def run(logits):
    host = logits.to("cpu", non_blocking=True)
    return host.argmax(-1)  # expect: PFL204
