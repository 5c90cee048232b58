"""PFL404 fixed: the learning rate is a 0-d tensor, an ordinary graph input: one compile."""

import torch


def run(p, g):
    torch._dynamo.reset()  # recompiles happen while dynamo traces: measure a cold start, as a new process

    @torch.compile(backend="eager")
    def update(p, g, lr):
        return p - lr * g

    lr = torch.tensor(0.1, dtype=torch.float64)
    for step in range(6):
        p = update(p, g, lr * 0.9 ** step)
    return p
