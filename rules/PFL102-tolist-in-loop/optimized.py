"""PFL102 fixed: keep the predictions on the device, copy them to a list once after the loop."""

import torch


def run(model, batches):
    chunks = []
    with torch.no_grad():
        for x in batches:
            chunks.append(model(x).argmax(-1))
    return torch.cat(chunks).tolist()
