import textwrap

import pytest

SYNC_LOOP = textwrap.dedent("""\
    import torch

    def train(model, loader, criterion, device="cuda"):
        total = 0.0
        for x, y in loader:
            loss = criterion(model(x.to(device, non_blocking=True)), y.to(device, non_blocking=True))
            total += loss.item()
        return total
    """)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project folder as the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
