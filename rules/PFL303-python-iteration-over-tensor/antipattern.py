"""PFL303: an affine transform computed element by element, and a total taken with Python's `sum`."""

import torch


def make_inputs():
    torch.manual_seed(0)
    return torch.randn(64), torch.randn(64), torch.randn(64)


def run(a: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    out = torch.empty(a.shape[0])
    for i in range(a.shape[0]):  # expect: PFL303
        out[i] = a[i] * w[i] + b[i]
    return sum(out)  # expect: PFL303
