"""PFL302 fixed: the pieces go into a list and are concatenated once."""

import torch


def run(model, batches):
    chunks = []
    with torch.no_grad():
        for x in batches:
            chunks.append(model(x))
    return torch.cat(chunks)
