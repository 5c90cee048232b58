"""PFL201 fixed: the factory writes the mask straight into device memory (`device=`): no copy."""

import torch


def run(loader, device):
    total = torch.zeros((), device=device)
    for x in loader:  # the batches of a step loop
        mask = torch.ones(x.shape[0], 1, device=device)
        total = total + (x * mask).sum()
    return total
