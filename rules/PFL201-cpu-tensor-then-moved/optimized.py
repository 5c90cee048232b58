"""PFL201 fixed: the factory writes the mask straight into device memory (`device=`): no copy."""

import torch


def run(xs, device):
    total = torch.zeros((), device=device)
    for x in xs:
        mask = torch.ones(x.shape[0], 1, device=device)
        total = total + (x * mask).sum()
    return total
