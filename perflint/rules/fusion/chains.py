"""Chains of elementwise ops on tensors: one expression (`0.5 * x * (1 + torch.tanh(...))`) or several
statements whose intermediates feed only the next one (`std = (0.5 * logvar).exp(); z = mu + eps * std`).

In eager mode each op is a kernel that reads and writes the whole tensor; a compiler fuses a chain into
one. An op counts when one of its operands is a tensor with elements (not a 0-dim result of a reduction,
not a Python number): `loss = a.mean() + 0.1 * b.mean()` is arithmetic on scalars, not a chain. Ops that
are already fused (`addcmul`, `lerp`, `F.gelu`) count as one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted, factory_sizes, method_name
from perflint.model.program import FileModel, Frame
from perflint.model.values import ON_DEVICE, TENSOR, Values
from perflint.tree import find_all

_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide, cst.Modulo)
_COMPARE = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
_CASTS = api.CAST_METHODS | {"type_as"}
_REDUCTIONS = {"mean", "sum", "std", "var", "norm", "max", "min", "amax", "amin", "prod", "item", "logsumexp",
               "all", "any", "argmax", "argmin", "count_nonzero", "median"}
_NAMESPACES = ("torch", "torch.nn.functional", "torch.special")
MIN_OPS = 3
_JOINS = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack"}


@dataclass
class Chain:
    ops: int
    first: cst.CSTNode  # where the chain starts (its first statement's value, or the expression)
    root: cst.CSTNode  # the expression that ends it
    frame: Frame
    statements: list = field(default_factory=list)
    names: list = field(default_factory=list)  # ops' names, for the message
    hint: str = ""
    large: int = 0  # how many of its ops read an activation-sized tensor (not a reduction's result, a
    # parameter, a per-sample coefficient, an index grid): the full passes over memory it costs
    first_large: cst.CSTNode | None = None  # the first of those ops: where the chain is reported
    reduced: int = 0  # how many of its ops feed a reduction (`x.pow(2).mean()`): real passes even when the
    # chain's own result is one number


def chains(model: FileModel) -> list[Chain]:
    """The elementwise chains of a file with at least MIN_OPS ops (computed once)."""
    found = model._memo.get("elementwise-chains")
    if found is None:
        found = model._memo["elementwise-chains"] = _Finder(model).run()
    return found


class _Finder:
    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.values = Values.of(model)
        self.seen: set[cst.CSTNode] = set()
        self.pending: dict[cst.CSTNode, Chain] = {}  # assigned value -> its chain, until its one read
        self.loads: dict[str, list] | None = None
        self.sized: dict[cst.CSTNode, bool] = {}  # memo of _large
        self.short: dict[cst.CSTNode, Chain] = {}  # chains too short to report, by the expression they end in
        self.shape_only: set | None = None
        self.scalars: set | None = None  # bindings whose value is one number (see _scalar_bindings)

    def run(self) -> list[Chain]:
        model = self.model
        done: list[Chain] = []
        candidates = sorted(
            [n for t in (cst.BinaryOperation, cst.UnaryOperation) for n in model.nodes(t)]
            + [c for c in model.calls if self._elementwise_call(c) is not None],
            key=lambda n: model.sites[n][1])
        assignments = {a.value: a for a in model.nodes(cst.Assign) if len(a.targets) == 1}
        augmented = {a.value: a for a in model.nodes(cst.AugAssign)}
        for node in candidates:
            if node in self.seen:
                continue
            frame = model.sites[node][0]
            chain = Chain(0, node, node, frame)
            if not self._count(node, chain, frame):
                continue
            assign = assignments.get(node)
            aug = augmented.get(node)
            target = assign.targets[0].target if assign is not None else aug.target if aug is not None else None
            if self._scalar_target(target, frame) and chain.reduced < MIN_OPS:
                continue  # `gen_loss = cls_loss + lam * -disc_loss` then `gen_loss.backward()`: one number
            if aug is not None and isinstance(aug.operator, tuple(_AUG)) and self._tensor(aug.target):
                chain.ops += 1
                chain.names.append(_AUG_NAMES.get(type(aug.operator), "op"))
                if type(aug.target) is cst.Name:
                    self._absorb(aug.target, chain)
            if assign is not None and type(assign.targets[0].target) is cst.Name:
                name = assign.targets[0].target.value
                if self._reads_after(assign, frame, name) == 1:
                    chain.statements.append(assign)
                    self.pending[node] = chain
                    continue
            if chain.ops >= MIN_OPS:
                done.append(chain)
            else:
                self.short[node] = chain  # may yet feed a reduction that a later chain reads
        done.extend(c for c in self.pending.values() if c.ops >= MIN_OPS)
        done.sort(key=lambda c: model.sites[c.first][1])
        return done

    # ---- counting --------------------------------------------------------------------------------------
    def _count(self, node: cst.CSTNode, chain: Chain, frame: Frame) -> bool:
        """Add the elementwise ops of the tree under `node` to the chain; False if node is no such op."""
        op = self._op(node)
        if op is None:
            return False
        name, operands = op
        self.seen.add(node)
        if name in _CASTS:  # `.float()` of a float32 tensor launches nothing: not counted, but its receiver's
            if not self._count(operands[0], chain, frame) and type(operands[0]) is cst.Name:  # ops are
                self._absorb(operands[0], chain)  # the chain's
            return True
        if not any(self._array(o) for o in operands):
            for o in operands:  # scalar arithmetic: not an op, but its operands may hide one
                self._count(o, chain, frame)
            return True
        chain.ops += 1
        chain.names.append(name)
        if any(self._large(o) for o in operands):
            chain.large += 1
            self._first_large(chain, node)
        for operand in operands:
            if self._count(operand, chain, frame):
                continue
            # `x * torch.rsqrt(x.pow(2).mean(-1) + eps)`: the pow's whole output is written, then read again by
            # the mean; fused, the mean reads x itself. The ops under a reduction belong to the chain.
            inner = self._reduced(operand if type(operand) is not cst.Name else self.values.source(operand))
            if inner is not None and not self._rereads(inner, chain.root):
                inner = None
            before, ops = chain.large, chain.ops
            if inner is not None and (self._merge(self.pending.pop(inner, None) or self.short.pop(inner, None), chain)
                                      or inner not in self.seen and self._count(inner, chain, frame)):
                chain.large += chain.large > before
                chain.reduced += chain.ops - ops
                continue
            if type(operand) is cst.Name:
                self._absorb(operand, chain)
        return True

    def _same_data(self, node: cst.CSTNode, others: list) -> bool:
        """Whether a mask or condition is computed from the data it selects in (`m.masked_fill(m != 0, x)`)."""
        mine = _data_names(self, node)
        return any(mine & _data_names(self, o) for o in others)

    def _rereads(self, inner: cst.CSTNode, root: cst.CSTNode) -> bool:
        """Whether the chain that uses a reduction's result reads again the data that was reduced (`x * rsqrt(
        x.pow(2).mean(-1) + eps)`, `logits - logsumexp(logits + m)`): fused, one kernel reads it once. Not
        when the chain works on other data (`addmm(...).add_(x.pow(2).sum(-1))`) or on reductions alone
        (`(a * w).sum(1) - (b * w).sum(1)`)."""
        return bool(_data_names(self, inner) & _data_names(self, root))

    def _reduced(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """For a reduction (`a.mean(-1)`, `torch.sum(a)`), what it reduces."""
        if type(node) is not cst.Call:
            return None
        method = method_name(node)
        qual = self.model.qualname(node.func) or ""
        if method in _REDUCTIONS and not qual:
            inner = node.func.value
        elif qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in _REDUCTIONS and node.args:
            inner = node.args[0].value
        else:
            return None
        return self.values.source(inner) or inner if type(inner) is cst.Name else inner

    def _absorb(self, name: cst.Name, chain: Chain) -> None:
        """A name whose value an earlier chain computed, read only here: that chain continues into this."""
        source = self.values.source(name)
        self._merge(self.pending.pop(source, None) if source is not None else None, chain)

    def _merge(self, earlier: Chain | None, chain: Chain) -> bool:
        if earlier is not None:
            chain.ops += earlier.ops
            chain.names = earlier.names + chain.names
            chain.large += earlier.large
            chain.reduced += earlier.reduced
            if earlier.first_large is not None:
                self._first_large(chain, earlier.first_large)
            if self.model.sites[earlier.first][1] < self.model.sites[chain.first][1]:
                chain.first = earlier.first
            chain.statements = earlier.statements + chain.statements
        return earlier is not None

    def _first_large(self, chain: Chain, node: cst.CSTNode) -> None:
        sites = self.model.sites
        if chain.first_large is None or sites[node][1] < sites[chain.first_large][1]:
            chain.first_large = node

    def _op(self, node: cst.CSTNode):
        """(name, operands) when node is an elementwise op on something that may be a tensor."""
        if type(node) is cst.BinaryOperation and type(node.operator) in _OPERATORS:
            return _BINARY_NAMES.get(type(node.operator), "op"), [node.left, node.right]
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
            return "neg", [node.expression]
        if type(node) is cst.Comparison and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) in _COMPARE:
            return "compare", [node.left, node.comparisons[0].comparator]
        if type(node) is cst.Call:
            return self._elementwise_call(node)
        return None

    def _elementwise_call(self, call: cst.Call):
        model = self.model
        qual = model.qualname(call.func)
        args = [a.value for a in call.args if a.keyword is None and not a.star]
        if qual is not None:
            head, _, last = qual.rpartition(".")
            if head in _NAMESPACES and last in api.ELEMENTWISE:
                if last == "where" and len(args) == 3 and not self._same_data(args[0], args[1:]):
                    return last, args[1:]  # `torch.where(adj > 0, e, fill)`: the condition is other data
                return last, args
            if qual in ("torch.max", "torch.min") and len(args) == 2 and type(args[1]) is not cst.Integer:
                return last, args
            return None
        method = method_name(call)
        if method is None:
            return None
        base = method[:-1] if method.endswith("_") and not method.endswith("__") else method
        if base in api.ELEMENTWISE or base in _CASTS and base != "type_as" or base == "masked_fill":
            receiver = call.func.value
            v = self.values.value(receiver)
            if v.kind == TENSOR or v.kind is None and (v.device == ON_DEVICE or self._op(receiver) is not None):
                if base == "masked_fill" and args and not self._same_data(args[0], [receiver]):
                    return base, [receiver]  # `x.masked_fill(pad_mask == 0, 0)`: the mask is other data
                return base, [receiver, *args]  # `m.masked_fill(m != 0, -100.0)`: one chain on m
        return None

    # ---- shapes -------------------------------------------------------------------------------------------
    def _array(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """A tensor with elements: not a number, not the 0-dim result of a reduction."""
        if type(node) in (cst.Integer, cst.Float):
            return False
        if type(node) is cst.Call:
            method = method_name(node)
            if method in _REDUCTIONS and not any(a.keyword is not None and a.keyword.value in ("dim", "axis")
                                                 or a.keyword is None for a in node.args):
                return False
            qual = self.model.qualname(node.func) or ""
            last = qual.rsplit(".", 1)[-1]
            if qual.startswith("torch.") and (last in _REDUCTIONS or last in ("quantile", "nanquantile")) \
                    and _whole(node, 2 if last.endswith("quantile") else 1):
                return False  # `torch.std(x, unbiased=True)`, `torch.quantile(x, 0.75)`: no dim, one number
            if qual in ("torch.tensor", "torch.as_tensor") and node.args \
                    and type(node.args[0].value) in (cst.List, cst.Tuple, cst.Integer, cst.Float):
                return False  # a constant of a few elements
            if _a_loss(node):
                return False  # `F.mse_loss(a, b)`, `criterion(out, y)`: 0-dim with the default reduction
            if qual in api.LIKE_FACTORIES and node.args and depth < 3 and self._zero_dim(node.args[0].value):
                return False  # `torch.ones_like(count)` of a reduction's 0-dim result
        if type(node) is cst.Name and depth < 3:
            reaching = self.values.reaching_bindings(node) or []
            scalars = self._scalar_bindings()
            if reaching and scalars and all(b in scalars for b in reaching):
                return False  # a loss this function calls `.backward()` on: one number
            if reaching and all(b.how in ("assign", "walrus") and not b.path for b in reaching):  # sources()
                return any(self._array(b.value, depth + 1) for b in reaching)
            if reaching and all(b.how == "assign" and b.path in ((), (0,)) and type(b.value) is cst.Call
                                and _a_loss(b.value) for b in reaching):
                return False  # `loss_gen, per_scale = generator_loss(outputs)`: a loss comes first
        op = self._op(node) if depth < 4 else None
        if op is not None:
            return any(self._array(o, depth + 1) for o in op[1])
        v = self.values.value(node)
        return v.kind == TENSOR or v.kind is None and v.device == ON_DEVICE

    def _scalar_bindings(self) -> set:
        """Bindings whose value is one number because the code needs it so: `x.backward()` without a
        gradient, `x.item()`, `autograd.grad(x, params)` raise on a tensor of several elements, so every
        binding of `x` that reaches them holds a single number."""
        if self.scalars is None:
            self.scalars = set()
            for call in self.model.calls:
                method = method_name(call)
                if method in ("backward", "item") and not call.args:
                    target = call.func.value
                elif (self.model.qualname(call.func) or "") in ("torch.autograd.grad", "torch.autograd.backward") \
                        and 0 < sum(a.keyword is None for a in call.args) <= 2 \
                        and not any(a.keyword is not None and a.keyword.value in ("grad_outputs", "grad_tensors")
                                    or a.star for a in call.args):
                    target = call.args[0].value
                else:
                    continue
                if type(target) is cst.Name:
                    self.scalars.update(self.values.reaching_bindings(target) or ())
        return self.scalars

    def _scalar_target(self, target: cst.CSTNode | None, frame: Frame) -> bool:
        """Whether an assignment's target binding holds one number (see _scalar_bindings)."""
        if type(target) is not cst.Name:
            return False
        return any(b.target is target for b in frame.scope.bindings.get(target.value, ())
                   if b in self._scalar_bindings())

    def _zero_dim(self, node: cst.CSTNode) -> bool:
        """The 0-dim result of a whole-tensor reduction (`(t != pad).sum()`), or a name holding only that."""
        sources = self.values.sources(node) if type(node) is cst.Name else [node]
        return bool(sources) and all(type(s) is cst.Call and not self._array(s) and (
            method_name(s) in _REDUCTIONS or (self.model.qualname(s.func) or "").rsplit(".", 1)[-1] in _REDUCTIONS)
            for s in sources)

    def _large(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Whether a tensor has as many elements as the data a step works on: not the 0-dim or pooled output
        of a reduction, not a module's parameter or buffer (`self.weight`, a per-channel vector), not an index
        or coordinate grid (`torch.arange`, `linspace`, `meshgrid`). Unknown tensors count as large."""
        found = self.sized.get(node)
        if found is None:
            self.sized[node] = False  # a cycle through names says nothing
            found = self.sized[node] = self._large_uncached(node, depth)
        return found

    def _large_uncached(self, node: cst.CSTNode, depth: int) -> bool:
        if type(node) in (cst.Integer, cst.Float):
            return False
        if depth > 12:
            return self._array(node)  # too far to follow: what the value looks like here
        if type(node) is cst.Name:
            sources = self.values.sources(node)
            if sources:
                return any(self._large(s, depth + 1) for s in sources)
            reaching = self.values.reaching_bindings(node) or []
            found = self._bound_values(reaching)
            if found:
                return any(self._large(v, depth + 1) for v in found)
            if reaching and all(b.how == "param" for b in reaching):  # passed in from elsewhere: unknown
                return self.values.value(node).kind in (TENSOR, None)  # tensors count as large
            return self._array(node)
        if type(node) is cst.Attribute:
            if type(node.value) is cst.Name and node.value.value == "self":
                return False  # a parameter, a buffer or a constant of the module
            return self._array(node)
        if type(node) is cst.Subscript:
            return self._large(node.value, depth + 1)
        if type(node) is cst.Call:
            method = method_name(node)
            qual = self.model.qualname(node.func) or ""
            last = qual.rsplit(".", 1)[-1] if qual else method or ""
            if last in _REDUCTIONS or last in _GRIDS:
                return False
            sizes = factory_sizes(qual, node)
            if sizes and _batch_size(sizes[0]) and all(_few(d) for d in sizes[1:]):
                return False  # `torch.randn((b,), device=d)`, `torch.rand([b, 2])`: a few numbers per sample
            if _a_loss(node):
                return False  # `criterion(out, y)`, `self.loss_fn(...)`: a 0-dim loss
            if method in ("view", "reshape") and _per_sample_shape(node):
                return False  # `out.reshape(b, *((1,) * (x.ndim - 1)))`: one number per sample
            if method in ("view", "reshape", "flatten", "permute", "transpose", "contiguous", "expand", "float",
                          "half", "to", "type_as", "unsqueeze", "squeeze", "detach", "clone", "repeat"):
                return self._large(node.func.value, depth + 1)
            helper = self.values.callee(node)
            if helper is not None and helper.returns and helper.name != "__init__" and not helper.yields:
                return any(self._large(r, depth + 1) for r in helper.returns)  # a helper of this file
            if qual in _JOINS and node.args and type(node.args[0].value) in (cst.List, cst.Tuple):
                return any(self._large(e.value, depth + 1) for e in node.args[0].value.elements)  # `cat([a, a])`
        op = self._op(node)
        if op is not None:
            return any(self._large(o, depth + 1) for o in op[1])
        if type(node) is cst.Call:
            args = [a.value for a in node.args if not a.star]
            if args and all(self._array(a) for a in args[:1]):
                return any(self._large(a, depth + 1) for a in args)
        return self._array(node)

    def _bound_values(self, reaching: list) -> list[cst.CSTNode] | None:
        """The expressions a name may hold, from the bindings that reach it, where sources() does not say: an
        element of an unpacked tuple (`a, b = x * 2, t`; `mean, var = self.stats(x)` through the helper's
        returns) or what the call sites of this file pass for a parameter. None where any leaves it unknown."""
        if not reaching:
            return None
        out: list[cst.CSTNode] = []
        for b in reaching:
            if b.how in ("assign", "walrus") and len(b.path) == 1 and isinstance(b.path[0], int):
                value = b.value
                tuples = [value] if type(value) in (cst.Tuple, cst.List) else None
                if tuples is None and type(value) is cst.Call:
                    if self._reduction(value):  # `values, indices = torch.min(q, dim=1, keepdim=True)`
                        out.append(value)
                        continue
                    helper = self.values.callee(value)
                    if helper is not None and helper.returns and not helper.yields:
                        tuples = helper.returns
                if not tuples or not all(type(t) in (cst.Tuple, cst.List) and len(t.elements) > b.path[0]
                                         and not any(type(e) is cst.StarredElement for e in t.elements)
                                         for t in tuples):
                    return None
                out.extend(t.elements[b.path[0]].value for t in tuples)
            elif b.how == "param":
                found = self.values.arguments(b.value, b.target)
                if not found:
                    return None
                out.extend(found)
            else:
                return None
        return out

    def _reduction(self, call: cst.Call) -> bool:
        """`torch.min(q, dim=1)`, `q.max(1)`."""
        qual = self.model.qualname(call.func)
        if qual is None:
            return method_name(call) in _REDUCTIONS
        return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in _REDUCTIONS

    def _tensor(self, node: cst.CSTNode) -> bool:
        return self.values.value(node).kind == TENSOR

    def _reads_after(self, assign: cst.Assign, frame: Frame, name: str) -> int:
        """How often the value this assignment gives `name` is read: the loads of `name` in the same scope
        after it and before the next assignment to `name`, leaving out reads of its shape or type only
        (`x.shape`, `torch.randn_like(x)`)."""
        target = assign.targets[0].target
        bindings = frame.scope.bindings.get(name, [])
        mine = next((b for b in bindings if b.target is target), None)
        if mine is None:
            return 2
        later = [b.order for b in bindings if b.order > mine.order]
        end = min(later) if later else float("inf")
        sites, scope, shape_only = self.model.sites, frame.scope, self._shape_only()
        stores = {b.target for b in bindings}
        count = 0
        for node in self._loads().get(name, ()):
            frame, order = sites[node]
            if mine.order < order < end and frame.scope is scope and node not in shape_only and node not in stores:
                count += 1
        return count

    def _loads(self) -> dict[str, list]:
        """Every Name of the file by its text."""
        if self.loads is None:
            self.loads = loads = {}
            for node in self.model.nodes(cst.Name):
                found = loads.get(node.value)
                if found is None:
                    loads[node.value] = [node]
                else:
                    found.append(node)
        return self.loads

    def _shape_only(self) -> set:
        """Names read only for their shape or type: `x.shape`, `x.size()`, `torch.randn_like(x)`."""
        if self.shape_only is None:
            self.shape_only = {a.value for a in self.model.nodes(cst.Attribute)
                               if a.attr.value in _SHAPE_ATTRS and type(a.value) is cst.Name}
            for call in self.model.calls:
                if call.args and type(call.args[0].value) is cst.Name \
                        and (self.model.qualname(call.func) or "").endswith("_like"):
                    self.shape_only.add(call.args[0].value)
        return self.shape_only


def _per_sample_shape(call: cst.Call) -> bool:
    """`.view(b, 1, 1, 1)`, `.reshape(b, *((1,) * (n - 1)))`: a shape of ones after the first dimension."""
    rest = call.args[1:]
    if not rest:
        return False
    for arg in rest:
        value = arg.value
        if arg.star:
            while type(value) is cst.BinaryOperation and type(value.operator) is cst.Multiply:
                value = value.left
            if not (type(value) is cst.Tuple and len(value.elements) == 1):
                return False
            value = value.elements[0].value
        if not (type(value) is cst.Integer and value.value == "1"):
            return False
    return True


def _data_names(finder: "_Finder", node: cst.CSTNode, depth: int = 0) -> set:
    """The names whose data an expression reads through elementwise ops only (`(x - mean)` -> {x, mean};
    nothing through a matmul or a reduction)."""
    if type(node) is cst.Name:  # the value it holds here: `y = y.square().mean(0)` is other data than y
        reaching = finder.values.reaching_bindings(node)
        return {id(b) for b in reaching} if reaching else {node.value}
    if type(node) is cst.Attribute:
        name = dotted(node)
        return {name} if name else set()
    op = finder._op(node) if depth < 8 else None
    if op is None:
        return set()
    return set().union(*(_data_names(finder, o, depth + 1) for o in op[1]))


def _whole(call: cst.Call, positional: int) -> bool:
    """A reduction over the whole tensor: no `dim`/`axis` keyword and at most `positional` positional
    arguments (`torch.std(x, unbiased=True)`, `torch.quantile(x, q)`)."""
    if any(a.keyword is not None and a.keyword.value in ("dim", "axis") or a.star for a in call.args):
        return False
    return sum(a.keyword is None for a in call.args) <= positional


def _a_loss(call: cst.Call) -> bool:
    """A call of a loss (`F.mse_loss`, `criterion`, `self.loss_fn`) that reduces to one number (not
    `reduction="none"`)."""
    callee = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
    if not any(w in callee for w in api.LOSS_WORDS):
        return False
    reduction = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "reduction"), None)
    return not (type(reduction) is cst.SimpleString and reduction.evaluated_value == "none")


def _few(node: cst.CSTNode) -> bool:
    """A literal dimension of at most 4 (a flag, a 2-D offset, an RGBA gain)."""
    try:
        return type(node) is cst.Integer and int(node.value, 0) <= 4
    except ValueError:
        return False


def _batch_size(node: cst.CSTNode) -> bool:
    """`b`, `bs`, `batch_size`, `self.batch_size`, `x.shape[0]`, `x.size(0)`, `len(x)`."""
    if type(node) is cst.Subscript and type(node.value) is cst.Attribute and node.value.attr.value == "shape":
        index = node.slice[0].slice if len(node.slice) == 1 else None
        return type(index) is cst.Index and type(index.value) is cst.Integer and index.value.value == "0"
    if type(node) is cst.Call:
        if method_name(node) == "size":
            return len(node.args) == 1 and type(node.args[0].value) is cst.Integer and node.args[0].value.value == "0"
        return dotted(node.func) == "len"
    name = (dotted(node) or "").rsplit(".", 1)[-1].lower()
    return name in ("b", "bs", "n_batch", "nbatch") or "batch" in name and "batches" not in name


_GRIDS = {"arange", "linspace", "logspace", "meshgrid", "eye", "tril_indices", "triu_indices"}
_SHAPE_ATTRS = {"shape", "size", "device", "dtype", "ndim", "dim"}


_BINARY_NAMES = {cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.Power: "pow",
                 cst.FloorDivide: "floordiv", cst.Modulo: "mod"}
_AUG = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign, cst.PowerAssign)
_AUG_NAMES = {cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul",
              cst.DivideAssign: "div", cst.PowerAssign: "pow"}


def _self_gated(model: FileModel, root: cst.CSTNode) -> bool:
    """`x * torch.sigmoid(x)` (SiLU): the sigmoid's argument is the operand it multiplies, not another tensor
    (`conv(x) * torch.sigmoid(gate(x) + h)` is a gate, which `F.silu` would change)."""
    def code(node: cst.CSTNode) -> str:
        bare = node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node
        return " ".join(model.module.code_for_node(bare).split())

    for node in find_all(root, cst.BinaryOperation):
        if type(node.operator) is not cst.Multiply:
            continue
        for gate, other in ((node.left, node.right), (node.right, node.left)):
            if type(gate) is cst.Call and (dotted(gate.func) or "").rsplit(".", 1)[-1] == "sigmoid":
                inner = gate.args[0].value if gate.args else gate.func.value if type(gate.func) is cst.Attribute \
                    else None
                if inner is not None and code(inner) == code(other):
                    return True
    return False


def _times_input(root: cst.CSTNode, gate: str) -> bool:
    """Whether the chain multiplies its input by the gate (`0.5 * x * (1 + tanh(c * (x + ...)))`, a GELU),
    rather than returning the gate itself (`0.5 * (1 + tanh(...))`, a normal CDF): a name read inside the
    gate's call is read outside it too."""
    calls = [c for c in find_all(root, cst.Call) if (dotted(c.func) or "").rsplit(".", 1)[-1] == gate]
    if not calls:
        return False
    inside = {n for c in calls for a in c.args for n in find_all(a.value, cst.Name)}
    callees = {c.func.value if type(c.func) is cst.Attribute else c.func for c in find_all(root, cst.Call)}
    outside = {n.value for n in find_all(root, cst.Name) if n not in inside and n not in callees}  # not `th`
    return bool({n.value for n in inside} & outside)  # in `th.tanh(...)`: a module, not data


def hint(model: FileModel, chain: Chain) -> str:
    """A fused op that does this chain, when one is known; else `torch.compile`."""
    names = set(chain.names)
    floats = {n.value for n in find_all(chain.root, cst.Float)}
    if "tanh" in names and any(f.startswith("0.0447") for f in floats) and _times_input(chain.root, "tanh"):
        return '`F.gelu(x, approximate="tanh")`'  # x * Φ(x); Φ(x) alone (a normal CDF) is no GELU
    if "relu6" in names:
        return "`F.hardswish` / `F.hardsigmoid`"
    if "sigmoid" in names and "mul" in names and len(names) <= 3 and _self_gated(model, chain.root):
        return "`F.silu`"
    if "erf" in names:
        return "`F.gelu`" if _times_input(chain.root, "erf") else "`torch.special.ndtr`"
    if names <= {"mul", "add", "sub"} and chain.ops <= 4:
        return "`torch.addcmul` or `torch.lerp` where they fit, or `torch.compile`"
    return "`torch.compile` on the function (or the model)"
