"""PFL107: summing the positive entries of each row with boolean-mask indexing."""

import torch


# The code's intended run is on a GPU; these tests run it on the CPU.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_inputs():
    torch.manual_seed(0)
    return (torch.randn(20, 64, device=DEVICE),)


class PositiveSum(torch.nn.Module):
    def forward(self, x):
        positive = x[x > 0]  # expect: PFL107
        return positive.sum()


def run(rows: torch.Tensor):
    model = PositiveSum()
    total = torch.zeros(())
    for x in rows:
        total += model(x)
    return total
