"""PFL206: PPO-style minibatches indexed with a NumPy permutation: every gather turns the index into a
host tensor and copies it to the device (`aten::lift_fresh` + `aten::to` per indexing)."""

import numpy as np
import torch

# The code's intended run is on a GPU; these tests run it on the CPU.
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def make_inputs():
    torch.manual_seed(0)
    return torch.randn(256, 8, device=DEVICE), torch.randn(256, device=DEVICE), torch.nn.Linear(8, 1).to(DEVICE)


def run(b_obs: torch.Tensor, b_returns: torch.Tensor, value: torch.nn.Module):
    b_inds = np.random.default_rng(0).permutation(256)
    total = torch.zeros((), device=DEVICE)
    for start in range(0, len(b_inds), 32):
        mb_inds = b_inds[start:start + 32]  # expect: PFL206
        loss = (value(b_obs[mb_inds]).squeeze(1) - b_returns[mb_inds]).square().mean()
        loss.backward()  # a PPO update step per minibatch
        total = total + loss.detach()
    return total
