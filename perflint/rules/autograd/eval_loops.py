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
        self.evaluates: dict[cst.FunctionDef, bool] = {}  # named like an evaluation, or calls `.eval()`
        self.called_without_grad: set[str] = set()  # functions called under no_grad somewhere
        self.no_grad_everywhere = False

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        # Runs for every call of the file: the cheap tests first.
        func = model.function
        callee = node.func
        if (callee.attr.value if type(callee) is cst.Attribute else getattr(callee, "value", None)) \
                == "set_grad_enabled" and _grad_off(node, model) and (func is None or func.name.value == "main"):
            self.no_grad_everywhere = True
        if model.in_no_grad:
            name = dotted(callee)
            if name:
                self.called_without_grad.add(name.rsplit(".", 1)[-1])
        if func is None or func in self.candidates or not model.in_loop or model.in_no_grad != self.requires_no_grad:
            return
        fname = func.name.value
        if fname.startswith("test_") or module_call(model, node) is None:
            return
        evaluates = self.evaluates.get(func)
        if evaluates is None:
            evaluates = self.evaluates[func] = eval_like(fname) or any(c.endswith(".eval") for c in model.calls_in(func))
        if not evaluates or trains(model, func):
            return
        if self.applies(node, func, model.calls_in(func), model):
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


def _grad_off(call: cst.Call, model: FileModel) -> bool:
    """`torch.set_grad_enabled(False)`."""
    return model.call_name(call) in ("torch.set_grad_enabled", "torch.autograd.set_grad_enabled") and bool(call.args) \
        and type(call.args[0].value) is cst.Name and call.args[0].value.value == "False"


def switches_mode(model: FileModel) -> bool:
    """Whether the file calls `.eval()` or `.train(...)` on anything."""
    return any(type(c.func) is cst.Attribute and c.func.attr.value in ("eval", "train") and model.qualname(c.func) is None
               for c in model.calls)
