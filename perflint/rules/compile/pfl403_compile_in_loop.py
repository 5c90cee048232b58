import libcst as cst

from perflint.model.names import dotted, target_names
from perflint.model.program import FileModel

from perflint.rule import Rule
from perflint.tree import find_all

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
once each is quiet, and so is one that compiles with the loop's own value (`for mode in modes:
torch.compile(m, mode=mode)`: sapiens benchmarks each mode, a different compile each time by design, blind
review 53). Every `torch.compile` call inside a `forward` method is reported. The measured pair
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
        elif model.in_loop and node in self._callee and not _per_iteration(model, node):
            self.report(model, node, self.message.format(where="iteration"))

    def visit_Assign(self, node: cst.Assign, model: FileModel) -> None:
        value = node.value
        if not (type(value) is cst.Call and model.call_name(value) in _COMPILE and model.in_loop
                and not model.in_forward and len(node.targets) == 1):
            return
        name = dotted(node.targets[0].target)
        if name is not None and name in model.calls_in(model.loops[-1]) and not _per_iteration(model, value):
            self.report(model, value, self.message.format(where="iteration"))


def _per_iteration(model: FileModel, call: cst.Call) -> bool:
    """Whether the compile is given the loop's own value (`mode=mode`, the model of this iteration): each
    iteration compiles something else, on purpose. Not a value a lambda captures (`torch.compile(lambda t: t *
    i)`): that is the same code traced again for each captured value, the antipattern itself."""
    loop = model.loops[-1]
    names = set(target_names(loop.target)) if type(loop) is cst.For else set()
    captured = {id(n) for arg in call.args for lam in find_all(arg.value, cst.Lambda)
                for n in find_all(lam, cst.Name)}
    return any(n.value in names and id(n) not in captured
               for arg in call.args for n in find_all(arg.value, cst.Name))
