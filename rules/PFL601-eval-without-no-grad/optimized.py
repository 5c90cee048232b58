"""PFL601 fixed: inference mode frees each activation as soon as the next layer has read it."""

import torch


@torch.inference_mode()
def evaluate(model, batches):
    model.eval()
    preds = []
    for x in batches:
        preds.append(model(x).argmax(1))
    return torch.cat(preds)


def run(model, batches):
    return evaluate(model, batches)
