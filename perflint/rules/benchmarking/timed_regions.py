"""Regions of code between two clock reads, and what runs in them."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import ClassVar

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted, method_name
from perflint.model.program import FileModel
from perflint.model.values import OPTIMIZER, TENSOR
from perflint.rules.common import FileFactsRule, WholeFile, module_call

_SYNC_METHODS = {"item", "cpu", "tolist", "numpy", "synchronize", "elapsed_time"}


def syncs_host(model: FileModel, call: cst.Call, qual: str | None) -> bool:
    """A call after which the host has waited for the device: `torch.cuda.synchronize()`, an event's or a
    stream's `.synchronize()`, `.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `float(t)` of a tensor."""
    if qual is not None and qual.endswith(".synchronize"):
        return True
    method = method_name(call)
    if method in _SYNC_METHODS:
        return True
    return type(call.func) is cst.Name and call.func.value in ("float", "int", "bool") and len(call.args) == 1 \
        and model.is_tensor(call.args[0].value)


def torch_work(model: FileModel, call: cst.Call, qual: str | None) -> str | None:
    """For a call that queues device work (a torch op, a model's forward, `.backward()`, an optimizer
    step), a name for what it runs (the callee, or the method); else None."""
    method = method_name(call)
    receiver = (dotted(call.func.value) or "").lower() if type(call.func) is cst.Attribute else ""
    if method == "backward" or (method == "step" and "sched" not in receiver
                                and ("optim" in receiver or model.kind(call.func.value) == OPTIMIZER)):
        return dotted(call.func) or method
    name = module_call(model, call)
    if name is not None:
        return name
    if model.kind(call) == TENSOR:
        return qual or dotted(call.func) or method
    return None


# ---- timed regions (PFL9xx) -----------------------------------------------------------------------
CLOCKS = api.CLOCKS
TIMEIT = frozenset({"timeit.timeit", "timeit.repeat", "timeit.Timer"})
_REPEATS = {"range", "trange", "itertools.repeat", "tqdm.trange"}
_BUILTINS = frozenset(dir(builtins))


@dataclass
class TimedRegion:
    """The code between two clock reads in one function."""

    start: cst.Call  # the clock read that opens it
    loops: tuple  # the loops around that read
    before: frozenset  # torch work the function ran before the region (by callee name)
    work: set = field(default_factory=set)  # torch work inside the region
    synced: bool = False  # the host waited for the device somewhere inside
    over_data: bool = False  # it runs a loop over data (a whole training run), not a repeated benchmark
    trains: bool = False  # it calls `.backward()` or an optimizer step
    opaque: bool = False  # it calls a function of this program (`evaluate(model)`), which may wait for the device


class TimedRegionRule(FileFactsRule):
    """Follows regions between two reads of a clock (`time.perf_counter()` ...) in each function, in source
    order. At a read that closes a region which ran torch work, both reads at the same loop depth and no
    loop over data (a loader, a dataset) in between, `closed(end, region, model)` may return a node to
    report; the reports are made at the end of the file, and only if the file mentions CUDA when
    `needs_cuda` is set."""

    needs_cuda: ClassVar[bool] = True

    def replays(self, model: FileModel) -> bool:
        """Only a file that reads a clock has timed regions."""
        return bool(WholeFile.of(model).called & (CLOCKS | TIMEIT))

    def start(self) -> None:
        self.regions: dict[cst.CSTNode, TimedRegion] = {}
        self.ran: dict[cst.CSTNode, set[str]] = {}
        self.pending: list[cst.CSTNode] = []

    def on_call(self, node: cst.Call, model: FileModel, qual: str | None) -> None:
        scope = model.function or model.module
        region = self.regions.get(scope)
        if qual in CLOCKS:
            if region is not None and region.work and not region.over_data and region.loops == tuple(model.loops):
                found = self.closed(node, region, model)
                if found is not None:
                    self.pending.append(found)
            self.regions[scope] = TimedRegion(node, tuple(model.loops), frozenset(self.ran.get(scope, ())))
            return
        work = torch_work(model, node, qual)
        if work is not None:
            self.ran.setdefault(scope, set()).add(work)
        if region is None:
            return
        if syncs_host(model, node, qual):
            region.synced = True
        elif work is None and type(node.func) is cst.Name and qual is None \
                and node.func.value not in _BUILTINS and region.work:
            region.opaque = True
        elif work is not None:
            region.work.add(work)
            region.trains = region.trains or method_name(node) in ("backward", "step")
            for loop in model.loops[len(region.loops):]:
                it = loop.iter if type(loop) is cst.For else None
                if it is not None and not (type(it) is cst.Call and (model.call_name(it) or dotted(it.func)) in _REPEATS):
                    region.over_data = True

    def closed(self, end: cst.Call, region: TimedRegion, model: FileModel) -> cst.CSTNode | None:
        raise NotImplementedError

    def check(self, model: FileModel) -> None:
        if self.cuda or not self.needs_cuda:
            for node in self.pending:
                self.report(model, node)
