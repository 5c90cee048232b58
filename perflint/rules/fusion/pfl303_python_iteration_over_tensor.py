import libcst as cst

from perflint.model.names import dotted
from perflint.model.values import TENSOR
from perflint.tree import find_all

from perflint.rule import Rule

_BUILTINS = {"sum": "{t}.sum(0)", "max": "{t}.amax(0)", "min": "{t}.amin(0)", "any": "{t}.any()",
             "all": "{t}.all()", "sorted": "torch.sort({t}, 0)"}


class PythonIterationOverTensor(Rule):
    code = "PFL303"
    default = False
    name = "python-iteration-over-tensor"
    summary = "a tensor processed element by element in Python (`sum(t)`, `max(t)`, `for v in t: v.item()`, " \
              "`for i in range(n): t[i] = ...`)"
    message = "`{what}` walks the tensor in Python, one indexing op (and one op per element) at a time; use {instead}"
    proof_metric = "ops"
    why = """
Python's `sum`, `max`, `min`, `any`, `all` and `sorted` iterate a tensor along its first dimension,
creating one tensor per element (`aten::select`) and running one op per pair (`aten::add`, a comparison
plus `aten::is_nonzero`, which on a GPU is also a sync). An element-wise loop `for i in range(n):
t[i] = a[i] * b[i]` launches three or more tiny ops per element. The vectorised form is one kernel:
thousands of times less host overhead, and no syncs.
"""
    example = """
total = sum(losses)                  # losses is a tensor
for i in range(n):
    out[i] = a[i] * w[i] + b[i]
"""
    instead = """
total = losses.sum(0)
out = a * w + b
"""
    known_problems = """
Reports the builtins only when their argument is known to be a tensor (a torch call's result, a
tensor-annotated parameter, a name assigned from one); a Python list of tensors (`sum(losses)` where
`losses = []`) is not a tensor and stays quiet. Element loops are reported only in their simplest form:
`for i in range(...)` whose whole body is one assignment to `t[i]` (`=`, `+=`, ...) of an expression made
of arithmetic, indexing and names, where `t` is known to be a tensor; loops that call anything
(`out[i] = model(x[i])`) or carry a dependency between iterations (`t[i] = t[i - 1] * a`) are not
reported. `for v in t:` over a known tensor is reported only when the body turns `v` into a Python number
(`v.item()`, `float(v)`, `int(v)`, `bool(v)`): iterating rows of a batch to process each is often
deliberate, reading each element on the host is not (it is also a sync per element on a GPU).
"""

    def visit_Call(self, node: cst.Call, model) -> None:
        func = node.func
        if type(func) is cst.Name and func.value in _BUILTINS and not model.known(func.value) \
                and len(node.args) == 1 and node.args[0].keyword is None and model.is_tensor(node.args[0].value):
            arg = node.args[0].value
            name = dotted(arg) or "t"
            self.report(model, node, self.message.format(
                what=f"{func.value}({name})", instead=f"`{_BUILTINS[func.value].format(t=name)}`"))

    def visit_For(self, node: cst.For, model) -> None:
        it = node.iter
        if type(node.target) is cst.Name and model.is_tensor(it) and _scalar_use(node.body, node.target.value):
            name = dotted(it) or "t"
            self.report(model, node, self.message.format(
                what=f"for {node.target.value} in {name}: ... {node.target.value}.item() ...",
                instead="a vectorised op on the whole tensor (masking, `torch.where`, reductions)"))
            return
        if not (type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "range"
                and type(node.target) is cst.Name and type(node.body) is cst.IndentedBlock
                and len(node.body.body) == 1 and type(node.body.body[0]) is cst.SimpleStatementLine
                and len(node.body.body[0].body) == 1):
            return
        stmt = node.body.body[0].body[0]
        if type(stmt) is cst.Assign and len(stmt.targets) == 1:
            target = stmt.targets[0].target
        elif type(stmt) is cst.AugAssign:
            target = stmt.target
        else:
            return
        i = node.target.value
        if not (type(target) is cst.Subscript and len(target.slice) == 1
                and type(target.slice[0].slice) is cst.Index
                and type(target.slice[0].slice.value) is cst.Name and target.slice[0].slice.value.value == i):
            return
        name = dotted(target.value)
        if name is None or model.kind(target.value) != TENSOR or not _elementwise(stmt.value, i, name):
            return
        self.report(model, node, self.message.format(
            what=f"for {i} in range(...): {name}[{i}] = ...",
            instead=f"one expression on whole tensors (`{name} = ...` without the loop)"))


def _scalar_use(body, v: str) -> bool:
    """Whether a loop body reads its element as a Python number: `v.item()`, `float(v)`, `int(v)`, `bool(v)`."""
    for call in find_all(body, cst.Call):
        func = call.func
        if type(func) is cst.Attribute and func.attr.value in ("item", "tolist") \
                and type(func.value) is cst.Name and func.value.value == v:
            return True
        if type(func) is cst.Name and func.value in ("float", "int", "bool") and len(call.args) == 1 \
                and type(call.args[0].value) is cst.Name and call.args[0].value.value == v:
            return True
    return False


def _elementwise(expr, i: str, written: str) -> bool:
    """Arithmetic over names, numbers and `x[i]` only, never reading the written tensor at another index."""
    for n in find_all(expr, cst.CSTNode):
        if type(n) in (cst.Call, cst.Lambda, cst.Await, cst.Yield, cst.ListComp, cst.GeneratorExp):
            return False
        if type(n) is cst.Subscript and dotted(n.value) == written:
            index = n.slice[0].slice if len(n.slice) == 1 else None
            if not (type(index) is cst.Index and type(index.value) is cst.Name and index.value.value == i):
                return False
    return True
