"""Helpers that rules of several families share: does code train, is a call a model's forward, what a
whole file does (CUDA, fp16, test file)."""

from __future__ import annotations

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted, method_name
from perflint.model.program import FileModel
from perflint.model.values import MODULE
from perflint.rule import Rule
from perflint.tree import find_all

_EVAL_WORDS = {"eval", "evaluate", "evaluation", "validate", "validation", "val", "valid", "test", "predict",
               "prediction", "infer", "inference"}
api.LOSS_WORDS = ("loss", "criterion", "metric")


def eval_like(name: str) -> bool:
    """`evaluate`, `validate_one_epoch`, `run_inference`, `test`: a function name that says it evaluates."""
    return any(part in _EVAL_WORDS for part in name.lower().split("_"))


def trains(model: FileModel, node: cst.CSTNode) -> bool:
    """Whether a subtree calls `.backward()` (on anything) or an optimizer's (or grad scaler's) `.step()`."""
    found = model._memo.get(("trains", node))
    if found is None:
        found = False
        for call in find_all(node, cst.Call):
            func = call.func
            if type(func) is cst.Attribute and func.attr.value == "backward":
                found = True
            elif type(func) is cst.Attribute and func.attr.value == "step":
                head = (dotted(func.value) or "").rsplit(".", 1)[-1].lower()
                found = any(w in head for w in ("optim", "opt", "scaler"))
            elif model.qualname(func) == "torch.autograd.backward":
                found = True
            if found:
                break
        model._memo[("trains", node)] = found
    return found


def module_call(model: FileModel, call: cst.Call) -> str | None:
    """For `model(x)` / `self.net(x)`, where the callee is a module (known, or named like one) that is not a
    loss or metric: its dotted name; else None."""
    name = dotted(call.func)
    if name is None or model.qualname(call.func) is not None:
        return None
    last = name.rsplit(".", 1)[-1].lower()
    if any(w in last for w in api.LOSS_WORDS):
        return None
    kind = model.kind(call.func)
    if kind is not None:
        return name if kind == MODULE else None
    return name if last in api.MODULE_NAMES or last in ("layer", "block", "blk") or \
        last.endswith(("model", "_net", "net")) else None


# ---- whole-file facts (PFL8xx, PFL9xx) ------------------------------------------------------------
_AUTOCAST = {"torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast",
             "torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler"}
_HALF = ("float16", "bfloat16", ".half()", "autocast", "GradScaler")


class WholeFile:
    """What a whole file does, computed once for the rules that decide from it: whether it uses CUDA,
    where it first calls `.backward()`, whether it runs in fp16/bf16, which dotted names it assigns
    (`torch.backends.cudnn.benchmark = True`) and which torch functions it calls."""

    def __init__(self, model: FileModel) -> None:
        text = model.text
        self.cuda = "cuda" in text or "torch.accelerator" in text
        self.half = any(h in text for h in _HALF)
        self.backward: cst.Call | None = None
        self.called: set[str] = set()
        for call in model.calls:
            if self.backward is None and method_name(call) == "backward":
                self.backward = call
            qual = model.call_name(call)
            if qual is not None:
                self.called.add(qual)
        self.assigned = {q for node in model.nodes(cst.Assign) for t in node.targets
                         if (q := model.qualname(t.target)) is not None}

    @staticmethod
    def of(model: FileModel) -> "WholeFile":
        found = model._memo.get("whole-file")
        if found is None:
            found = model._memo["whole-file"] = WholeFile(model)
        return found


class FileFactsRule(Rule):
    """A rule that decides at the end of a file from what the whole file does (`WholeFile`). Subclasses
    implement `check(model)`, may override `start()` (per-file state) and `on_call(node, model, qual)`,
    which sees every call of the file in order, with `model.frame` where the call is; `replays(model)`
    says whether that is needed at all (the default: when `on_call` is overridden)."""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self.start()

    def finish(self, model: FileModel) -> None:
        facts = WholeFile.of(model)
        self.cuda, self.half = facts.cuda, facts.half
        self.backward, self.assigned, self.called = facts.backward, facts.assigned, facts.called
        if self.replays(model):
            outer = model.frame
            try:
                for call in model.calls:
                    model.frame = model.sites[call][0]
                    self.on_call(call, model, model.call_name(call))
            finally:
                model.frame = outer
        self.check(model)

    def replays(self, model: FileModel) -> bool:
        return type(self).on_call is not FileFactsRule.on_call

    def start(self) -> None:
        pass

    def on_call(self, node: cst.Call, model: FileModel, qual: str | None) -> None:
        pass

    def check(self, model: FileModel) -> None:
        raise NotImplementedError
