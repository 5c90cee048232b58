"""How code moves tensors between host and device: `.to(...)`, `.cuda()`, `.cpu()`, `.type_as(t)`, and where
each call sends its receiver (read with the program model, so `.to(device)` knows what `device` is)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from perflint.model.names import is_false, is_true, keyword, method_name, positional
from perflint.model.program import FileModel
from perflint.model.values import ON_DEVICE, ON_HOST, TENSOR, Values


@dataclass(frozen=True)
class Move:
    """What a `.to(...)`, `.cuda(...)`, `.cpu(...)` or `.type_as(...)` call moves its receiver to."""

    call: cst.Call
    device: str | None  # "cpu", or "cuda" for any accelerator; None when the code does not say
    expr: cst.BaseExpression | None  # the device argument as written (None for `.cuda()` / `.cpu()`)
    non_blocking: bool
    plain: bool  # `.to(dev)`, `.to(device=dev)`, `.cuda()`: one device argument and nothing else
    why: tuple = ()  # evidence for the destination

    @property
    def to_device(self) -> bool:
        return self.device is not None and self.device != "cpu"


def device_move(model: FileModel, call: cst.Call) -> Move | None:
    """For `x.to(dev, ...)`, `x.cuda(...)`, `x.cpu(...)`, `x.type_as(t)`: where it moves x; None when the
    call is not a device move (`x.to(torch.float16)`, `x.to(unknown)`) or not one of these methods."""
    method = method_name(call)
    nb = keyword(call, "non_blocking")
    non_blocking = nb is not None and not is_false(nb.value)
    if method in ("cuda", "cpu"):
        first = positional(call, 0) or keyword(call, "device")
        second = positional(call, 1)
        if method == "cuda" and second is not None and not is_false(second.value):
            non_blocking = True  # x.cuda(dev, True)
        return Move(call, method, first.value if first is not None else None, non_blocking, plain=not call.args,
                    why=(("moved by `{}`", call),))
    values = Values.of(model)
    if method == "type_as" and len(call.args) == 1:
        other = values.value(call.args[0].value)
        if other.kind in (TENSOR, None) and other.device is not None:  # None: something known to be moved
            return Move(call, "cpu" if other.device == ON_HOST else "cuda", None, False, plain=False,
                        why=(("moved by `{}`", call), *other.why[:1]))
        if other.kind == TENSOR and model.facts.device_work:
            return Move(call, "cuda", None, False, plain=False, why=_follows(call, call.args[0].value))
        return None
    if method != "to":
        return None
    arg = keyword(call, "device") or positional(call, 0)
    if arg is None:
        return None
    side, why = values.device_of(arg.value)
    if side is None and type(arg.value) is cst.Attribute and arg.value.attr.value == "device" \
            and model.facts.device_work:
        owner = values.value(arg.value.value)
        if owner.kind in (TENSOR, None) and owner.device != ON_HOST:
            side, why = ON_DEVICE, _follows(call, arg.value.value)[1:]  # `.to(timesteps.device)` of an input
    if side is None:
        other = values.value(arg.value)  # `x.to(y)`: to y's device (and dtype)
        if other.kind is None and other.device is None and type(arg.value) is cst.Name \
                and model.facts.device_work and "type" not in arg.value.value.lower() and len(call.args) == 1:
            return Move(call, "cuda", arg.value, non_blocking, plain=True, why=_follows(call, arg.value))
        if other.kind != TENSOR or other.device is None:
            return None
        side, why = other.device, other.why
    if positional(call, 1) is not None and is_true(positional(call, 1).value) and arg is positional(call, 0):
        non_blocking = True  # x.to(dev, True) is x.to(dev, non_blocking=True)
    return Move(call, "cpu" if side == ON_HOST else "cuda", arg.value, non_blocking, plain=len(call.args) == 1,
                why=(("moved by `{}`", call), *why[:1]))


def _follows(call: cst.Call, tensor: cst.BaseExpression) -> tuple:
    """Evidence for a move to wherever a tensor of unknown device lives (an input of `forward`, a batch): in a
    program that puts its work on an accelerator, that is the device."""
    return (("moved by `{}`", call), ("to the device of `{}`, where this program's tensors run", tensor))


def moves_to_device(model: FileModel) -> list[Move]:
    """Every call of the file that moves its receiver to an accelerator, in file order (computed once)."""
    found = model._memo.get("moves-to-device")
    if found is None:
        found = model._memo["moves-to-device"] = []
        for call in model.calls:
            if method_name(call) in ("to", "cuda", "type_as") and model.qualname(call.func) is None:
                move = device_move(model, call)
                if move is not None and move.to_device:
                    found.append(move)
    return found


def on_host(model: FileModel, node: cst.CSTNode) -> bool:
    v = Values.of(model).value(node)
    return v.kind == TENSOR and v.device == ON_HOST


__all__ = ["Move", "device_move", "moves_to_device", "on_host", "ON_DEVICE"]
