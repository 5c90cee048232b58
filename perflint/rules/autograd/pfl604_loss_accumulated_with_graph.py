import libcst as cst

from perflint.model.names import dotted, method_name
from perflint.model.program import FileModel
from perflint.model.steps import OUTER, Steps
from perflint.rules.common import module_call, trains
from perflint.tree import find_all

from perflint.rule import Rule


# What leaves no graph behind: `loss.detach()`, a Python number (`.item()`, `float(loss)`), a host copy.
_DETACHING = {"detach", "item", "tolist", "float", "int", "cpu", "numpy"}


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in find_all(node, cst.Name)}


def _only_numbers(name: str, scope: cst.CSTNode) -> bool:
    """Whether every binding of `name` in the scope is a number or a detached value (`loss = 0.0`, `loss +=
    nll.data[0] / n`, `loss /= k`): an accumulator of what old code read through `.data`, with no graph."""
    bound = False
    for node in find_all(scope, (cst.Assign, cst.AugAssign)):
        targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
        if any(type(t) is cst.Name and t.value == name for t in targets):
            value = node.value if type(node) is cst.Assign else \
                cst.BinaryOperation(cst.Name(name), cst.Add(), node.value)  # `loss /= k`: `loss / k`
            if not _detached(value, name):
                return False
            bound = True
    return bound


def _detached(expr: cst.BaseExpression, name: str) -> bool:
    """A number, the accumulator itself, a read through `.data` (`nll.data[0]`), a detaching call, or
    arithmetic on one of these (by a plain name: `loss / plot_every`)."""
    kind = type(expr)
    if kind in (cst.Integer, cst.Float) or kind is cst.Name and expr.value == name:
        return True
    if kind is cst.Attribute:
        return expr.attr.value == "data"
    if kind is cst.Subscript:
        return _detached(expr.value, name)
    if kind is cst.Call:
        called = method_name(expr) or dotted(expr.func)
        return called in _DETACHING or called == "len"
    if kind is cst.UnaryOperation:
        return _detached(expr.expression, name)
    if kind is cst.BinaryOperation:  # `nll.data[0] / len(batch)`, `loss / plot_every`: not `nll / len(batch)`
        right = expr.right
        return _detached(expr.left, name) and (
            _detached(right, name) or type(right) in (cst.Name, cst.Attribute) and "loss" not in (dotted(right) or "loss"))
    return False


class LossAccumulatedWithGraph(Rule):
    code = "PFL604"
    call_names = frozenset({"append"})
    name = "loss-accumulated-with-graph"
    summary = "a training loop sums or collects the loss tensor itself, keeping every step's autograd graph alive"
    message = "`{target}` keeps a reference to `{value}` and with it this step's whole autograd graph; " \
              "accumulate `{value}.detach()` (or `.item()` once per log interval)"
    severity = "warning"
    proof_metric = "peak_memory"
    why = """
A loss tensor carries its `grad_fn`, which references every node of the step's graph. `total += loss`
builds a new graph node that points at the old total and the new loss, so the graphs of all steps stay
reachable until the total is dropped. When the accumulated value is never backpropagated (a held-out or
logging loss computed in the training loop, or any `retain_graph=True` graph) those graphs still hold
the tensors their backward would need, the activations, so memory grows with every step until the
process runs out. After a plain `loss.backward()` the saved tensors are already freed, and what stays is
the chain of graph nodes: host memory that grows over the epoch and is released at once at its end.
`losses.append(loss)` does the same.
"""
    example = """
total = 0.0
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss
"""
    instead = """
total = torch.zeros(())
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    total += loss.detach()
"""
    known_problems = """
Reports `acc += v`, `acc = acc + v` and `acc.append(v)` in a loop that trains (calls `.backward()` or an
optimizer step), where `v` is a name containing `loss`, or a direct model or loss call, and is not
detached. Quiet when the accumulator (or a value computed from it) is itself backpropagated later in the
function (gradient accumulation over micro-batches, `torch.stack(losses).mean().backward()`), when a loop
that trains, other than a loop over epochs, makes it anew each step (`losses = []` at the top of the step:
it holds one step's graphs at most; blind review 25 found three such findings, all wrong), under
`no_grad`, in a loop that does not train itself (an evaluation loop inside the epoch loop), and where the
loop rebinds the name to a detached value or a number first (`loss = loss.detach()`, `step_loss =
reduce(loss).item()`: blind review 29's four findings, all wrong), or where every binding of the collected
name is a number or a read through `.data` (`loss += nll.data[0] / n` in old code, then `losses.append(loss)`:
blind review 33's two findings, both wrong). It does not tell the two costs apart:
the reference pair shows the expensive one (a held-out loss that is never backpropagated keeps each
step's activations); for the backpropagated loss itself the retained graph nodes live outside the tensor
allocator, so no deterministic count shows them.
"""

    def _lossy(self, value: cst.BaseExpression, model: FileModel) -> bool:
        if type(value) is cst.Call:
            name = dotted(value.func) or ""
            return module_call(model, value) is not None or "loss" in name.rsplit(".", 1)[-1].lower() \
                or name.rsplit(".", 1)[-1] in ("criterion",)
        name = dotted(value)
        return name is not None and "loss" in name.rsplit(".", 1)[-1].lower() and model.kind(value) in (None, "tensor")

    def finish(self, model: FileModel) -> None:
        """Decided after the walk: which loops are steps and which run over epochs needs the whole file."""
        for node in model.nodes(cst.AugAssign):
            if type(node.operator) is cst.AddAssign:
                self._check(node, node.target, node.value, model)
        for node in model.nodes(cst.Assign):
            value = node.value
            if len(node.targets) == 1 and type(value) is cst.BinaryOperation and \
                    type(value.operator) is cst.Add and dotted(value.left) is not None and \
                    dotted(value.left) == dotted(node.targets[0].target):
                self._check(node, node.targets[0].target, value.right, model)
        for node in model.calls:
            func = node.func
            if type(func) is cst.Attribute and func.attr.value == "append" and len(node.args) == 1:
                self._check(node, func.value, node.args[0].value, model)

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression,
               model: FileModel) -> None:
        frame = model.frame_of(node)
        if frame.loop is None or frame.no_grad or not self._lossy(value, model):
            return
        loop = frame.loop.node  # the loop it runs in: an evaluation loop nested in the epoch loop does not train
        acc = dotted(target)
        if acc is None or not trains(model, loop) or self._detached_before(value, node, loop, model):
            return
        scope = model.def_of(frame) or model.module
        if type(value) is cst.Name and _only_numbers(value.value, scope):
            return  # `loss += nll.data[0]`, then `losses.append(loss)`: a sum of numbers, no graph
        if self._backpropagated(acc.split(".")[0], scope) or self._made_each_step(acc, frame, model):
            return
        self.report(model, node, self.message.format(target=acc, value=(dotted(value) or "the loss")))

    def _detached_before(self, value: cst.BaseExpression, node: cst.CSTNode, loop: cst.CSTNode,
                         model: FileModel) -> bool:
        """Whether the loop rebinds the collected name to a detached value before this line (`loss =
        loss.detach()`, `step_loss = reduce(loss).item()`): what is collected then holds no graph."""
        name = dotted(value)
        if name is None or type(value) is cst.Call:
            return False
        order = model.sites[node][1]
        for assign in find_all(loop, cst.Assign):
            if model.sites[assign][1] < order and any(dotted(t.target) == name for t in assign.targets) \
                    and type(assign.value) is cst.Call \
                    and (method_name(assign.value) or dotted(assign.value.func)) in _DETACHING:
                return True
        return False

    def _made_each_step(self, acc: str, frame, model: FileModel) -> bool:
        """Whether a loop around the accumulation that trains, other than a loop over epochs, also makes the
        accumulator anew (`losses = []` at the top of each step): what it collects is dropped with the step,
        graphs and all. (`loss_sum = 0` at the top of each epoch still chains the epoch's steps.)"""
        steps = Steps.of(model)
        for loop in frame.loops():
            if not trains(model, loop.node) or steps.loop_kind(loop).kind == OUTER:
                continue
            for assign in find_all(loop.node, cst.Assign):
                value = assign.value
                grows = type(value) is cst.BinaryOperation and dotted(value.left) == acc
                if not grows and any(dotted(t.target) == acc for t in assign.targets):
                    return True
        return False

    def _backpropagated(self, acc: str, scope: cst.CSTNode) -> bool:
        """Whether the accumulator, or a name computed from it, is backpropagated in the scope."""
        receivers: set[str] = set()
        for call in find_all(scope, cst.Call):
            if type(call.func) is cst.Attribute and call.func.attr.value == "backward":
                receivers |= _names(call.func.value)
            elif dotted(call.func) in ("torch.autograd.backward", "autograd.backward") and call.args:
                receivers |= _names(call.args[0].value)
        if acc in receivers:
            return True
        for assign in find_all(scope, cst.Assign):
            if acc in _names(assign.value) and any(_names(t.target) & receivers for t in assign.targets):
                return True
        return False
