"""A tiny training loop with the hidden syncs perflint and pytest_perf catch (compare train_optimized.py).

Every marked line is harmless on a CPU and stalls a GPU: the host waits for the device to finish before
it can queue more work.
"""

import torch
import torch.nn.functional as F
from torch import nn

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)).to(DEVICE)


def batches(n: int, size: int = 32) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(size, 16, generator=g), torch.randn(size, 1, generator=g)) for _ in range(n)]


def train(model: nn.Module, data, eps: float = 1e-6, step=lambda: None):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total = 0.0
    history = torch.zeros(0)
    logged = []
    for x, y in data:
        x, y = x.to(DEVICE), y.to(DEVICE)  # blocking copies
        weights = torch.ones(len(x), 1).to(DEVICE)  # PFL201: created on the CPU, then moved
        loss = (F.mse_loss(model(x), y, reduction="none") * weights).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()  # PFL101: a sync every step
        if loss < eps:  # PFL105: a tensor as a condition syncs too
            break
        history = torch.cat([history, loss.detach().reshape(1).cpu()])  # PFL302 + PFL103
        logged.append(x.double())  # keeps a float64 copy of every batch: memory grows each step
        step()
    return total / len(data), history


EVAL_SIZES = (32, 24, 16)  # a ragged last batch: each new shape recompiles (PFL404)


def loss_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    loss = F.mse_loss(model(x), y)
    if loss.item() > 1e3:  # PFL402: .item() breaks the compiled graph
        loss = loss.clamp(max=1e3)
    return loss
