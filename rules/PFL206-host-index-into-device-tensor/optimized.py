"""PFL206 fixed: the same permutation made once as a device tensor; gathers need no host index."""

import numpy as np
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def run(b_obs: torch.Tensor, b_returns: torch.Tensor, value: torch.nn.Module):
    b_inds = torch.as_tensor(np.random.default_rng(0).permutation(256), device=DEVICE)
    total = torch.zeros((), device=DEVICE)
    for start in range(0, len(b_inds), 32):
        mb_inds = b_inds[start:start + 32]
        loss = (value(b_obs[mb_inds]).squeeze(1) - b_returns[mb_inds]).square().mean()
        loss.backward()  # a PPO update step per minibatch
        total = total + loss.detach()
    return total
