"""PFL602 fixed: `model.eval()` turns dropout into the identity: no mask, no random numbers."""

import torch


@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    return torch.cat([model(x).argmax(1) for x in batches])


def run(model, batches):
    preds = evaluate(model, batches)
    model.train()  # leave the model as it came
    return preds
