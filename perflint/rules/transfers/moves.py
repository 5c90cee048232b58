"""How code moves tensors between host and device: `.to(...)`, `.cuda()`, `.cpu()` and what they name."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted, keyword, method_name, positional
from perflint.model.program import FileModel

@dataclass(frozen=True)
class Move:
    """What a `.to(...)`, `.cuda(...)` or `.cpu(...)` call moves its receiver to."""

    device: str | None  # "cpu", "cuda", ... when it can be read off the code; else None
    expr: cst.BaseExpression | None  # the device argument as written (None for `.cuda()` / `.cpu()`)
    non_blocking: bool
    plain: bool  # `.to(dev)`, `.to(device=dev)`, `.cuda()`: one device argument and nothing else


def device_literal(model: FileModel, expr: cst.BaseExpression) -> str | None:
    """"cpu" for `"cpu"`, `"cpu:0"`, `torch.device("cpu")`; "cuda" for `"cuda:1"`; None otherwise."""
    if isinstance(expr, cst.Call) and model.is_torch(expr.func, "torch.device") and expr.args:
        expr = expr.args[0].value
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        kind = value.split(":")[0] if isinstance(value, str) else None
        return kind if kind in api.DEVICE_TYPES else None
    return None


def looks_like_device(model: FileModel, expr: cst.BaseExpression) -> bool:
    """A device literal, `torch.device(...)`, an int (a GPU index), or a name such as `device`,
    `self.device`, `args.gpu`, `x.device`, `local_rank`. Names that could be a dtype or a tensor are not."""
    if device_literal(model, expr) is not None or isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Call):
        return model.is_torch(expr.func, "torch.device")
    name = dotted(expr)
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return last in api.DEVICE_WORDS or last.endswith(("_device", "_dev", "_gpu")) or last.startswith("device_")


def device_move(model: FileModel, call: cst.Call) -> Move | None:
    """For `x.to(dev, ...)`, `x.cuda(...)`, `x.cpu(...)`: where it moves x; None when the call is not a
    device move (`x.to(torch.float16)`, `x.to(other)`, `x.to(unknown)`) or not one of these methods."""
    method = method_name(call)
    nb = keyword(call, "non_blocking")
    non_blocking = nb is not None and not (isinstance(nb.value, cst.Name) and nb.value.value == "False")
    if method in ("cuda", "cpu"):
        first = positional(call, 0) or keyword(call, "device")
        expr = first.value if first is not None else None
        second = positional(call, 1)
        if method == "cuda" and second is not None and not (isinstance(second.value, cst.Name)
                                                             and second.value.value == "False"):
            non_blocking = True  # x.cuda(dev, True)
        return Move(method, expr, non_blocking, plain=not call.args)
    if method != "to":
        return None
    arg = keyword(call, "device") or positional(call, 0)
    if arg is None or not looks_like_device(model, arg.value):
        return None
    if positional(call, 1) is not None and isinstance(positional(call, 1).value, cst.Name) \
            and positional(call, 1).value.value == "True" and arg is positional(call, 0):
        non_blocking = True  # x.to(dev, True) is x.to(dev, non_blocking=True)
    return Move(device_literal(model, arg.value), arg.value, non_blocking, plain=len(call.args) == 1)
