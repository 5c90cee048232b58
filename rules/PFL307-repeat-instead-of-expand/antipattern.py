"""PFL307: per-token weights tiled across the feature dimension with `.repeat()` before a multiply."""

import gc

import torch


def make_inputs():
    gc.collect()  # tensors freed by a late garbage collection would lower the measured peak
    torch.manual_seed(0)
    return torch.randn(8, 128, 256), torch.rand(8, 128)


def run(feats, weights):
    return feats * weights.unsqueeze(-1).repeat(1, 1, feats.shape[-1])  # expect: PFL307
