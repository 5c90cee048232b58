"""Shapes that several rules share, so that each rule file states only what is its own."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import ClassVar

import libcst as cst

from perflint.context import (OPTIMIZER, TENSOR, Context, find_all, dotted, eval_like, may_be_tensor, method_name,
                              module_call, trains)
from perflint.rule import Rule


class TensorMethodInHotLoop(Rule):
    """Reports `x.<method>(...)` that runs on every loop iteration when `x` may be a tensor.

    Quiet in compiled code (PFL402 covers graph breaks there) and in logging blocks gated by a step
    condition (`if step % k == 0:`), where the cost is paid once every k steps.
    """

    methods: ClassVar[frozenset[str]]
    proof_metric = "syncs"

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in self.methods and ctx.in_hot_loop \
                and not ctx.in_compiled and may_be_tensor(ctx, func.value) and self.applies(node, ctx):
            self.report(ctx, node, self.message.format(method=func.attr.value))

    def applies(self, node: cst.Call, ctx: Context) -> bool:
        return True


class EvalLoopRule(Rule):
    """Collects, per function, the first module call in a loop of an evaluation function (named like
    `evaluate`, `validate`, `test`, `predict`, `infer`, or one that calls `.eval()`) that does not train;
    `finish` reports those that `keep` accepts once the whole file has been seen.

    Functions named `test_*` (pytest tests) are skipped: their cost is not the product's."""

    requires_no_grad: ClassVar[bool]  # look at calls under no_grad (True) or outside it (False)

    def visit_Module(self, node: cst.Module, ctx: Context) -> None:
        self.candidates: dict[cst.FunctionDef, cst.Call] = {}
        self.file_calls: set[str] = set()  # method names and qualified names of every call in the file
        self.called_without_grad: set[str] = set()  # functions called under no_grad somewhere
        self.no_grad_everywhere = False

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        func = ctx.function
        qual = ctx.call_name(node)
        name = dotted(node.func) or ""
        self.file_calls.add(qual or name.rsplit(".", 1)[-1])
        if qual in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and node.args and \
                isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "False" and \
                (func is None or func.name.value == "main"):
            self.no_grad_everywhere = True
        if ctx.in_no_grad and name:
            self.called_without_grad.add(name.rsplit(".", 1)[-1])
        if func is None or func in self.candidates or not ctx.in_loop or ctx.in_no_grad != self.requires_no_grad:
            return
        fname = func.name.value
        if fname.startswith("test_") or module_call(ctx, node) is None:
            return
        calls = ctx.calls_in(func)
        if not (eval_like(fname) or any(c.endswith(".eval") for c in calls)) or trains(ctx, func):
            return
        if self.applies(node, func, calls, ctx):
            self.candidates[func] = node

    def applies(self, node: cst.Call, func: cst.FunctionDef, calls: set[str], ctx: Context) -> bool:
        return True

    def finish(self, ctx: Context) -> None:
        for func, call in self.candidates.items():
            if self.keep(func, ctx):
                self.report(ctx, call)

    def keep(self, func: cst.FunctionDef, ctx: Context) -> bool:
        return True


# ---- whole-file facts (PFL8xx, PFL9xx) ------------------------------------------------------------
_AUTOCAST = {"torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast",
             "torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"}
_HALF_ATTRS = {"float16", "half", "bfloat16"}


class FileFactsRule(Rule):
    """A rule that decides at the end of a file from what the whole file does: whether it uses CUDA (a
    `.cuda()` call, a `torch.cuda.*` call or a string that says "cuda"), where it first calls `.backward()`,
    whether it runs in fp16/bf16 (autocast, a GradScaler, `.half()`, `torch.float16`), which dotted names it
    assigns (`torch.backends.cudnn.benchmark = True`), which functions it calls, and whether it is a test
    file (`test_*.py`, `*_test.py`, `conftest.py`). Subclasses implement
    `check(ctx)`, may override `start()` (per-file state) and `on_call(node, ctx, qual)`."""

    def visit_Module(self, node: cst.Module, ctx: Context) -> None:
        name = ctx.path.replace("\\", "/").rsplit("/", 1)[-1]
        self.test_file = name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
        self.cuda = False
        self.half = False
        self.backward: cst.Call | None = None
        self.assigned: set[str] = set()
        self.called: set[str] = set()
        self.start()

    def start(self) -> None:
        pass

    def visit_SimpleString(self, node: cst.SimpleString, ctx: Context) -> None:
        if "cuda" in node.value:
            self.cuda = True

    def visit_Attribute(self, node: cst.Attribute, ctx: Context) -> None:
        if node.attr.value in _HALF_ATTRS or node.attr.value in ("autocast", "GradScaler"):
            qual = ctx.qualname(node)
            if qual is not None and (qual in _AUTOCAST or qual.startswith("torch.") and node.attr.value in _HALF_ATTRS
                                     and qual.count(".") == 1):
                self.half = True

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        qual = ctx.call_name(node)
        method = method_name(node)
        if method == "backward" and self.backward is None:
            self.backward = node
        elif method in ("half", "bfloat16"):
            self.half = True
        elif method == "cuda":
            self.cuda = True
        if qual is not None:
            self.called.add(qual)
            if qual.startswith(("torch.cuda.", "torch.accelerator.")):
                self.cuda = True
            if qual in _AUTOCAST:
                self.half = True
        self.on_call(node, ctx, qual)

    def on_call(self, node: cst.Call, ctx: Context, qual: str | None) -> None:
        pass

    def visit_Assign(self, node: cst.Assign, ctx: Context) -> None:
        for target in node.targets:
            qual = ctx.qualname(target.target)
            if qual is not None:
                self.assigned.add(qual)

    def finish(self, ctx: Context) -> None:
        self.check(ctx)

    def check(self, ctx: Context) -> None:
        raise NotImplementedError


_SYNC_METHODS = {"item", "cpu", "tolist", "numpy", "synchronize", "elapsed_time"}


def syncs_host(ctx: Context, call: cst.Call, qual: str | None) -> bool:
    """A call after which the host has waited for the device: `torch.cuda.synchronize()`, an event's or a
    stream's `.synchronize()`, `.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `float(t)` of a tensor."""
    if qual is not None and qual.endswith(".synchronize"):
        return True
    method = method_name(call)
    if method in _SYNC_METHODS:
        return True
    return isinstance(call.func, cst.Name) and call.func.value in ("float", "int", "bool") and len(call.args) == 1 \
        and ctx.is_tensor(call.args[0].value)


def torch_work(ctx: Context, call: cst.Call, qual: str | None) -> str | None:
    """For a call that queues device work (a torch op, a model's forward, `.backward()`, an optimizer
    step), a name for what it runs (the callee, or the method); else None."""
    method = method_name(call)
    receiver = (dotted(call.func.value) or "").lower() if isinstance(call.func, cst.Attribute) else ""
    if method == "backward" or (method == "step" and "sched" not in receiver
                                and ("optim" in receiver or ctx.kind(call.func.value) == OPTIMIZER)):
        return dotted(call.func) or method
    name = module_call(ctx, call)
    if name is not None:
        return name
    if ctx.kind(call) == TENSOR:
        return qual or dotted(call.func) or method
    return None


# ---- distributed (PFL7xx) -------------------------------------------------------------------------
_DDP = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DistributedDataParallel"}


def is_ddp(ctx: Context, call: cst.Call) -> bool:
    """`DistributedDataParallel(...)` through any import alias (`DDP(model)`)."""
    return ctx.call_name(call) in _DDP


def is_data_loader(ctx: Context, call: cst.Call) -> bool:
    qual = ctx.call_name(call)
    return qual is not None and (qual == "torch.utils.data.DataLoader" or qual.endswith(".DataLoader")) \
        and not any(a.star for a in call.args)


def loop_source(ctx: Context, iterable: cst.BaseExpression) -> str | None:
    """The dotted name a loop really iterates: `enumerate(L)`, `tqdm(L)`, `iter(L)`, `zip(L, ...)` -> "L"."""
    while isinstance(iterable, cst.Call) and iterable.args and isinstance(iterable.func, (cst.Name, cst.Attribute)):
        head = (dotted(iterable.func) or "").rsplit(".", 1)[-1]
        if head not in ("enumerate", "tqdm", "iter", "zip", "trange", "track", "progress_bar"):
            return None
        iterable = iterable.args[0].value
    return dotted(iterable)


class DataLoaderRule(Rule):
    """Collects the `DataLoader(...)` calls of a file (by the name they are bound to, when they are) and
    the loops over data loaders; subclasses decide in `finish` which constructions to report."""

    def visit_Module(self, node: cst.Module, ctx: Context) -> None:
        self.loaders: list[tuple[cst.Call, str | None]] = []
        self._bound: set[cst.Call] = set()

    def visit_Assign(self, node: cst.Assign, ctx: Context) -> None:
        if isinstance(node.value, cst.Call) and is_data_loader(ctx, node.value) and len(node.targets) == 1:
            self.loaders.append((node.value, dotted(node.targets[0].target)))
            self._bound.add(node.value)

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        if is_data_loader(ctx, node) and node not in self._bound:
            self.loaders.append((node, None))


# ---- timed regions (PFL9xx) -----------------------------------------------------------------------
CLOCKS = {"time.time", "time.perf_counter", "time.monotonic", "time.perf_counter_ns", "time.time_ns",
          "time.monotonic_ns", "timeit.default_timer"}
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
    loop over data (a loader, a dataset) in between, `closed(end, region, ctx)` may return a node to
    report; the reports are made at the end of the file, and only if the file mentions CUDA when
    `needs_cuda` is set."""

    needs_cuda: ClassVar[bool] = True

    def start(self) -> None:
        self.regions: dict[cst.CSTNode, TimedRegion] = {}
        self.ran: dict[cst.CSTNode, set[str]] = {}
        self.pending: list[cst.CSTNode] = []

    def on_call(self, node: cst.Call, ctx: Context, qual: str | None) -> None:
        scope = ctx.function or ctx.module
        region = self.regions.get(scope)
        if qual in CLOCKS:
            if region is not None and region.work and not region.over_data and region.loops == tuple(ctx.loops):
                found = self.closed(node, region, ctx)
                if found is not None:
                    self.pending.append(found)
            self.regions[scope] = TimedRegion(node, tuple(ctx.loops), frozenset(self.ran.get(scope, ())))
            return
        work = torch_work(ctx, node, qual)
        if work is not None:
            self.ran.setdefault(scope, set()).add(work)
        if region is None:
            return
        if syncs_host(ctx, node, qual):
            region.synced = True
        elif work is None and isinstance(node.func, cst.Name) and qual is None \
                and node.func.value not in _BUILTINS and region.work:
            region.opaque = True
        elif work is not None:
            region.work.add(work)
            region.trains = region.trains or method_name(node) in ("backward", "step")
            for loop in ctx.loops[len(region.loops):]:
                it = loop.iter if isinstance(loop, cst.For) else None
                if it is not None and not (isinstance(it, cst.Call) and (ctx.call_name(it) or dotted(it.func)) in _REPEATS):
                    region.over_data = True

    def closed(self, end: cst.Call, region: TimedRegion, ctx: Context) -> cst.CSTNode | None:
        raise NotImplementedError

    def check(self, ctx: Context) -> None:
        if self.cuda or not self.needs_cuda:
            for node in self.pending:
                self.report(ctx, node)


# ---- loops that are not per-batch device work (PFL102, PFL103) ----------------------------------------
_MODEL_TENSORS = {"items", "values", "parameters", "named_parameters", "buffers", "named_buffers", "state_dict"}


def _host_data(expr: cst.CSTNode) -> bool:
    """An expression that visibly builds data on the host: `device="cpu"`, `.cpu()`, `.numpy()`."""
    for arg in find_all(expr, cst.Arg):
        if arg.keyword is not None and arg.keyword.value == "device" and isinstance(arg.value, cst.SimpleString) \
                and arg.value.evaluated_value == "cpu":
            return True
    return any(method_name(call) in ("cpu", "numpy") for call in find_all(expr, cst.Call))


def not_per_batch(loop: cst.CSTNode) -> bool:
    """A loop whose iterations are not steps over device data: `for epoch in ...` (once per pass over the
    data), a loop over a model's tensors (`state_dict().items()`, `parameters()`: saving or copying them,
    where the copy is the point), or over data visibly on the host."""
    if isinstance(loop, cst.For):
        target, iterable = loop.target, loop.iter
    elif hasattr(loop, "for_in"):
        target, iterable = loop.for_in.target, loop.for_in.iter
    else:
        return False
    if isinstance(target, cst.Name) and "epoch" in target.value.lower():
        return True
    if isinstance(iterable, cst.Call) and method_name(iterable) in _MODEL_TENSORS:
        return True
    return _host_data(iterable)


def one_line(node: cst.CSTNode) -> bool:
    """Whether a node is written on one line. Fixes rebuild a node outside its block, which would lose the
    indentation of a multi-line argument list: such findings get no fix."""
    return "\n" not in cst.Module(body=[]).code_for_node(node)
