"""DistributedDataParallel constructions."""

from __future__ import annotations

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.program import FileModel


def is_ddp(model: FileModel, call: cst.Call) -> bool:
    """`DistributedDataParallel(...)` through any import alias (`DDP(model)`)."""
    return model.call_name(call) in api.DDP
