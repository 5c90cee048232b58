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
            if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                found = True
            elif isinstance(func, cst.Attribute) and func.attr.value == "step":
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
_HALF_ATTRS = {"float16", "half", "bfloat16"}


class FileFactsRule(Rule):
    """A rule that decides at the end of a file from what the whole file does: whether it uses CUDA (a
    `.cuda()` call, a `torch.cuda.*` call or a string that says "cuda"), where it first calls `.backward()`,
    whether it runs in fp16/bf16 (autocast, a GradScaler, `.half()`, `torch.float16`), which dotted names it
    assigns (`torch.backends.cudnn.benchmark = True`), which functions it calls, and whether it is a test
    file (`test_*.py`, `*_test.py`, `conftest.py`). Subclasses implement
    `check(model)`, may override `start()` (per-file state) and `on_call(node, model, qual)`."""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        name = model.path.replace("\\", "/").rsplit("/", 1)[-1]
        self.test_file = name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
        self.cuda = False
        self.half = False
        self.backward: cst.Call | None = None
        self.assigned: set[str] = set()
        self.called: set[str] = set()
        self.start()

    def start(self) -> None:
        pass

    def visit_SimpleString(self, node: cst.SimpleString, model: FileModel) -> None:
        if "cuda" in node.value:
            self.cuda = True

    def visit_Attribute(self, node: cst.Attribute, model: FileModel) -> None:
        if node.attr.value in _HALF_ATTRS or node.attr.value in ("autocast", "GradScaler"):
            qual = model.qualname(node)
            if qual is not None and (qual in _AUTOCAST or qual.startswith("torch.") and node.attr.value in _HALF_ATTRS
                                     and qual.count(".") == 1):
                self.half = True

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        qual = model.call_name(node)
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
        self.on_call(node, model, qual)

    def on_call(self, node: cst.Call, model: FileModel, qual: str | None) -> None:
        pass

    def visit_Assign(self, node: cst.Assign, model: FileModel) -> None:
        for target in node.targets:
            qual = model.qualname(target.target)
            if qual is not None:
                self.assigned.add(qual)

    def finish(self, model: FileModel) -> None:
        self.check(model)

    def check(self, model: FileModel) -> None:
        raise NotImplementedError


