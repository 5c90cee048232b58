import libcst as cst

from perflint.model.names import dotted, method_name
from perflint.model.program import FileModel
from perflint.rules.distributed.ddp import is_ddp
from perflint.tree import find_all

from perflint.rule import Rule


def _modulo(test: cst.BaseExpression) -> bool:
    return any(type(op.operator) is cst.Modulo for op in find_all(test, cst.BinaryOperation))


def _steps(model: FileModel, body: cst.CSTNode) -> bool:
    """Whether a block calls an optimizer's or a grad scaler's `.step()`."""
    for call in find_all(body, cst.Call):
        if method_name(call) == "step":
            head = (dotted(call.func.value) or "").rsplit(".", 1)[-1].lower()
            if "opt" in head or "scaler" in head:
                return True
    return False


class DdpAccumulationWithoutNoSync(Rule):
    code = "PFL702"
    name = "ddp-accumulation-without-no-sync"
    summary = "gradient accumulation under DistributedDataParallel without `no_sync()` all-reduces every micro-step"
    message = ("gradients are all-reduced on every micro-step; run the forward and backward of all but the last "
               "micro-step under `with model.no_sync():`")
    backward_only = ("`no_sync()` around the backward alone still all-reduces: DDP arms the gradient sync in the "
                     "forward, so the forward must be inside the `with` block too")
    proof_metric = "collectives"
    # Off by default: on real code its findings were in accumulation branches that the default configuration
    # never takes (one accumulation step on the intended number of GPUs); none was judged right.
    default = False
    why = """
With `optimizer.step()` only every k micro-steps, the gradients of the first k-1 backward passes are
just summed locally, yet `DistributedDataParallel` all-reduces them across all ranks after every
backward: k times the communication the update needs. `with model.no_sync():` turns the reducer off,
so gradients accumulate locally and only the last micro-step communicates. DDP arms the reducer in
its forward (`prepare_for_backward`), so `no_sync()` must cover the forward; around the backward alone
it changes nothing.

Measured by its reference pair (one gloo rank, 4 micro-steps x 4 updates, `python -m tests.pairs`):
16 `c10d::allreduce_` without `no_sync()`, 4 with it (`collectives` 21 -> 9, counting DDP's
construction broadcasts), and the reducer's bucket work (`copy_bucket_to_grad`, `mul_out`) drops from
32 to 8. With one rank, `no_sync()` around the forward and backward, or the forward alone, gives no
all-reduce for that micro-step; around the backward alone, one.
"""
    example = """
model = DistributedDataParallel(model, device_ids=[rank])
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    instead = """
model = DistributedDataParallel(model, device_ids=[rank])
for i, (x, y) in enumerate(loader):
    sync = (i + 1) % accum == 0
    with contextlib.nullcontext() if sync else model.no_sync():
        loss = criterion(model(x), y) / accum
        loss.backward()
    if sync:
        optimizer.step()
        optimizer.zero_grad()
"""
    known_problems = """
Reports a `.backward()` in a loop whose `optimizer.step()` (or `scaler.step()`) sits under an
`if ... % k == 0:` test, in a file that constructs `DistributedDataParallel`, when the function never
mentions `no_sync`. It cannot follow a model wrapped in another file, nor accumulation gated by a
flag computed elsewhere (`if need_update:`). FSDP's `no_sync()` behaves alike but FSDP is not
recognised. Without DDP in the file it stays quiet: single-process accumulation needs no `no_sync`.
Off by default: on real code (two training programs of the accuracy benchmark's hold-out) its findings
sat in accumulation branches that the default configuration never takes (one accumulation step), and
none was judged right; select it where your runs accumulate gradients under DDP.
"""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self.ddp = False
        self.candidates: list[cst.Call] = []
        self.accumulating: dict[cst.CSTNode, list[cst.If]] = {}  # loop -> its `if i % k == 0: opt.step()`

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        if is_ddp(model, node):
            self.ddp = True
            return
        if method_name(node) != "backward" or not model.in_loop or model.in_logging_gate:
            return
        loop = model.loops[-1]
        if any(name.endswith("no_sync") for name in model.calls_in(model.function or model.module)):
            return
        steps = self.accumulating.get(loop)
        if steps is None:
            steps = self.accumulating[loop] = [branch for branch in find_all(loop, cst.If)
                                               if _modulo(branch.test) and _steps(model, branch.body)]
        if steps:
            self.candidates.append((node, model.frame.loop, steps))

    def visit_With(self, node: cst.With, model: FileModel) -> None:
        for item in node.items:
            if type(item.item) is cst.Call and method_name(item.item) == "no_sync":
                calls = [method_name(c) or dotted(c.func) for c in find_all(node.body, cst.Call)]
                if "backward" in calls and all(c in ("backward", "scale") for c in calls):
                    self.report(model, item, self.backward_only)

    def finish(self, model: FileModel) -> None:
        if self.ddp:
            for node, loop, steps in self.candidates:
                if any(_same_branch(model, node, loop, branch) for branch in steps):
                    self.report(model, node)


def _same_branch(model: FileModel, backward: cst.Call, loop, step_branch: cst.If) -> bool:
    """Whether the gated optimizer step can follow this backward: every branch between the loop and the
    backward also holds the step's `if` (not `if accumulate: ...backward(); if i % k == 0: step()` /
    `else: backward(); step()`, whose else-branch steps every iteration and must all-reduce)."""
    where = model.frame_of(step_branch.test)
    for frame in model.frame_of(backward).chain():
        if frame is loop:
            return True
        if frame.condition is not None and not frame.encloses(where):
            return False
    return True
