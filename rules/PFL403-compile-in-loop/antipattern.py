"""PFL403: a lambda is compiled in every iteration; its captured scale changes, so dynamo traces again."""

import torch


def make_inputs():
    torch.manual_seed(0)
    return torch.randn(16), [0.5, 0.25, 0.125, 0.0625]


def run(x, scales):
    torch._dynamo.reset()  # recompiles happen while dynamo traces: measure a cold start, as a new process
    out = torch.zeros(16)
    for s in scales:
        f = torch.compile(lambda t: torch.sin(t) * s, backend="eager")  # expect: PFL403
        out = out + f(x)
    return out
