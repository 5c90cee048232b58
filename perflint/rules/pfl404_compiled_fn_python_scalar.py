import libcst as cst

from perflint.context import NDARRAY, TENSOR, Context, find_all, compile_decorated, dotted
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
    valid = (
        "import torch\n@torch.compile\ndef f(x, s):\n    return x * s\nfor x in xs:\n    f(x, 0.5)\n",
        "import torch\nf = torch.compile(g)\nfor x, y in loader:\n    f(x, y)\n",
        "import torch\nfor i in range(3):\n    g(x, i)\n",
        "import torch\nf = torch.compile(g)\nfor i in range(3):\n    f(x, torch.tensor(i * 0.1))\n",
        "import torch\nf = torch.compile(g)\nlr = torch.tensor(0.1)\nfor i in range(3):\n    f(x, lr * 0.9 ** i)\n",
    )
    invalid = (
        "import torch\n@torch.compile\ndef f(x, s):\n    return x * s\nfor i in range(3):\n"
        "    f(x, i)  # expect: PFL404\n",
        "import torch\nstep_fn = torch.compile(g)\nfor step, batch in enumerate(loader):\n"
        "    lr = base_lr * 0.9 ** step\n    step_fn(batch, lr=lr)  # expect: PFL404\n",
    )

    def visit_Module(self, node: cst.Module, ctx: Context) -> None:
        self.compiled: set[str] = set()
        self.scalars: dict[cst.CSTNode, set[str]] = {}  # loop -> names holding changing Python numbers

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: Context) -> None:
        if compile_decorated(ctx, node):
            self.compiled.add(node.name.value)

    def visit_Assign(self, node: cst.Assign, ctx: Context) -> None:
        value = node.value
        if isinstance(value, cst.Call) and ctx.call_name(value) in _COMPILE:
            for t in node.targets:
                name = dotted(t.target)
                if name:
                    self.compiled.add(name)
        elif self.compiled and ctx.in_loop and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) \
                and self._changing(value, ctx):
            self.scalars.setdefault(ctx.loops[-1], set()).add(node.targets[0].target.value)

    def visit_For(self, node: cst.For, ctx: Context) -> None:
        it, target = node.iter, node.target
        if not isinstance(it, cst.Call) or not isinstance(it.func, cst.Name):
            return
        names = set()
        if it.func.value == "range" and isinstance(target, cst.Name):
            names.add(target.value)
        elif it.func.value == "enumerate" and isinstance(target, cst.Tuple) and target.elements \
                and isinstance(target.elements[0].value, cst.Name):
            names.add(target.elements[0].value.value)
        if names:
            self.scalars[node] = names

    def _changing(self, expr: cst.BaseExpression, ctx: Context) -> bool:
        """An arithmetic expression of numbers and changing loop scalars that uses at least one of them."""
        live = set().union(*(self.scalars.get(loop, set()) for loop in ctx.loops))
        if not live:
            return False
        if isinstance(expr, cst.Name):
            return expr.value in live
        if not isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Call)):
            return False
        used = False
        for node in find_all(expr, cst.BaseExpression):
            if isinstance(node, cst.Name):
                if node.value in live:
                    used = True
                elif ctx.kind(node) in (TENSOR, NDARRAY):
                    return False
            elif isinstance(node, cst.Call):
                name = ctx.qualname(node.func) or dotted(node.func) or ""
                if name not in _SCALAR_FUNCS and not name.startswith("math."):
                    return False
            elif isinstance(node, cst.Attribute):
                if not (ctx.qualname(node) or "").startswith("math."):
                    return False
            elif not isinstance(node, (cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float)):
                return False
        return used

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        name = dotted(node.func)
        if name is None or name not in self.compiled or not ctx.in_loop:
            return
        for arg in node.args:
            if self._changing(arg.value, ctx):
                code = ctx.module.code_for_node(arg.value)
                self.report(ctx, node, self.message.format(arg=code, func=name))
                return
