"""Evaluation loops: functions that run a model in a loop without training."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from perflint.model.names import dotted
from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.rule import Rule
from perflint.rules.common import eval_like, module_call, trains

class EvalLoopRule(Rule):
    """Collects, per function, the first module call in a loop of an evaluation function (named like
    `evaluate`, `validate`, `test`, `predict`, `infer`, or one that calls `.eval()`) that does not train;
    `finish` reports those that `keep` accepts once the whole file has been seen.

    Functions named `test_*` (pytest tests) are skipped: their cost is not the product's."""

    requires_no_grad: ClassVar[bool]  # look at calls under no_grad (True) or outside it (False)

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self.candidates: dict[cst.FunctionDef, cst.Call] = {}
        self.file_calls: set[str] = set()  # method names and qualified names of every call in the file
        self.called_without_grad: set[str] = set()  # functions called under no_grad somewhere
        self.no_grad_everywhere = False

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        func = model.function
        qual = model.call_name(node)
        name = dotted(node.func) or ""
        self.file_calls.add(qual or name.rsplit(".", 1)[-1])
        if qual in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and node.args and \
                isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "False" and \
                (func is None or func.name.value == "main"):
            self.no_grad_everywhere = True
        if model.in_no_grad and name:
            self.called_without_grad.add(name.rsplit(".", 1)[-1])
        if func is None or func in self.candidates or not model.in_loop or model.in_no_grad != self.requires_no_grad:
            return
        fname = func.name.value
        if fname.startswith("test_") or module_call(model, node) is None:
            return
        calls = model.calls_in(func)
        if not (eval_like(fname) or any(c.endswith(".eval") for c in calls)) or trains(model, func):
            return
        if self.applies(node, func, calls, model):
            self.candidates[func] = node

    def applies(self, node: cst.Call, func: cst.FunctionDef, calls: set[str], model: FileModel) -> bool:
        return True

    def finish(self, model: FileModel) -> None:
        steps = Steps.of(model)
        for func, call in self.candidates.items():
            step = steps.at(call)
            if step.hot and self.keep(func, model):  # an evaluation loop over batches, not a one-off call
                self.report(model, call, evidence=step.why[:2])

    def keep(self, func: cst.FunctionDef, model: FileModel) -> bool:
        return True
