"""PFL4xx: torch.compile: models never compiled, graph breaks, recompilation, TorchScript."""
