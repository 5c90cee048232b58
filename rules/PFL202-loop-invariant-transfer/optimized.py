"""PFL202 fixed: the weights are moved once, before the loop."""

import torch
import torch.nn.functional as F


def run(class_weights, batches, device):
    weights = class_weights.to(device)
    total = torch.zeros((), device=device)
    for logits, labels in batches:
        total = total + F.cross_entropy(logits, labels, weight=weights)
    return total
