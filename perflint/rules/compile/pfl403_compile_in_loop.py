import libcst as cst

from perflint.model.names import dotted
from perflint.model.program import FileModel

from perflint.rule import Rule

_COMPILE = {"torch.compile", "torch._dynamo.optimize"}


class CompileInLoop(Rule):
    code = "PFL403"
    name = "compile-in-loop"
    summary = "`torch.compile(...)` is called inside a loop (and its result used there) or inside `forward`"
    message = "`torch.compile` here runs on every {where}: compile once, outside, and reuse the compiled callable"
    severity = "warning"
    proof_metric = "recompiles"
    why = """
`torch.compile` returns a new wrapper each time it is called. TorchDynamo keeps its compiled code on the
Python code object, so re-wrapping the very same function or module mostly finds the old graph again, but
every new closure or lambda brings new captured values that the guards check: a changed value means
another trace and compile (seconds with Inductor), and the cache fills up until dynamo gives up and falls
back to eager. Inside `forward`, the wrapper is rebuilt on every call, and when the outer model is
compiled too, dynamo simply inlines the inner call, so the inner `torch.compile` buys nothing.
"""
    example = """
for step, (x, y) in enumerate(loader):
    scale = schedule(step)
    loss_fn = torch.compile(lambda out, y: ((out - y) ** 2).mean() * scale)
    loss = loss_fn(model(x), y)
"""
    instead = """
loss_fn = torch.compile(lambda out, y, scale: ((out - y) ** 2).mean() * scale)
for step, (x, y) in enumerate(loader):
    scale = torch.tensor(schedule(step))
    loss = loss_fn(model(x), y, scale)
"""
    known_problems = """
In a loop it reports only when the compiled result is called in the same loop (directly,
`torch.compile(f)(x)`, or through a name bound to it); a loop that compiles a list of different models
once each is quiet. Every `torch.compile` call inside a `forward` method is reported. The measured pair
uses a lambda that captures the loop's value: re-wrapping an unchanged function costs only the wrapper,
which no deterministic count shows.
"""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self._callee: set[cst.Call] = set()  # compile calls whose result is called on the spot

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        if type(node.func) is cst.Call:
            self._callee.add(node.func)
        if model.call_name(node) not in _COMPILE:
            return
        if model.in_forward:
            self.report(model, node, self.message.format(where="forward call"))
        elif model.in_loop and node in self._callee:
            self.report(model, node, self.message.format(where="iteration"))

    def visit_Assign(self, node: cst.Assign, model: FileModel) -> None:
        value = node.value
        if not (type(value) is cst.Call and model.call_name(value) in _COMPILE and model.in_loop
                and not model.in_forward and len(node.targets) == 1):
            return
        name = dotted(node.targets[0].target)
        if name is not None and name in model.calls_in(model.loops[-1]):
            self.report(model, value, self.message.format(where="iteration"))
