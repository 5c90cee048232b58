import libcst as cst

from perflint.model.names import truth_tested
from perflint.model.program import FileModel

from perflint.rule import Rule

_BREAKING_METHODS = {"item", "tolist", "numpy"}


class GraphBreakInCompiled(Rule):
    code = "PFL402"
    call_names = frozenset({"item", "tolist", "numpy", "print"})
    name = "graph-break-in-compiled"
    summary = "code in a `@torch.compile` function that TorchDynamo cannot trace (a graph break)"
    message = "{what} inside a compiled function is a graph break: the function is split into separately " \
              "compiled pieces with Python in between"
    severity = "warning"
    proof_metric = "graph_breaks"
    why = """
At a graph break TorchDynamo stops the graph, compiles what it has, runs the offending code in Python
and starts a new graph after it. Each piece is optimised alone (no fusion across the break), every call
pays the extra guard checks and Python frames between the pieces, and `.item()`, `.tolist()` and
`.numpy()` also copy to the host, which waits for the device. `print` and a branch on a tensor's value
(`if x.sum() > 0:`) break the graph the same way.
"""
    example = """
@torch.compile
def step(x, w):
    y = x @ w
    scale = y.abs().max().item()
    return y / scale
"""
    instead = """
@torch.compile
def step(x, w):
    y = x @ w
    scale = y.abs().max()  # stays a tensor inside the graph
    return y / scale
"""
    known_problems = """
Only functions decorated with `@torch.compile` (at any nesting level) are checked; a function compiled
by `torch.compile(fn)` elsewhere, or a module's `forward`, is not known to be compiled. A branch is
reported only when its condition is known to be a tensor (a torch call's result, an annotated
`torch.Tensor` parameter). `torch._dynamo.config.capture_scalar_outputs = True` lets `.item()` stay in the
graph; the rule does not read that setting. TorchScript functions are PFL405's business.
"""

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in _BREAKING_METHODS:
            if model.torch_compiled() and model.kind(func.value) in ("tensor", None):
                self.report(model, node, self.message.format(what=f"`.{func.attr.value}()`"))
        elif type(func) is cst.Name and func.value == "print" and not model.known("print") \
                and model.torch_compiled():
            self.report(model, node, self.message.format(what="`print()`"))

    def visit_If(self, node: cst.If, model: FileModel) -> None:
        if model.torch_compiled() and any(model.is_tensor(e) for e in truth_tested(node.test)):
            self.report(model, node.test, self.message.format(what="a branch on a tensor's value"))
