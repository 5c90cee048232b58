"""Which code torch.compile traces."""

from __future__ import annotations

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.program import FileModel


def compile_decorated(model: FileModel, func: cst.FunctionDef) -> bool:
    """Whether a function is decorated with `torch.compile` (bare or called), not TorchScript."""
    for d in func.decorators:
        expr = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
        if model.qualname(expr) in api.TORCH_COMPILE:
            return True
    return False

