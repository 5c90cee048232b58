import libcst as cst

from perflint.model.names import dotted
from perflint.model.program import FileModel
from perflint.model.values import NDARRAY, TENSOR
from perflint.rules.compile.compiled import compile_decorated
from perflint.tree import find_all

from perflint.rule import Rule

_COMPILE = {"torch.compile", "torch._dynamo.optimize"}
_SCALAR_FUNCS = {"float", "int", "round", "abs", "min", "max", "pow"}


class CompiledFnPythonScalar(Rule):
    code = "PFL404"
    name = "compiled-fn-python-scalar"
    summary = "a compiled function is called in a loop with a Python number that changes every iteration"
    message = "`{arg}` is a Python number that changes every iteration: the compiled `{func}` is specialised " \
              "on it and recompiles; pass it as a tensor"
    severity = "warning"
    proof_metric = "recompiles"
    why = """
TorchDynamo treats Python ints and floats passed to a compiled function as constants of the graph and
guards on their value. A new value fails the guard and triggers another trace and compile (seconds with
Inductor). After the first change dynamo retries with the number as a dynamic symbol, which costs a
second compile and a less specialised graph; floats are passed in as host scalars every call. A 0-d
tensor argument is an ordinary graph input: one compile, no guard on its value.
"""
    example = """
@torch.compile
def update(p, g, lr):
    return p - lr * g

for step in range(steps):
    p = update(p, g, base_lr * 0.99 ** step)
"""
    instead = """
lr = torch.tensor(base_lr)
for step in range(steps):
    p = update(p, g, lr * 0.99 ** step)
"""
    known_problems = """
Knows compiled functions only when this file decorates them with `@torch.compile` or binds them with
`f = torch.compile(...)` before the loop that calls them. A number counts as changing when it is a
`for i in range(...)` target, the index of `enumerate`, or a value computed inside the loop only from
such names, numbers and `float`/`int`/`math.*` calls. Tensors, loop targets over data and constants are
quiet.
"""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self.compiled: set[str] = set()
        self.scalars: dict[cst.CSTNode, set[str]] = {}  # loop -> names holding changing Python numbers

    def visit_FunctionDef(self, node: cst.FunctionDef, model: FileModel) -> None:
        if compile_decorated(model, node):
            self.compiled.add(node.name.value)

    def visit_Assign(self, node: cst.Assign, model: FileModel) -> None:
        value = node.value
        if type(value) is cst.Call and model.call_name(value) in _COMPILE:
            for t in node.targets:
                name = dotted(t.target)
                if name:
                    self.compiled.add(name)
        elif self.compiled and model.in_loop and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                and self._changing(value, model):
            self.scalars.setdefault(model.loops[-1], set()).add(node.targets[0].target.value)

    def visit_For(self, node: cst.For, model: FileModel) -> None:
        it, target = node.iter, node.target
        if type(it) is not cst.Call or type(it.func) is not cst.Name:
            return
        names = set()
        if it.func.value == "range" and type(target) is cst.Name:
            names.add(target.value)
        elif it.func.value == "enumerate" and type(target) is cst.Tuple and target.elements \
                and type(target.elements[0].value) is cst.Name:
            names.add(target.elements[0].value.value)
        if names:
            self.scalars[node] = names

    def _changing(self, expr: cst.BaseExpression, model: FileModel) -> bool:
        """An arithmetic expression of numbers and changing loop scalars that uses at least one of them."""
        live = set().union(*(self.scalars.get(loop, set()) for loop in model.loops))
        if not live:
            return False
        if type(expr) is cst.Name:
            return expr.value in live
        if type(expr) not in (cst.BinaryOperation, cst.UnaryOperation, cst.Call):
            return False
        used = False
        for node in find_all(expr, cst.BaseExpression):
            if type(node) is cst.Name:
                if node.value in live:
                    used = True
                elif model.kind(node) in (TENSOR, NDARRAY):
                    return False
            elif type(node) is cst.Call:
                name = model.qualname(node.func) or dotted(node.func) or ""
                if name not in _SCALAR_FUNCS and not name.startswith("math."):
                    return False
            elif type(node) is cst.Attribute:
                if not (model.qualname(node) or "").startswith("math."):
                    return False
            elif type(node) not in (cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float):
                return False
        return used

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        name = dotted(node.func)
        if name is None or name not in self.compiled or not model.in_loop:
            return
        for arg in node.args:
            if self._changing(arg.value, model):
                code = model.module.code_for_node(arg.value)
                self.report(model, node, self.message.format(arg=code, func=name))
                return
