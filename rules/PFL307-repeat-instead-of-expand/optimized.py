"""PFL307 fixed: the multiply broadcasts the size-1 dimension itself; nothing is copied."""


def run(feats, weights):
    return feats * weights.unsqueeze(-1)
