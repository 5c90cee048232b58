"""PFL201: a mask built on the CPU and copied to the device on every step."""

import torch


def make_inputs():
    torch.manual_seed(0)
    xs = [torch.randn(8, 16) for _ in range(20)]
    return xs, torch.device("cpu")


def run(loader, device):
    total = torch.zeros((), device=device)
    for x in loader:  # the batches of a step loop
        mask = torch.ones(x.shape[0], 1).to(device)  # expect: PFL201
        total = total + (x * mask).sum()
    return total
