"""PFL404: a compiled update gets the decaying learning rate as a Python float: dynamo recompiles."""

import torch


def make_inputs():
    torch.manual_seed(0)
    return torch.randn(32), torch.randn(32)


def run(p, g):
    torch._dynamo.reset()  # recompiles happen while dynamo traces: measure a cold start, as a new process

    @torch.compile(backend="eager")
    def update(p, g, lr):
        return p - lr * g

    for step in range(6):
        p = update(p, g, 0.1 * 0.9 ** step)  # expect: PFL404
    return p
