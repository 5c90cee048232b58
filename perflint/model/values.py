"""What a value is and where it lives, inferred from the code around it, with the evidence.

`value_of(model, node)` follows names to their bindings (the last one before the use, in file order;
every branch that may have set it), function parameters to the arguments at the call sites this file
shows, and calls to what the PyTorch API (or the file's own functions) return. A `Value` has a kind
(tensor, ndarray, module, loader, ...), for tensors and modules a device (on the device, on the host,
or unknown) and `why`: the few places that decided it, most telling first, which findings show as
evidence. Unknown is an answer: rules report nothing on what the model cannot see.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass, replace

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted, int_value, keyword, method_name, positional, string_value
from perflint.model.program import Binding, ClassInfo, FileModel, FunctionInfo, Frame
from perflint.model.project import OPTION_HOLDER_ENDINGS, OPTION_HOLDERS

# Kinds.
TENSOR = "tensor"
NDARRAY = "ndarray"
NUMBER = "number"  # a Python (or numpy) scalar
MODULE = "module"
LOADER = "loader"
OPTIMIZER = "optimizer"
DEVICE = "device"  # a device object or string (its `device` says which side)
FUNCTION = "function"
OTHER = "other"  # something known not to be any of the above (a string, a list, None)
# Where a tensor or module lives.
ON_DEVICE = "device"
ON_HOST = "host"

Why = tuple  # (text, node): "{}" in the text is replaced by the node's code, "L<n>" by its line


@dataclass(frozen=True)
class Value:
    kind: str | None = None
    device: str | None = None
    why: tuple = ()  # evidence for the kind and the device, most telling first
    items: tuple | None = None  # the elements of a tuple or list, when known
    element: "Value | None" = None  # what iterating it gives, when known
    origin: cst.CSTNode | None = None  # for a host tensor: the call that made it there (factory, constructor)
    loader: cst.CSTNode | None = None  # for a loader or a batch from one: the loader's expression
    function: FunctionInfo | None = None
    cls: ClassInfo | None = None

    @property
    def on_device(self) -> bool:
        return self.device == ON_DEVICE

    @property
    def is_tensor(self) -> bool:
        return self.kind == TENSOR


UNKNOWN = Value()
NO_DEFAULT = object()  # `default_of`: the code does not say
# Parameters of `forward` that hold tensors, besides the first (`def forward(self, x, mask=None, size=None)`).
_TENSOR_INPUTS = {"x", "input", "inputs", "input_ids", "hidden", "hidden_states", "h", "q", "k", "v", "query", "key",
                  "value", "mask", "attn_mask", "attention_mask", "feat", "feats", "features", "src", "tgt", "memory",
                  "img", "imgs", "image", "images", "target", "targets", "labels", "logits", "pos", "emb", "z", "t",
                  "timesteps", "noise", "obs", "state", "states", "action", "actions", "y", "context"}
# Callables that hand back what they are given, for iterating: progress bars, loggers, prefetchers.
_PASS_THROUGH = {"tqdm", "log_every", "track", "progress_bar", "prefetch", "cycle", "iter"}
# Helpers of other packages that take a module and give it back wrapped: `parallelize_module`, `fully_shard`.
_MODULE_WRAPPING = ("parallel", "shard", "wrap", "fsdp", "ddp", "convert", "prepare", "replicate", "to_device")
NUMBER_VALUE = Value(NUMBER)
OTHER_VALUE = Value(OTHER)
SIZE_VALUE = Value(OTHER, element=NUMBER_VALUE)  # `x.shape`, `x.size()`: indexing or iterating gives numbers
_MAX_WHY = 4
# A method named as a yes-or-no question: on a module or another object (not a tensor, whose `is_nonzero()`
# reads the device), it answers with a Python bool.
_PREDICATE = re.compile(r"(?:should|is|has|can)_[a-z]")
# Methods of text (and a tokenizer's decoding into it) that no tensor has: what they give is on the host, and
# what they are called on is no tensor.
_TEXT_METHODS = frozenset({"batch_decode", "startswith", "endswith", "strip", "lstrip", "rstrip", "splitlines",
                           "lower", "upper"})  # (not `encode`: an autoencoder's `model.encode(x)` gives a tensor)
# A function that gives a model (`accelerator.unwrap_model`, `get_model`), not a model by its name.
_MODEL_GETTER = re.compile(r"(?:get|build|load|create|make|unwrap|init|setup|prepare|wrap)_\w*model$")


def _why(*items) -> tuple:
    """Evidence items, duplicates dropped, at most a few."""
    out, seen = [], set()
    for item in items:
        if item is None:
            continue
        for why in (item if isinstance(item, tuple) and item and isinstance(item[0], tuple) else (item,)):
            if why and why[1] not in seen:
                seen.add(why[1])
                out.append(why)
    return tuple(out[:_MAX_WHY])


def _built_object(v: Value) -> bool:
    """A module, or what a class of another file builds (`AFN(field_dims)`: a module once the code moves it)."""
    if v.kind == MODULE:
        return True
    origin = v.origin
    return v.kind is None and type(origin) is cst.Call and (dotted(origin.func) or "a").rsplit(".", 1)[-1][:1].isupper()


def join(values: list[Value]) -> Value:
    """What a name holds when several bindings may reach a use: the kind they agree on (ignoring
    unknowns), on the device if any path puts it there (the code's intended run is the one on the GPU),
    on the host only if every path does."""
    values = [v for v in values if v is not None]
    if not values:
        return UNKNOWN
    if len(values) == 1:
        return values[0]
    kinds = {v.kind for v in values} - {None}
    kind = kinds.pop() if len(kinds) == 1 else None
    devices = {v.device for v in values}
    device = ON_DEVICE if ON_DEVICE in devices else (ON_HOST if devices == {ON_HOST} else None)
    pick = next((v for v in values if v.kind == kind and v.device == device), values[0])
    origin = pick.origin if device == ON_HOST else None
    if kind in (MODULE, None):  # built in two branches (`if pretrained: ... else: ...`): the first one
        first = next((v.origin for v in reversed(values) if v.origin is not None), None)  # latest first
        origin = pick.origin or first if kind == MODULE else first
    return Value(kind, device, pick.why if kind is not None or device is not None else (),
                 pick.items if all(v.items == pick.items for v in values) else None,
                 pick.element, origin, pick.loader, pick.function, pick.cls)


def named_only(v: Value) -> bool:
    """A tensor of unknown place known to be a tensor only by its name (`preds`, `outputs` bound nowhere the
    model sees): too weak to claim a device wait or copy on."""
    return v.kind == TENSOR and v.device is None and bool(v.why) and v.why[0][0] == "`{}` (by its name)"


_NO_CUT = 1 << 30
_ORDER = {cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge, cst.LessThan: operator.lt,
          cst.LessThanEqual: operator.le}


def given_to(info: FunctionInfo, param: cst.Param, call: cst.Call):
    """What `call` gives a parameter of the function it calls: the argument (by name or by position), or the
    parameter's default where the call leaves it out (None where it has none); NO_DEFAULT where `*args` or
    `**kwargs` may give it. A parameter given by name keeps that value beside them: Python refuses a second
    one (AnimateDiff's `main(use_wandb=args.wandb, **config)`)."""
    name = param.name.value
    arg = keyword(call, name)
    if arg is None and any(a.star for a in call.args):
        return NO_DEFAULT
    names = info.positional()
    if arg is None and name in names:
        arg = positional(call, names.index(name))
    return arg.value if arg is not None else param.default


def compare(op: cst.BaseCompOp, left, right) -> bool | None:
    """`left <op> right` of two known values (`args.sample_every > 0` with a default of 0); None where Python
    cannot compare them or the operator is not one of these."""
    try:
        if type(op) in (cst.Equal, cst.NotEqual):
            return (left == right) == (type(op) is cst.Equal)
        if type(op) in (cst.In, cst.NotIn):
            return (left in right) == (type(op) is cst.In)
        if type(op) in (cst.Is, cst.IsNot):
            return (left is right) == (type(op) is cst.Is)
        order = _ORDER.get(type(op))
        return order(left, right) if order is not None else None
    except TypeError:
        return None


class Values:
    """The value questions of one file, cached on its model."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.memo: dict = {}
        self.active: dict = {}  # question -> its depth on the stack of questions being answered
        self.cut = _NO_CUT  # the shallowest depth a cycle was cut at, in the question being answered
        # Answers not memoised because a cycle was cut above them, kept until the outermost question is
        # answered: asked again within it, they are not recomputed (the recomputation is exponential where
        # many functions and tuples refer to each other: a 2,600-line Hugging Face model file took minutes).
        self.provisional: dict = {}
        self._callers: dict[FunctionInfo, list[cst.Call]] | None = None

    @staticmethod
    def of(model: FileModel) -> "Values":
        """The file's value questions, cached on the model (answers given during the walk are dropped when
        it ends: `FileModel.walked`)."""
        values = model._memo.get("values")
        if values is None:
            values = model._memo["values"] = Values(model)
        return values

    # ---- entry point ----------------------------------------------------------------------------------
    def value(self, node: cst.CSTNode) -> Value:
        found = self.memo.get(node)
        if found is not None:
            return found
        return self._answer(node, self._value, node)

    def _answer(self, key, compute, arg) -> Value:
        """compute(arg), memoised unless a cycle was cut at a question still open above it (x = f(x) in a
        loop: the inner question says nothing). Such an answer depends on where the questions started,
        so it is not kept: every answer is the same whichever rule asks first."""
        depth = self.active.get(key)
        if depth is not None:
            self.cut = min(self.cut, depth)
            return UNKNOWN
        found = self.provisional.get(key)
        if found is not None:  # depends on where the outermost question started: so does what is built on it
            self.cut = 0
            return found
        depth = self.active[key] = len(self.active)
        outer, self.cut = self.cut, _NO_CUT
        try:
            result = compute(arg)
        finally:
            del self.active[key]
            cut, self.cut = self.cut, outer
            if not depth:
                self.provisional.clear()
        if cut >= depth:
            self.memo[key] = result
        else:
            self.cut = min(outer, cut)
            self.provisional[key] = result
        return result

    def _site(self, node: cst.CSTNode) -> tuple[Frame, int]:
        site = self.model.sites.get(node)
        return site if site is not None else (self.model.frame, self.model.order)

    def _value(self, node: cst.CSTNode) -> Value:
        kind = type(node)  # not isinstance: an ABC check is a Python call, and every node type here is concrete
        if kind is cst.Name:
            found = self.name(node.value, node)
            test = self._rules_out_a_tensor(node) if found.kind == TENSOR else None
            return Value(NDARRAY, ON_HOST, (("not a tensor here: `{}`", test),)) if test is not None else found
        if kind is cst.Attribute:
            return self.attribute(node)
        if kind is cst.Call:
            return self.call(node)
        if kind is cst.BinaryOperation:
            if type(node.operator) is cst.MatrixMultiply:
                return self.combine(node, [node.left, node.right], keep_origin=False)
            return self.combine(node, [node.left, node.right])
        if kind is cst.UnaryOperation:
            if type(node.operator) is cst.Not:
                return NUMBER_VALUE
            return self.value(node.expression)
        if kind is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in node.comparisons):
                return NUMBER_VALUE
            return self.combine(node, [node.left, *(c.comparator for c in node.comparisons)], keep_origin=False,
                                numbers=True)
        if kind is cst.BooleanOperation:
            return join([self.value(node.left), self.value(node.right)])
        if kind is cst.Subscript:
            return self.subscript(node)
        if kind in (cst.Integer, cst.Float, cst.Imaginary):
            return NUMBER_VALUE
        if kind in (cst.SimpleString, cst.FormattedString):
            device, why = self.device_of(node)  # "cuda:0", f"cuda:{rank}": a device, written as a string
            return Value(DEVICE, device, why) if device is not None else OTHER_VALUE
        if kind in (cst.ConcatenatedString, cst.Dict, cst.DictComp, cst.Set, cst.SetComp, cst.Lambda):
            return OTHER_VALUE
        if kind in (cst.Tuple, cst.List):
            items = tuple(self.value(e.value) if type(e) is not cst.StarredElement else UNKNOWN
                          for e in node.elements)
            return Value(OTHER, items=items, element=join(list(items)) if items else None)
        if kind in (cst.ListComp, cst.GeneratorExp):
            return Value(OTHER, element=self.value(node.elt))
        if kind is cst.IfExp:
            return join([self.value(node.body), self.value(node.orelse)])
        if kind is cst.NamedExpr:
            return self.value(node.value)
        return UNKNOWN

    # ---- names ------------------------------------------------------------------------------------------
    def name(self, name: str, node: cst.CSTNode) -> Value:
        frame, order = self._site(node)
        if name in ("True", "False"):
            return NUMBER_VALUE
        if name == "None":
            return UNKNOWN  # a placeholder (`model = None` until built): says nothing of what comes later
        return self.named(name, node, frame, order)

    def named(self, name: str, node: cst.CSTNode, frame: Frame, order: int) -> Value:
        """The value of a name at a place; where the bindings say nothing of its kind, what the name says
        (`model = build(...)`: a module, built by that call)."""
        found = self.lookup(name, frame, order)
        if found is None:
            return self.guess(name, node)
        if found.kind is None:
            guessed = self.guess(name, node)
            if guessed.kind is not None and guessed.kind != LOADER:
                return replace(found, kind=guessed.kind)
        return found

    def lookup(self, name: str, frame: Frame, order: int) -> Value | None:
        """The value of `name` as seen at (frame, order): the bindings of the innermost scope that binds it."""
        bindings = self.reaching(name, frame, order)
        return None if bindings is None else join([self.binding(b) for b in bindings])

    def reaching(self, name: str, frame: Frame, order: int) -> list[Binding] | None:
        """The bindings of `name` that may be the one seen at (frame, order), from the innermost scope that
        binds it; None where no scope does."""
        scope = frame.scope
        first, same_time = True, True
        while scope is not None:
            if scope.kind == "class" and not first:
                scope = scope.parent
                continue
            if name in scope.globals:
                scope, first, same_time = self.model.module_scope, False, False
                continue
            bindings = scope.bindings.get(name)
            if bindings:
                return _reaching(bindings, frame, order if same_time else None)
            if scope.kind in ("function", "lambda"):
                same_time = False  # an enclosing scope's names are read when the function runs: later
            scope = scope.parent
            first = False
        return None

    def source(self, node: cst.CSTNode, unpacked: bool = False) -> cst.CSTNode | None:
        """For a name, the expression its binding assigned (`b_inds[start:end]` for `mb_inds`), where a
        finding about the value belongs: the one binding that reaches, or the one under an `if` over the
        value before it. None for anything else, or where assignments in branches reach (`if a: x = f(x)`
        / `else: x = g(x)`). A name unpacked from a tuple (`q, k, v = qkv.unbind(-1)`) has its own value,
        not the expression's: its source is that expression only when asked for with `unpacked`."""
        reaching = self.reaching_bindings(node)
        if not reaching or len(reaching) > 2 or len(reaching) == 2 \
                and not reaching[1].frame.encloses(self._site(node)[0]):
            return None
        b = reaching[0]
        if b.how not in ("assign", "walrus") or b.path and not unpacked:
            return None
        return b.value

    def sources(self, node: cst.CSTNode) -> list[cst.CSTNode] | None:
        """For a name, the expressions of every assignment that may reach it; None if another kind of
        binding (a parameter, a loop variable, an unpacking) may."""
        reaching = self.reaching_bindings(node)
        if not reaching or any(b.how not in ("assign", "walrus") or b.path for b in reaching):
            return None
        return [b.value for b in reaching]

    def reaching_bindings(self, node: cst.CSTNode) -> list[Binding] | None:
        """For a name, the bindings that may give it its value where it is read."""
        if type(node) is not cst.Name:
            return None
        frame, order = self._site(node)
        scope = frame.scope
        while scope is not None:
            bindings = scope.bindings.get(node.value)
            if bindings:
                return _reaching(bindings, frame, order if scope is frame.scope else None)
            scope = scope.parent
        return None

    def guess(self, name: str, node: cst.CSTNode) -> Value:
        """A name bound nowhere in the file (a global of another module, a builtin): its name may say."""
        last = name.rsplit(".", 1)[-1]
        lower = last.lower()
        if last in api.TENSOR_NAMES:
            return Value(TENSOR, why=(("`{}` (by its name)", node),))
        if (last in api.MODULE_NAMES or lower.endswith(("model", "_net"))) and not _MODEL_GETTER.match(lower):
            return Value(MODULE, why=(("`{}` (by its name)", node),))
        if last in api.OPTIMIZER_NAMES:
            return Value(OPTIMIZER)
        if (any(w in lower for w in api.LOADER_WORDS) or lower == "dl" or lower.endswith("_dl")) \
                and not lower.endswith(("s", "_fn", "_cls", "_kwargs", "_args", "_names", "_list")):
            return Value(LOADER, loader=node, why=(("`{}`", node),))
        if _device_word(lower):
            return Value(DEVICE, ON_DEVICE, why=(("`{}`", node),))
        return UNKNOWN

    def binding(self, b: Binding) -> Value:
        key = ("binding", id(b))
        found = self.memo.get(key)
        if found is not None:
            return found
        return self._answer(key, self._binding, b)

    def _binding(self, b: Binding) -> Value:
        how = b.how
        if how == "assign" or how == "walrus":
            v = self.value(b.value)
            v = project(v, b.path)
            return _named(v, b.target, b.value) if not b.path else v
        if how in ("for", "comp"):
            return project(element_of(self.value(b.value)), b.path)
        if how == "aug":
            node: cst.AugAssign = b.value
            frame, _ = self._site(node)
            name = dotted(node.target)
            before = self.lookup(name, frame, b.order) if name else None
            right = self.value(node.value)
            if before is None:
                before = self.guess(name, node.target) if name else UNKNOWN
            if before.kind == TENSOR and before.device is not None:
                return before  # `t += x` works in place: t stays where it is (and what it is)
            return _arith(node, [before, right], keep_origin=True)
        if how == "buffer":  # `self.register_buffer(name, t)`: it moves with the module
            cls = _class_of(b.frame)
            if cls is not None and "trainer" in cls.name.lower():
                return self.value(b.value)  # a trainer's own step counter: the trainer holds models, not moved
            return _follows_module(self.value(b.value))
        if how == "param":
            return self.param(b.value, b.target)
        if how == "annotation":
            return self.annotation(b.value)
        if how == "mutate":
            call: cst.Call = b.value
            frame, _ = self._site(call)
            name = dotted(call.func.value)
            before = self.named(name, call.func.value, frame, b.order)
            if before.kind != MODULE:
                return before
            return self.module_method(call, before, call.func.attr.value)
        if how == "def":
            return Value(FUNCTION, function=b.value)
        if how == "class":
            return Value(OTHER, cls=b.value)
        if how == "import":
            return OTHER_VALUE
        return UNKNOWN

    def annotation(self, node: cst.CSTNode) -> Value:
        if type(node) is cst.Subscript:  # Optional[torch.Tensor], list[Tensor]
            base = self.model.qualname(node.value) or dotted(node.value) or ""
            if base.rsplit(".", 1)[-1] == "Optional" and len(node.slice) == 1 \
                    and type(node.slice[0].slice) is cst.Index:
                return self.annotation(node.slice[0].slice.value)
            return OTHER_VALUE
        qual = self.model.qualname(node) or dotted(node) or ""
        last = qual.rsplit(".", 1)[-1]
        why = (("annotated `{}`", node),)
        if qual in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor") \
                or last == "Tensor":
            return Value(TENSOR, why=why)
        if qual.startswith("numpy.") or last in ("ndarray", "NDArray", "ArrayLike"):
            return Value(NDARRAY, why=why)
        if qual in ("torch.nn.Module",) or last == "Module" and qual.startswith("torch"):
            return Value(MODULE, why=why)
        if last == "DataLoader":
            return Value(LOADER, why=why, loader=node)
        if qual == "torch.device":
            return Value(DEVICE, why=why)
        if last in ("int", "float", "bool", "complex"):
            return Value(NUMBER, why=why)
        if last in ("str", "list", "dict", "tuple", "bytes", "Path"):
            return Value(OTHER, why=why)
        return UNKNOWN

    # ---- parameters and call sites ----------------------------------------------------------------------
    def callers(self) -> dict[FunctionInfo, list[cst.Call]]:
        """Each function of the file and the calls in the file that resolve to it."""
        if self._callers is None:
            self._callers = {}
            for call in self.model.calls:
                target = self.callee(call)
                if target is not None:
                    self._callers.setdefault(target, []).append(call)
        return self._callers

    def callee(self, call: cst.Call) -> FunctionInfo | None:
        """The function of this file that a call runs: `f(...)`, `self.m(...)`, `Cls.m(...)`, `Cls(...)`
        (its `__init__`), when the model can tell."""
        return self.function_at(call.func, call)

    def function_at(self, func: cst.CSTNode, site: cst.CSTNode) -> FunctionInfo | None:
        """The function of this file an expression names at a place: `f`, `self.m`, `Cls.m`, `Cls` (its
        `__init__`), `agent.act` of an instance of a class of this file."""
        frame, order = self._site(site)
        kind = type(func)
        if kind is cst.Name:
            found = self._bound_callable(func.value, frame, order)
            if isinstance(found, FunctionInfo):
                return found
            if isinstance(found, ClassInfo):
                return self.method(found, "__init__")
            return None
        if kind is not cst.Attribute:
            return None
        if type(func.value) is cst.Name:
            head, attr = func.value.value, func.attr.value
            if head in ("self", "cls"):
                cls = _class_of(frame)
                return self.method(cls, attr) if cls is not None else None
            found = self._bound_callable(head, frame, order)
            if isinstance(found, ClassInfo):
                return self.method(found, attr)
        cls = self.instance_class(func.value)  # `agent.get_action(x)`, agent = Agent(envs).to(device)
        if cls is not None:
            return self.method(cls, func.attr.value)
        return None

    def passed(self) -> dict[FunctionInfo, list[cst.CSTNode]]:
        """Each function of the file and the places that name it without calling it: handed to a call
        (`checkpoint(self._forward, x)`, `map(f, xs)`) or put in a table (`{"masks": self.loss_masks}[name]`).
        Whatever runs there may run the function then and there."""
        found = self.model._memo.get("passed-functions")
        if found is None:
            found = self.model._memo["passed-functions"] = {}
            model = self.model
            names = {info.name for info in model.functions if not info.is_lambda} - {"__init__"}
            attributes = model.nodes(cst.Attribute)
            skip = {call.func for call in model.calls} | {a.attr for a in attributes} \
                | {info.node.name for info in model.functions if not info.is_lambda} \
                | {p.name for info in model.functions
                   for p in (*info.node.params.params, *info.node.params.kwonly_params, *info.node.params.posonly_params)} \
                | {a.keyword for call in model.calls for a in call.args if a.keyword is not None}
            # (a parameter or keyword named like a function, `load_examples(args, evaluate=True)`, names none)
            for node in [n for n in model.nodes(cst.Name) if n.value in names] \
                    + [a for a in attributes if a.attr.value in names]:
                if node in skip:
                    continue
                frame = model.sites[node][0]
                if frame.function is None:
                    continue  # a module-level table of functions: who calls through it is not known here
                info = self.function_at(node, node)
                if info is not None and info is not frame.function:
                    found.setdefault(info, []).append(node)
        return found

    def instance_class(self, expr: cst.CSTNode, depth: int = 0) -> ClassInfo | None:
        """The class of this file that an expression is an instance of, read from the code alone
        (`agent = Agent(envs).to(device)`; `self.net = Net()`), not from values: `callee` runs while
        values are being worked out."""
        if depth > 4:
            return None
        if type(expr) is cst.Call:
            func = expr.func
            if type(func) is cst.Name:
                found = self._bound_callable(func.value, *self._site(expr))
                return found if isinstance(found, ClassInfo) else None
            if type(func) is cst.Attribute and func.attr.value in api.MODULE_SELF_METHODS:
                return self.instance_class(func.value, depth + 1)  # `Net().to(device)`, `.eval()`
            return None
        bindings = None
        if type(expr) is cst.Name:
            bindings = self.reaching(expr.value, *self._site(expr))
        elif type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
            function = self._site(expr)[0].function
            cls = function.cls if function is not None else None
            bindings = cls.attrs.get(expr.attr.value) if cls is not None else None
        found = {self.instance_class(b.value, depth + 1) for b in bindings or ()
                 if b.how in ("assign", "walrus") and not b.path}
        return found.pop() if len(found) == 1 else None

    def _bound_callable(self, name: str, frame: Frame, order: int):
        scope = frame.scope
        while scope is not None:
            bindings = scope.bindings.get(name)
            if bindings:
                for b in reversed(bindings):
                    if b.how in ("def", "class"):
                        return b.value
                return None
            scope = scope.parent
        return None

    def method(self, cls: ClassInfo, name: str) -> FunctionInfo | None:
        seen = set()
        while cls is not None and cls.name not in seen:
            seen.add(cls.name)
            found = cls.methods.get(name)
            if found is not None:
                return found
            cls = next((self.model.classes.get(b.rsplit(".", 1)[-1]) for b in cls.bases
                        if b.rsplit(".", 1)[-1] in self.model.classes), None)
        return None

    def param(self, info: FunctionInfo, param: cst.Param) -> Value:
        name = param.name.value
        annotated = self.annotation(param.annotation.annotation) if param.annotation is not None else UNKNOWN
        if info.cls is not None and name in ("self", "cls"):
            return OTHER_VALUE
        if param.star in ("*", "**"):
            return OTHER_VALUE  # *args, **kwargs: a tuple, a dict
        values = [self.value(a) for a in self.arguments(info, param)]
        if param.default is not None and not (type(param.default) is cst.Name and param.default.value == "None"):
            values.append(self.value(param.default))
        known = [v for v in values if v.kind is not None or v.device is not None]
        if annotated.kind is not None:  # the annotation says what; the call sites may say more (which loader)
            agreeing = [v for v in known if v.kind == annotated.kind]
            return join(agreeing) if agreeing else annotated
        if known:
            return join(known)
        if info.name == "forward" and info.cls is not None and self.is_module_class(info.cls) \
                and (info.positional()[:1] == [name] or name.lower() in _TENSOR_INPUTS):
            return Value(TENSOR, why=((f"input of `{info.cls.name}.forward`", param),))
        return self.guess(name, param.name)

    def arguments(self, info: FunctionInfo, param: cst.Param) -> list[cst.BaseExpression]:
        """The expressions that call sites in this file pass for one parameter."""
        name = param.name.value
        positional_names = info.positional()
        index = positional_names.index(name) if name in positional_names else None
        out = []
        for call in self.callers().get(info, ()):
            if any(a.star for a in call.args):
                continue
            arg = keyword(call, name)
            if arg is None and index is not None:
                arg = positional(call, index)
            if arg is not None:
                out.append(arg.value)
        return out

    def is_module_class(self, cls: ClassInfo) -> bool:
        """A class of this file that is an `nn.Module`: its bases lead to one, or (for bases imported from
        elsewhere) it defines `forward`."""
        key = ("module-class", cls.name)
        found = self.memo.get(key)
        if found is None:
            self.memo[key] = False
            found = False
            for base in cls.bases:
                last = base.rsplit(".", 1)[-1]
                if base.startswith("torch.nn.") and last[:1].isupper() or last in ("Module", "LightningModule"):
                    found = True
                elif last in self.model.classes and self.model.classes[last] is not cls:
                    found = self.is_module_class(self.model.classes[last])
                if found:
                    break
            if not found and "forward" in cls.methods and self.model.facts.torch:
                found = True
            self.memo[key] = found
        return found

    # ---- attributes and subscripts ---------------------------------------------------------------------
    def attribute(self, node: cst.Attribute) -> Value:
        name = dotted(node)
        frame, order = self._site(node)
        if name is not None:
            if name.startswith("self.") and name.count(".") == 1:
                found = self.self_attribute(node.attr.value, frame)
                if found is not None:
                    return found
            else:
                found = self.lookup(name, frame, order)
                if found is not None:
                    return found
            qual = self.model.qualname(node)
            if qual is not None:
                return self.qualified(qual, node)
        attr = node.attr.value
        base = self.value(node.value)
        if base.kind == TENSOR:
            if attr in api.TENSOR_ATTRS:
                return replace(base, items=None, element=None)
            if attr == "device":
                return Value(DEVICE, base.device, _why(("the device of `{}`", node.value), base.why))
            if attr in api.PYTHON_ATTRS:
                return OTHER_VALUE
        if base.kind == MODULE:
            if attr in api.MODULE_TENSOR_ATTRS:
                return Value(TENSOR, base.device, base.why)
            item = self._container_item(base, attr)
            if item is not None:
                return item
            if attr == "device":
                return Value(DEVICE, base.device, base.why)
        if attr == "shape":  # a size: its elements are numbers (`pred.shape[-1] != size[1]` reads no tensor)
            return SIZE_VALUE
        if attr in ("ndim", "dtype"):
            return OTHER_VALUE
        if base.kind is None and base.device == ON_DEVICE:
            return Value(None, ON_DEVICE, base.why)  # `data.rewards` of a batch sampled on the device
        if attr == "device":
            return Value(DEVICE, ON_DEVICE if base.device != ON_HOST else ON_HOST,
                         (("the device of `{}`", node.value),))
        if name is not None:
            guessed = self.guess(name, node)
            if guessed.kind in (TENSOR, OPTIMIZER) and option_path(node) is not None:
                return OTHER_VALUE  # `args.optim.loss == 'l1'`: a setting, whatever its name says (a config
                # object may hold loaders: `self.run_config.valid_loader`)
            return guessed
        return UNKNOWN

    def _container_item(self, container: Value, key: str) -> Value | None:
        """`self.transformer.h` of `nn.ModuleDict(dict(h=nn.ModuleList(...), ...))` or of a dict literal:
        the submodule under that key, living where its container lives."""
        origin = container.origin
        if type(origin) is not cst.Call or not origin.args \
                or self.model.qualname(origin.func) not in ("torch.nn.ModuleDict", "torch.nn.ParameterDict"):
            return None
        entries = origin.args[0].value
        found = None
        if type(entries) is cst.Dict:
            found = next((e.value for e in entries.elements if type(e) is cst.DictElement
                          and type(e.key) is cst.SimpleString and e.key.evaluated_value == key), None)
        elif type(entries) is cst.Call and type(entries.func) is cst.Name and entries.func.value == "dict":
            found = next((a.value for a in entries.args if a.keyword is not None and a.keyword.value == key), None)
        if found is None:
            return None
        v = self.value(found)
        return replace(v, device=container.device) if v.kind in (MODULE, TENSOR) else v

    # ---- the default configuration ------------------------------------------------------------------------
    def default_truth(self, test: cst.BaseExpression, depth: int = 0) -> bool | None:
        """Whether a condition holds when the code runs with its defaults (`self.objective == "pred_v"` where
        `__init__(..., objective="pred_v")` sets it); None where the code does not say."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self.default_truth(test.expression, depth)
            return None if inner is None else not inner
        if type(test) is cst.BooleanOperation:
            left, right = self.default_truth(test.left, depth), self.default_truth(test.right, depth)
            if type(test.operator) is cst.And:
                return False if False in (left, right) else (True if left and right else None)
            return True if True in (left, right) else (False if left is False and right is False else None)
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            op = test.comparisons[0].operator
            left, right = self.default_of(test.left, depth), self.default_of(test.comparisons[0].comparator, depth)
            if left is NO_DEFAULT and type(right) in (int, float) and self._counts_up(test.left):
                # `epoch < args.warm_epoch` with a default of 0: a loop counter over a range is never below 0
                if type(op) in (cst.LessThan, cst.GreaterThanEqual) and right <= 0 \
                        or type(op) in (cst.LessThanEqual, cst.GreaterThan) and right < 0:
                    return type(op) in (cst.GreaterThanEqual, cst.GreaterThan)
            if left is NO_DEFAULT or right is NO_DEFAULT:
                return None
            return compare(op, left, right)
        if type(test) is cst.Call and type(test.func) is cst.Name and len(test.args) == 1 and not test.args[0].star \
                and test.args[0].keyword is None:  # `if exists(self.duration_predictor):`, `def exists(v): return
            inline = self.model.one_line_tests().get(test.func.value)  # v is not None`, with its argument for `v`
            if inline is not None and len(inline[1]) == 1 and type(inline[0]) is cst.Comparison \
                    and len(inline[0].comparisons) == 1 and dotted(inline[0].left) == inline[1][0] \
                    and dotted(inline[0].comparisons[0].comparator) == "None":
                return self.default_truth(inline[0].with_changes(left=test.args[0].value), depth + 1)
        value = self.default_of(test, depth)
        return None if value is NO_DEFAULT else bool(value)

    def _rules_out_a_tensor(self, node: cst.Name) -> cst.Call | None:
        """The `isinstance` test of the name's own function that rules out a tensor where it is read: the `else`
        of `if isinstance(x, torch.Tensor):`, the body of `if isinstance(x, np.ndarray):` (YOLOv6's scale_coords
        keeps a NumPy branch that no caller takes with a device tensor). Not a test for a list or tuple, which
        may hold the tensors (`if isinstance(loss, (list, tuple)): loss, extra = loss`, SlowFast)."""
        site = self.model.sites.get(node)  # (a node a rule made, such as a fix's replacement, has no site)
        frame = site[0] if site is not None else None
        function = frame.function if frame is not None else None
        while frame is not None and frame.function is function:
            if frame.condition is not None:
                test, holds = frame.condition
                kinds = _isinstance_of(self.model, test, node.value)
                if kinds is not None and _SEQUENCE not in kinds \
                        and (TENSOR not in kinds if holds else kinds == {TENSOR}):
                    return test
            frame = frame.parent
        return None

    def _bound_off(self, binding: Binding, read: cst.CSTNode, depth: int) -> bool:
        """Whether a binding lies in a branch (of the function that reads it) whose test fails with the defaults."""
        frame, stop = binding.frame, self.model.sites[read][0].function
        while frame is not None and frame.function is stop:
            if frame.condition is not None and self.default_truth(frame.condition[0], depth + 1) is (
                    not frame.condition[1]):
                return True
            frame = frame.parent
        return False

    def _counts_up(self, node: cst.BaseExpression) -> bool:
        """A name that only a `for` over `range(...)` from a start of at least 0 (or `enumerate`'s index)
        binds: never negative."""
        reaching = self.reaching_bindings(node) if type(node) is cst.Name else None
        if not reaching:
            return False
        for b in reaching:
            it = b.value
            if b.how != "for" or type(it) is not cst.Call or type(it.func) is not cst.Name:
                return False
            if it.func.value == "range" and not b.path:
                start = int_value(it.args[0].value) if len(it.args) > 1 else 0
                if start is None or start < 0 or len(it.args) > 2:
                    return False
            elif not (it.func.value == "enumerate" and b.path == (0,)):
                return False
        return True

    def default_of(self, node: cst.BaseExpression, depth: int = 0):
        """The value an expression has with the code's defaults: a literal, a constructor parameter's default,
        a name or a `self.` attribute assigned once from one of these; `NO_DEFAULT` where not known."""
        if depth > 8:
            return NO_DEFAULT
        if type(node) is cst.BooleanOperation:  # `opt.instance_feat or opt.label_feat`, as Python computes it
            left = self.default_of(node.left, depth + 1)
            if left is NO_DEFAULT or bool(left) == (type(node.operator) is cst.Or):
                return left
            return self.default_of(node.right, depth + 1)
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:  # `not args.no_batching`
            inner = self.default_of(node.expression, depth + 1)
            return inner if inner is NO_DEFAULT else not inner
        if type(node) in (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString):
            try:
                return node.evaluated_value
            except Exception:
                return NO_DEFAULT
        if type(node) is cst.IfExp:  # `[] if not args.subjects_unlabeled else args.subjects_unlabeled.split(',')`
            truth = self.default_truth(node.test, depth + 1)
            return NO_DEFAULT if truth is None else self.default_of(node.body if truth else node.orelse, depth + 1)
        if type(node) is cst.Comparison and len(node.comparisons) == 1:  # `semi_supervised = len(subjects) > 0`
            truth = self.default_truth(node, depth + 1)
            return NO_DEFAULT if truth is None else truth
        if type(node) is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Subtract):  # `args.n - 1`
            left, right = self.default_of(node.left, depth + 1), self.default_of(node.right, depth + 1)
            if type(left) is int and type(right) is int:
                return left + right if type(node.operator) is cst.Add else left - right
            return NO_DEFAULT
        if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "len" and len(node.args) == 1:
            inner = self.default_of(node.args[0].value, depth + 1)
            return len(inner) if isinstance(inner, (str, tuple)) else NO_DEFAULT
        if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in ("int", "float") \
                and len(node.args) == 1:  # `int(version[0])`
            inner = self.default_of(node.args[0].value, depth + 1)
            try:
                return NO_DEFAULT if inner is NO_DEFAULT else {"int": int, "float": float}[node.func.value](inner)
            except (TypeError, ValueError):
                return NO_DEFAULT
        if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
            container, index = self.default_of(node.value, depth + 1), int_value(node.slice[0].slice.value)
            if isinstance(container, (str, tuple)) and index is not None and -len(container) <= index < len(container):
                return container[index]
            return NO_DEFAULT
        if self.model.qualname(node) == "torch.__version__":  # branches for old PyTorch releases do not run
            return api.TORCH_VERSION
        if type(node) is cst.Call and self.model.qualname(node.func) in api.EXPORT_ONLY_TESTS:
            return False  # `if torch.jit.is_scripting():`: eager training and inference take the other branch
        if type(node) in (cst.Tuple, cst.List, cst.Set):
            items = [self.default_of(e.value, depth + 1) for e in node.elements if type(e) is cst.Element]
            return NO_DEFAULT if NO_DEFAULT in items else tuple(items)
        if type(node) is cst.Name:
            if node.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.value]
            if node not in self.model.sites:
                return NO_DEFAULT
            bindings = self.reaching(node.value, *self._site(node))
            if bindings and len(bindings) > 1:  # `nll = True` then `if args.dice: nll = False`: the default run
                bindings = [b for b in bindings if not self._bound_off(b, node, depth)]  # skips that branch
        elif type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self" \
                and node in self.model.sites:
            cls = _class_of(self._site(node)[0])
            bindings = cls.attrs.get(node.attr.value) if cls is not None else None
        elif type(node) is cst.Attribute and (path := option_path(node)) is not None:  # `args.add_noise`,
            return self.option_defaults().get(path, NO_DEFAULT)  # `self.args.lr`, `cfg.MIXUP.ENABLE`
        else:
            return NO_DEFAULT
        if not bindings or len(bindings) != 1:
            return NO_DEFAULT
        b = bindings[0]
        if b.how == "param":
            param: cst.Param = b.target
            if b.value.name != "__init__":  # what every call of this file passes, when they agree
                return self._passed_default(b.value, param, depth)
            if param.default is None or self._passed_here(b.value, param):  # a constructor's setting
                # given a command-line option of the same name (`GraphCNN(..., args.neighbor_pooling_type)`
                # kept as `self.neighbor_pooling_type`): that option's default
                if param.default is None:
                    return self.option_defaults().get(param.name.value, NO_DEFAULT)
                # A self-test of the file that passes the default itself (transformer-xl's `attn_type=0`)
                # leaves it the setting that runs.
                default = self.default_of(param.default, depth + 1)
                passed = self.arguments(b.value, param)
                stars = any(a.star for call in self.callers().get(b.value, ()) for a in call.args)
                return default if passed and not stars and default is not NO_DEFAULT and all(
                    type(p) in (cst.Integer, cst.Float, cst.SimpleString, cst.Name)
                    and self.default_of(p, depth + 1) == default for p in passed) else NO_DEFAULT
            return self.default_of(param.default, depth + 1)
        value = b.assigned()
        if value is not None and type(value) not in (cst.List, cst.Set):  # lists grow
            return self.default_of(value, depth + 1)
        return NO_DEFAULT

    def option_defaults(self) -> dict:
        """The default of each command-line option this file reads, as its own `parser.add_argument(
        "--add_noise", action="store_true")` or another file of its program declares it (`{"add_noise":
        False}`): the run its authors intend unless told otherwise. The declarations are read by the text
        scan of `model/project.py` (an option declared twice with different defaults has none)."""
        found = self.model._memo.get("option-defaults")
        if found is None:
            found = self.model._memo["option-defaults"] = {
                name: ast.literal_eval(text) for name, text in self.model.facts.options}
            # An option this file derives once from declared ones: `args.prefetcher = not args.no_prefetcher`;
            # one it sets (`args.num_iterations = args.total_timesteps // args.batch_size`, declared as 0 "computed
            # at runtime") has the value set, or none this scan can tell.
            derived: dict[str, list] = {}
            for assign in self.model.nodes(cst.Assign):
                for target in assign.targets:
                    path = option_path(target.target) if type(target.target) is cst.Attribute else None
                    if path is not None:
                        derived.setdefault(path, []).append(assign.value)
            for path in derived:
                found.pop(path, None)
            for path, values in derived.items():
                value = self.default_of(values[0]) if len(values) == 1 else NO_DEFAULT
                if value is not NO_DEFAULT:
                    found[path] = value
        return found

    def _passed_default(self, info: FunctionInfo, param: cst.Param, depth: int):
        """The value a parameter has with the defaults when every call of this file passes the same known value
        (`validate(..., hparams.distributed_run, rank)` with `distributed_run=False`); `NO_DEFAULT` otherwise,
        and for a function no call of this file runs (its callers elsewhere pass what they need)."""
        calls = self.callers().get(info, ())
        if not calls:
            return self._unpassed_flag(param, depth)
        if len(calls) > 8:
            return NO_DEFAULT
        if info.cls is None and not info.name.startswith("_") and "__main__" not in self.model.text:
            return NO_DEFAULT  # a library's public function: other files call it with their own values
        found = []
        for call in calls:
            given = given_to(info, param, call)
            value = NO_DEFAULT if given is None or given is NO_DEFAULT else self.default_of(given, depth + 1)
            if value is NO_DEFAULT or found and found[0] != value:
                return NO_DEFAULT
            found.append(value)
        return found[0]

    def _unpassed_flag(self, param: cst.Param, depth: int):
        """The default of a boolean parameter of a function this file never calls when no file of its program
        passes it by keyword (`return_list=False`, that no caller sets: the branch it guards does not run);
        `NO_DEFAULT` otherwise. A caller that passes it by position is not seen."""
        passed, name = self.model.facts.flags_passed, param.name.value
        if passed is None or name in passed or not (type(param.default) is cst.Name
                                                    and param.default.value in ("True", "False")):
            return NO_DEFAULT
        memo = self.model._memo
        if "keywords-passed" not in memo:  # the keywords this file passes; None where it passes `**kwargs`
            args = [a for call in self.model.calls for a in call.args]
            memo["keywords-passed"] = None if any(a.star == "**" for a in args) else {
                a.keyword.value for a in args if a.keyword is not None}
        here = memo["keywords-passed"]
        if here is None or name in here:
            return NO_DEFAULT
        return self.default_of(param.default, depth + 1)

    def _passed_here(self, init: FunctionInfo, param: cst.Param) -> bool:
        """Whether a call in this file builds the constructor's class passing `param` (then its default is not
        the setting that runs: `PositionEmbeddingSine(n, normalize=True)`); `**kwargs` may pass anything."""
        return bool(self.arguments(init, param)) \
            or any(a.star for call in self.callers().get(init, ()) for a in call.args)

    def self_attribute(self, attr: str, frame: Frame) -> Value | None:
        cls, seen = _class_of(frame), set()
        while cls is not None and cls.name not in seen:
            seen.add(cls.name)
            bindings = cls.attrs.get(attr)
            if bindings:
                v = join([self.binding(b) for b in bindings])
                if v.kind == MODULE or v.kind == TENSOR and type(v.origin) is cst.Call \
                        and self.model.qualname(v.origin.func) == "torch.nn.Parameter":
                    return _follows_module(v)  # a submodule or parameter lives wherever its owner is moved
                return v
            cls = next((self.model.classes.get(b.rsplit(".", 1)[-1]) for b in cls.bases
                        if b.rsplit(".", 1)[-1] in self.model.classes), None)
        return None

    def subscript(self, node: cst.Subscript) -> Value:
        base = self.value(node.value)
        if base.items is not None and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
            index = int_value(node.slice[0].slice.value)
            if index is not None and -len(base.items) <= index < len(base.items):
                return base.items[index]
        if base.kind in (TENSOR, NDARRAY):
            return replace(base, items=None, element=None)
        if base.kind == MODULE:  # self.blocks[i]
            return replace(base, items=None)
        if base.element is not None and base.kind == OTHER:
            return base.element
        return UNKNOWN

    # ---- calls ------------------------------------------------------------------------------------------
    def call(self, call: cst.Call) -> Value:
        func = call.func
        qual = self.model.qualname(func)
        if qual is not None:
            return self.qualified_call(qual, call)
        last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
        if last in _PASS_THROUGH and call.args and not call.args[0].keyword and self.callee(call) is None:
            return self.value(call.args[0].value)  # `tqdm(loader)`, `metric_logger.log_every(loader, ...)`
        if type(func) is cst.Name:
            name = func.value
            frame, order = self._site(call)
            if name in api.BUILTIN_PYTHON and self.lookup(name, frame, order) is None:
                return self.builtin(name, call)
            bound = self.value(func)
            if bound.kind == FUNCTION and bound.function is not None:
                return self.returned(bound.function, call)
            if bound.cls is not None:
                if self.is_module_class(bound.cls):
                    return Value(MODULE, ON_HOST, (("built by `{}`", call),), origin=call)
                return Value(OTHER, cls=bound.cls)
            if bound.kind == MODULE:
                if bound.origin is None and _constructs(call):
                    # `TemporalModel(...)` of `from common.model import *`, a module by its name only: a CamelCase
                    # name is the class, and calling it builds a model, not an output (VideoPose3D)
                    return Value(MODULE, ON_HOST, (("built by `{}`", call),), origin=call)
                return self.module_output(call, bound)
            if bound.kind == LOADER:
                return bound
            return self.opaque(call)
        if type(func) is cst.Attribute:
            method = func.attr.value
            callee = self.callee(call)  # self.helper(x), Cls.method(x)
            if callee is not None:
                return self.returned(callee, call)
            if method in ("prepare", "prepare_data_loader", "prepare_model") \
                    and "accelerat" in (dotted(func.value) or "").lower():
                # Hugging Face Accelerate: a prepared loader yields batches already on the device
                prepared = [_on_accelerator(self.value(a.value), call) for a in call.args if not a.keyword]
                return prepared[0] if len(prepared) == 1 else Value(OTHER, items=tuple(prepared))
            receiver = self.value(func.value)
            if method == "item" and not call.args and receiver.kind in (TENSOR, NDARRAY, NUMBER, None):
                return NUMBER_VALUE  # a tensor's, an array's or a NumPy scalar's: a Python number every time
            if method in _TEXT_METHODS:  # `tokenizer.batch_decode(ids)[0].strip()`: text, whatever its name says
                return NUMBER_VALUE if method in ("startswith", "endswith") else OTHER_VALUE
            if (receiver.kind in (MODULE, OTHER) or receiver.kind is None and receiver.device is None) \
                    and _PREDICATE.match(method):
                return NUMBER_VALUE  # `loss_module.should_discriminator_be_trained(step)`: a module's own bool
            if receiver.kind == TENSOR or receiver.kind is None and receiver.device == ON_DEVICE \
                    and method in ("item", "tolist", "cpu", "numpy", "to", "cuda"):
                return self.tensor_method(call, receiver, method)
            if receiver.kind is None and (method in api.TENSOR_ONLY_METHODS or method not in api.MODULE_SELF_METHODS
                                          and _dtype_argument(self.model, call)):
                # `mask.unsqueeze(1)`, `m.cumsum(1, dtype=torch.float32)`: only a tensor has these
                return self.tensor_method(call, Value(TENSOR, receiver.device, receiver.why), method)
            if receiver.kind is None and receiver.device == ON_DEVICE and method not in ("add", "append", "extend") \
                    and method not in api.SCALAR_METHODS:  # (`feature.size(1)` is a number, wherever `feature` is)
                return Value(None, ON_DEVICE, _why(("`{}`", call), receiver.why))  # `rb.sample(n)` of a device buffer
            if receiver.kind == NDARRAY:
                return NUMBER_VALUE if method in ("item", "tolist", "sum", "mean", "max", "min") \
                    and not call.args else Value(NDARRAY, origin=receiver.origin)
            if receiver.kind == MODULE:
                return self.module_method(call, receiver, method)
            if receiver.kind == LOADER:
                return UNKNOWN
            if receiver.kind == OTHER and receiver.cls is not None:
                info = self.method(receiver.cls, method)
                return self.returned(info, call) if info is not None else UNKNOWN
            own = self.value(func)  # `self.fc(x)`: an attribute holding a module
            if own.kind == MODULE:
                return self.module_output(call, own)
            if own.kind is None and type(func.value) is cst.Name and func.value.value == "self" \
                    and self.in_module_class(call):
                if method in api.MODULE_API_METHODS:  # `self.named_children()`: the module's own API
                    return self.module_method(call, Value(MODULE), method)
                return self.module_output(call, Value(MODULE))  # a submodule built where this file cannot see
            if own.kind == LOADER:
                return own
            if receiver.kind is None and method == "size":  # of a tensor or a size: numbers either way
                return NUMBER_VALUE if call.args else SIZE_VALUE
            if receiver.kind is None and method == "cpu" and not call.args:  # whatever it was, it is on the host now
                return Value(None, ON_HOST, (("moved to the host by `{}`", call),), origin=call)
            if receiver.kind is None and method in ("to", "cuda"):
                moved = self.tensor_method(call, Value(TENSOR), method)
                if _constructs(func.value):  # `TransformerNet().to(device)`: an instance of a class, moved
                    return Value(MODULE, moved.device, moved.why, origin=receiver.origin or func.value)
                if moved.device is not None:
                    # `x.to(device)` of something unknown: whatever it is, it now lives on the device
                    return replace(moved, kind=None, origin=receiver.origin)
            return self.opaque(call)
        callee = self.value(func)  # self.blocks[i](x), factory()(x)
        if callee.kind == MODULE:
            return self.module_output(call, callee)
        return self.opaque(call)

    def in_module_class(self, node: cst.CSTNode) -> bool:
        cls = _class_of(self._site(node)[0])
        return cls is not None and self.is_module_class(cls)

    def opaque(self, call: cst.Call) -> Value:
        """A call the model cannot follow (a function of another file or package). Given a tensor on the
        device, its result is taken to be one too (`accuracy(output, target)`), without claiming it is a
        tensor; a helper that wraps a module (`parallelize_module(model, ...)`, `fully_shard(model)`)
        returns that module. The result remembers the call (`origin`): if the code later shows it is a
        module (`Net().to(device)`, or a name such as `model`), that is where the module was built."""
        name = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
        for arg in call.args:
            v = self.value(arg.value)
            if v.kind == TENSOR and v.device == ON_DEVICE:
                return Value(None, ON_DEVICE, _why(("`{}` is given a device tensor", call), v.why))
            if v.kind == MODULE and any(w in name for w in _MODULE_WRAPPING):
                return Value(MODULE, v.device, v.why, origin=v.origin or call)
            if _constructs(call) and (arg.keyword is not None and arg.keyword.value == "device"
                                      or type(arg.value) in (cst.Name, cst.Attribute)
                                      and _device_word((dotted(arg.value) or "").rsplit(".", 1)[-1].lower())):
                device, why = self.device_of(arg.value)  # `ReplayBuffer(..., device)`: it keeps its data there
                if device == ON_DEVICE:
                    return Value(None, ON_DEVICE, _why(("`{}` is built with a device", call), why), origin=call)
        return Value(origin=call)

    def returned(self, info: FunctionInfo, call: cst.Call) -> Value:
        if info.name == "__init__" and info.cls is not None:
            if self.is_module_class(info.cls):
                return Value(MODULE, ON_HOST, (("built by `{}`", call),), origin=call)
            return Value(OTHER, cls=info.cls)
        if info.yields:  # a generator: iterating it gives what it yields
            return Value(OTHER, element=join([self.value(y) for y in info.yields]))
        returns = info.returns if not info.is_lambda else [info.node.body]
        if not returns:
            return OTHER_VALUE
        built = [self.value(r) for r in returns]
        v = join(built)
        if v.kind in (MODULE, None) and len(built) > 1 and all(_built_object(b) for b in built) \
                and len({b.origin for b in built}) > 1:
            v = replace(v, origin=call)  # a factory (`get_model(name)`: one model per branch): the model is its call's
        if v.kind is None and v.device is None:
            return v
        if v.device == ON_DEVICE and self._host_call(info, call):
            return replace(v, device=ON_HOST, why=(("returned by `{}` given host tensors", call),))
        return replace(v, why=_why((f"returned by `{info.qualname}`", call), v.why))

    def _host_call(self, info: FunctionInfo, call: cst.Call) -> bool:
        """A call of a function that computes only on its arguments (it moves nothing, makes nothing with
        `device=`) given a host tensor and no device one: its result is on the host too, whatever other call
        sites pass it (`bboxes_iou(truth_box.cpu(), anchors)` beside `bboxes_iou(pred, truth_box)`), since eager
        ops refuse to mix a host tensor with a device one."""
        args = [self.value(a.value) for a in call.args if not a.star]
        if not any(a.kind == TENSOR and a.device == ON_HOST for a in args) or any(a.device == ON_DEVICE for a in args):
            return False
        return not any(method_name(c) in ("to", "cuda") or keyword(c, "device") is not None for c in info.calls)

    def module_output(self, call: cst.Call, module: Value) -> Value:
        args = [self.value(a.value) for a in call.args if not a.star]
        on_device = [a for a in args if a.kind == TENSOR and a.device == ON_DEVICE]
        if module.device == ON_DEVICE:
            device, source = ON_DEVICE, module
        elif on_device:
            device, source = ON_DEVICE, on_device[0]
        elif module.device == ON_HOST and all(a.device == ON_HOST for a in args if a.kind == TENSOR):
            device, source = ON_HOST, module
        else:
            device, source = None, module
        return Value(TENSOR, device, _why(("output of `{}`", call.func), source.why))

    def module_method(self, call: cst.Call, module: Value, method: str) -> Value:
        if method in ("to", "cuda", "cpu", "xpu", "mps"):
            moved = self.tensor_method(call, Value(TENSOR), method)
            if moved.device is None and method == "to":
                target = keyword(call, "device") or positional(call, 0)
                if target is None or self.model.qualname(target.value) in api.DTYPES \
                        or "dtype" in (dotted(target.value) or ""):
                    return module  # `.to(torch.float16)`, `.to(dtype=...)`: it stays where it was
            return replace(module, device=moved.device, why=moved.why or module.why)
        if method in api.MODULE_SELF_METHODS:
            return module
        if method in ("parameters", "buffers", "named_parameters", "named_buffers"):
            tensor = Value(TENSOR, module.device, module.why)
            return Value(OTHER, element=tensor if method in ("parameters", "buffers")
                         else Value(OTHER, items=(OTHER_VALUE, tensor)))
        if method in ("modules", "children"):
            return Value(OTHER, element=module)
        if method in api.MODULE_API_METHODS or method == "__init__":  # state_dict, named_children, hooks
            return OTHER_VALUE
        if method in api.FORWARD_METHODS:
            return self.module_output(call, module)
        info = self.callee(call)
        if info is not None:
            return self.returned(info, call)
        own = self.value(call.func)  # `self.transformer.ln_f(x)`: a submodule of a ModuleDict
        if own.kind == MODULE:
            return self.module_output(call, own)
        return UNKNOWN

    def tensor_method(self, call: cst.Call, tensor: Value, method: str) -> Value:
        if method == "item":
            return NUMBER_VALUE
        if method == "tolist":
            return OTHER_VALUE
        if method == "numpy":
            return Value(NDARRAY)
        if method == "type":  # `x.type(torch.int32)` is a tensor; `x.type()` its type's name
            return replace(tensor, items=None, element=None) if call.args else OTHER_VALUE
        if method == "size" and not call.args:
            return SIZE_VALUE
        if method in api.SCALAR_METHODS:
            return NUMBER_VALUE
        if method == "cpu":
            return Value(TENSOR, ON_HOST, (("moved to the host by `{}`", call),), origin=call)
        if method in ("cuda", "xpu", "mps"):
            return Value(TENSOR, ON_DEVICE, (("moved by `{}`", call),))
        if method == "to":
            target = keyword(call, "device") or positional(call, 0)
            if target is None:
                return replace(tensor, items=None, element=None)
            device, why = self.device_of(target.value)
            if device is not None:
                if device == ON_HOST:
                    return Value(TENSOR, ON_HOST, (("moved to the host by `{}`", call),), origin=call)
                return Value(TENSOR, ON_DEVICE, _why(("moved by `{}`", call), why))
            other = self.value(target.value)
            if other.kind == TENSOR:
                return Value(TENSOR, other.device, _why(("moved by `{}`", call), other.why))
            return replace(tensor, items=None, element=None)
        if method == "type_as" and call.args:  # `ones(n).type_as(x)`: to x's dtype and device
            other = self.value(call.args[0].value)
            if other.kind in (TENSOR, None) and other.device == ON_DEVICE:
                return Value(TENSOR, ON_DEVICE, _why(("moved by `{}`", call), other.why))
            if tensor.device == ON_HOST and (other.kind is None or other.kind == TENSOR and other.device is None):
                return Value(TENSOR, None, origin=call)  # a host tensor goes wherever `x` lives (faster-rcnn's
                # `from_numpy(...).type_as(gt_boxes)`); one already on the device stays there
        return replace(tensor, items=None, element=None)

    def device_of(self, expr: cst.CSTNode) -> tuple[str | None, tuple]:
        """Where a device expression points: ON_DEVICE for `"cuda:0"`, `torch.device("cuda" if ... else
        "cpu")`, a GPU index, `x.device` of a device tensor, a name such as `device` or `local_rank`;
        ON_HOST for `"cpu"`; None for anything else (a dtype, a tensor)."""
        text = string_value(expr)
        if text is not None:
            kind = text.split(":")[0]
            if kind in api.DEVICE_TYPES:
                return (ON_HOST if kind == "cpu" else ON_DEVICE), (("`{}`", expr),)
            return None, ()
        if type(expr) is cst.FormattedString:
            first = expr.parts[0] if expr.parts else None
            if type(first) is cst.FormattedStringText:
                kind = first.value.split(":")[0]
                if kind in api.DEVICE_TYPES:
                    return (ON_HOST if kind == "cpu" else ON_DEVICE), (("`{}`", expr),)
            return None, ()
        if type(expr) is cst.Integer:
            return ON_DEVICE, (("GPU index `{}`", expr),)
        if type(expr) is cst.IfExp:
            truth = self.default_truth(expr.test)  # `"cuda" if torch.cuda.is_available() and allow_cuda else "cpu"`
            if truth is not None:  # with `allow_cuda = False`: the branch the defaults take
                return self.device_of(expr.body if truth else expr.orelse)
            a, wa = self.device_of(expr.body)
            b, wb = self.device_of(expr.orelse)
            if ON_DEVICE in (a, b):
                return ON_DEVICE, (("`{}`", expr),)
            return (ON_HOST, wa) if a == b == ON_HOST else (None, ())
        if type(expr) is cst.Call:
            qual = self.model.qualname(expr.func)
            if qual == "torch.device" and expr.args:
                device, why = self.device_of(expr.args[0].value)
                return device, (("`{}`", expr),) if device is not None else why
            if qual in api.DEVICE_FUNCTIONS:
                return ON_DEVICE, (("`{}`", expr),)
        if self.model.qualname(expr) in api.DTYPES:
            return None, ()
        option = self._device_option(expr)
        if option is not None:
            return option
        v = self.value(expr)
        if v.kind == DEVICE and v.device is not None:
            return v.device, v.why or (("`{}`", expr),)
        if v.kind in (NUMBER, DEVICE, None) and type(expr) in (cst.Name, cst.Attribute):
            last = (dotted(expr) or "").rsplit(".", 1)[-1].lower()
            if _device_word(last):
                return ON_DEVICE, (("`{}`", expr),)
        return None, ()

    def _device_option(self, expr: cst.CSTNode, depth: int = 0) -> tuple[str, tuple] | None:
        """`args.device` of `parser.add_argument("--device", default="cpu")`, or a name bound to it or to a
        choice the defaults settle: the device the program runs on unless told otherwise."""
        path = option_path(expr) if type(expr) is cst.Attribute else None
        if path is not None:
            default = self.option_defaults().get(path)
            kind = default.split(":")[0] if isinstance(default, str) else None
            if kind in api.DEVICE_TYPES:
                return (ON_HOST if kind == "cpu" else ON_DEVICE), (("`{}` (the option defaults to %r)" % default,
                                                                    expr),)
            return None
        reaching = self.reaching_bindings(expr) if type(expr) is cst.Name and depth < 2 else None
        if reaching and len(reaching) == 1 and reaching[0].how == "assign" and not reaching[0].path:
            value = reaching[0].value
            if type(value) is cst.IfExp and self.default_truth(value.test) is not None:
                device, why = self.device_of(value)  # `device = "cuda" if ... and allow_cuda else "cpu"`
                return (device, why) if device is not None else None
            return self._device_option(value, depth + 1) if value is not None else None
        return None

    def builtin(self, name: str, call: cst.Call) -> Value:
        args = call.args
        if name in ("next", "iter", "reversed") and args:
            inner = self.value(args[0].value)
            return element_of(inner) if name == "next" else inner
        if name == "enumerate" and args:
            return Value(OTHER, element=Value(OTHER, items=(NUMBER_VALUE, element_of(self.value(args[0].value)))))
        if name == "zip" and args:
            return Value(OTHER, element=Value(OTHER, items=tuple(element_of(self.value(a.value)) for a in args)))
        if name in ("range",):
            return Value(OTHER, element=NUMBER_VALUE)
        if name in ("list", "tuple", "sorted") and args:
            return Value(OTHER, element=element_of(self.value(args[0].value)))
        if name in ("sum", "max", "min", "abs") and args:
            inner = self.value(args[0].value)
            if inner.kind == TENSOR:
                return inner
            element = element_of(inner)  # (of values it cannot tell, neither can it tell their sum)
            return element if element.kind in (TENSOR, None) else NUMBER_VALUE
        if name in api.BUILTIN_SCALAR:
            return NUMBER_VALUE if name not in ("str", "repr", "format", "input") else OTHER_VALUE
        return UNKNOWN

    def qualified(self, qual: str, node: cst.CSTNode) -> Value:
        """A qualified name that is not called: `torch.float16`, `np.pi`, `torch.cuda`."""
        if qual.startswith("torch.") and qual.count(".") == 1:
            return OTHER_VALUE
        if qual.startswith(("math.", "numpy.")):
            return NUMBER_VALUE if qual.startswith("math.") else Value(NDARRAY)
        return UNKNOWN

    def qualified_call(self, qual: str, call: cst.Call) -> Value:
        head = qual.split(".", 1)[0]
        if head == "numpy":
            last = qual.rsplit(".", 1)[-1]
            if last in _NUMPY_TO_SCALAR and not any(a.keyword is not None and a.keyword.value in ("axis", "keepdims")
                                                    for a in call.args) and len(call.args) == 1:
                return NUMBER_VALUE  # `np.argmax(c > p)`: a NumPy scalar, which indexes as an int
            if last in _NUMPY_FLAT:
                return Value(NDARRAY, origin=call, element=NUMBER_VALUE)  # `for label in np.unique(x)`: scalars
            if qual.startswith("numpy.random.") and last in _NUMPY_DRAWS and keyword(call, "size") is None \
                    and sum(a.keyword is None for a in call.args) <= _NUMPY_DRAWS[last]:
                return NUMBER_VALUE  # `np.random.randint(n)`, `np.random.choice(i_train)`: one number, no size
            return Value(NDARRAY, origin=call)
        if head in ("math", "random", "time", "os", "sys", "json", "re", "logging", "argparse", "pathlib",
                    "datetime", "itertools", "functools", "collections", "copy", "pickle", "shutil", "glob"):
            if qual in ("itertools.count",):
                return Value(OTHER, element=NUMBER_VALUE)
            if qual in ("copy.deepcopy", "copy.copy") and call.args:
                return self.value(call.args[0].value)
            return OTHER_VALUE if not qual.startswith(("math.", "random.", "time.")) else NUMBER_VALUE
        if qual.endswith(".tqdm") or qual in ("tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.trange"):
            return self.value(call.args[0].value) if call.args and not call.args[0].keyword else UNKNOWN
        if qual in api.DATA_LOADERS or qual.endswith(".DataLoader"):
            return Value(LOADER, why=(("`{}`", call),), loader=call)
        if qual.startswith("torch.optim.") and qual.rsplit(".", 1)[1][:1].isupper():
            return Value(OPTIMIZER)
        if qual in api.COMPILERS or qual in api.MODULE_WRAPPERS:
            if call.args:
                inner = self.value(call.args[0].value)
                if inner.kind in (MODULE, None) and qual not in ("torch.jit.trace",) or inner.kind == MODULE:
                    return Value(MODULE, inner.device, inner.why, origin=inner.origin or call)
            return Value(MODULE)
        if qual == "torch.device" or qual in api.DEVICE_FUNCTIONS:
            device, why = self.device_of(call)
            return Value(DEVICE, device, why)
        if head != "torch":
            if qual.rsplit(".", 1)[-1][:1].isupper() and head in api.TORCH_PACKAGES and "." in qual:
                last = qual.rsplit(".", 1)[-1]
                if "Loader" in last:
                    return Value(LOADER, why=(("`{}`", call),), loader=call)
                if last.endswith(("Dataset", "Sampler", "Transform", "Compose", "Writer", "Config")):
                    return OTHER_VALUE
                if qual.startswith(_MODEL_PACKAGES) or qual.count(".") == 1 and head in ("torchvision", "timm"):
                    return Value(MODULE, ON_HOST, (("built by `{}`", call),), origin=call)
            if qual.startswith(api.TENSOR_NAMESPACES):
                return self.torch_op(qual, call)
            if qual.rsplit(".", 1)[-1] in ("create_model",):
                return Value(MODULE, ON_HOST, (("built by `{}`", call),), origin=call)
            return self.opaque(call)
        if qual in api.NOT_TENSOR or qual.startswith(api.NOT_TENSOR_PREFIXES):
            return OTHER_VALUE
        if qual in ("torch.autograd.Variable", "torch.autograd.variable.Variable") and call.args:
            return self.value(call.args[0].value)  # old code's `Variable(x)`: since PyTorch 0.4, `x` itself
        if qual == "torch.load":
            return Value(origin=call)  # a model, a state dict, a tensor: whatever was saved
        if qual.startswith("torch.nn.") and not qual.startswith(api.TENSOR_NAMESPACES):
            if qual.rsplit(".", 1)[1][:1].isupper():
                return Value(MODULE, ON_HOST, (("built by `{}`", call),), origin=call)
            return self.opaque(call)
        last = qual.rsplit(".", 1)[-1]
        if qual.count(".") == 1 and not last.startswith(("is_", "get_", "set_", "_")) \
                or qual.startswith(api.TENSOR_NAMESPACES):
            return self.torch_op(qual, call)
        return self.opaque(call)

    def torch_op(self, qual: str, call: cst.Call) -> Value:
        """A torch function: a factory (where `device=` says, else the host), a constructor from data,
        or an op on tensors (on the device if any tensor argument is)."""
        model = self.model
        device_arg = keyword(call, "device")
        if qual in api.FACTORIES and device_arg is None and any(
                self.value(a.value).kind == TENSOR for a in call.args if not a.star):
            return self.combine(call, [a.value for a in call.args if not a.star], op=qual)  # normal(mean, std)
        if qual in api.FACTORIES or qual in api.FROM_DATA:
            if device_arg is not None:
                device, why = self.device_of(device_arg.value)
                if device == ON_DEVICE:
                    return Value(TENSOR, ON_DEVICE, _why(("made on the device by `{}`", call), why))
                if device == ON_HOST:
                    return Value(TENSOR, ON_HOST, (("made on the host by `{}`", call),), origin=call)
                return Value(TENSOR, None, (("`{}`", call),))
            if qual in ("torch.as_tensor", "torch.asarray") and call.args:
                inner = self.value(call.args[0].value)
                if inner.kind == TENSOR:
                    return inner
            if model.facts.default_device and not (qual.endswith("Tensor") and qual != "torch.Tensor"):
                # (a typed constructor, `torch.LongTensor(n)`, makes a CPU tensor whatever the default)
                return Value(TENSOR, None, (("`{}` (the default device is set)", call),))
            return Value(TENSOR, ON_HOST, (("made on the host by `{}`", call),), origin=call)
        if qual in api.LIKE_FACTORIES and call.args:
            inner = self.value(call.args[0].value)
            if device_arg is not None:
                device, why = self.device_of(device_arg.value)
                return Value(TENSOR, device, _why(("`{}`", call), why))
            return Value(TENSOR, inner.device, inner.why, origin=call if inner.device == ON_HOST else None)
        return self.combine(call, [a.value for a in call.args if not a.star and (
            a.keyword is None or a.keyword.value in ("input", "other", "tensors", "out"))], op=qual)

    def combine(self, node: cst.CSTNode, operands: list, keep_origin: bool = True, op: str | None = None,
                numbers: bool = False) -> Value:
        return _arith(node, [self.value(o) for o in operands], keep_origin=keep_origin, torch_op=op is not None,
                      numbers=numbers)


def _arith(node: cst.CSTNode, values: list[Value], keep_origin: bool = True, torch_op: bool = False,
           numbers: bool = False) -> Value:
    """An operation on several values: a tensor if any operand is (on the device if any tensor is), an
    array if any is, a number if all are; a host tensor keeps the call that made it."""
    items = []
    for v in values:
        if v.kind is None and v.items is not None:
            items.extend(v.items)
        else:
            items.append(v)
    tensors = [v for v in items if v.kind == TENSOR]
    derived = [v for v in items if v.kind is None and v.device == ON_DEVICE]
    if not derived and not any(v.device == ON_DEVICE for v in tensors):
        anchor = next((v for v in items if v.device == ON_HOST and v.kind in (TENSOR, None) and _sized_on_host(v)),
                      None)
        if anchor is not None:  # `flow.cpu() - flow_gt`, `c * torch.arange(n) / half`: a device operand would not
            origin = anchor.origin if keep_origin and anchor.origin is not None else None  # mix with these
            return Value(TENSOR, ON_HOST, anchor.why, origin=origin)
    if tensors or torch_op:
        on_device = [v for v in tensors + derived if v.device == ON_DEVICE]
        if on_device:
            return Value(TENSOR, ON_DEVICE, on_device[0].why)
        if tensors and all(v.device == ON_HOST for v in tensors) and not any(v.kind is None for v in items):
            origins = {v.origin for v in tensors if v.origin is not None}
            origin = origins.pop() if keep_origin and len(origins) == 1 else None
            return Value(TENSOR, ON_HOST, tensors[0].why, origin=origin)
        return Value(TENSOR, None, tensors[0].why if tensors else ())
    if derived:
        return Value(None, ON_DEVICE, derived[0].why)
    kinds = {v.kind for v in items}
    if NDARRAY in kinds:
        return Value(NDARRAY)
    if kinds == {NUMBER} or numbers and kinds <= {NUMBER, OTHER}:
        return NUMBER_VALUE
    return UNKNOWN


def _sized_on_host(v: Value) -> bool:
    """A host tensor with elements for sure: copied back from the device, or made by a sized factory
    (`torch.arange(n)`), not a 0-dim `torch.tensor(2.0)` that could still mix with device tensors."""
    if copied_to_host(v):
        return True
    origin = v.origin
    return type(origin) is cst.Call and f"torch.{(dotted(origin.func) or '').rsplit('.', 1)[-1]}" in api.FACTORIES


def copied_to_host(v: Value) -> bool:
    """A tensor copied back from the device (`.cpu()`, `.to("cpu")`): a result, not a 0-dim host scalar that
    could still mix with device tensors."""
    return bool(v.why) and isinstance(v.why[0], tuple) and v.why[0][0].startswith("moved to the host")


def _named(v: Value, target: cst.CSTNode, source: cst.CSTNode) -> Value:
    """The value of a name bound by `target = source`; unchanged (its evidence says where it came from)."""
    return v


def _reaching(bindings: list[Binding], frame: Frame, order: int | None) -> list[Binding]:
    """The bindings of a name that may reach a use at (frame, order): the last one before the use and
    every earlier one back to the first that surely ran before it (one in an enclosing block, not in a
    branch beside the use). Without an order (a use from an inner function), the same from the end."""
    if order is None:
        return bindings  # read later, from a function: any of them may be the one it sees
    else:
        candidates = [b for b in bindings if b.order < order]
        if not candidates:
            # used before any binding in file order: a value carried around a loop; the later ones
            return [b for b in bindings if frame.loop is not None and b.frame.loop is frame.loop] or bindings[-1:]
    out = []
    for b in reversed(candidates):
        if _exclusive(b.frame, frame):
            continue  # set in the `if` body, read in its `else`
        out.append(b)
        if b.frame.encloses(frame) or b.how == "param":
            break
    return out


def _exclusive(first: Frame, second: Frame) -> bool:
    """Whether code in `first` and code in `second` never both run: one in an `if`'s body, the other in
    its `else` (or `elif`)."""
    bodies = [f for f in first.chain() if type(f.node) is cst.If]
    if not bodies:
        return False
    for f in second.chain():
        if f.kind == "branch":
            body = next((b for b in bodies if b.node.orelse is f.node), None)
            if body is not None and body.parent is f.parent:
                return True
    return False


def _on_accelerator(v: Value, call: cst.Call) -> Value:
    """What `accelerator.prepare(x)` gives: a model or a loader placed on the device, anything else as is."""
    if v.kind in (LOADER, MODULE):
        return replace(v, device=ON_DEVICE, why=(("placed on the device by `{}`", call), *v.why))
    return v


def _follows_module(v: Value) -> Value:
    """A submodule, parameter or buffer built on the host: `.to(device)` of its owner takes it along, so
    where it lives is where the owner lives (unknown here)."""
    if v.device != ON_HOST or v.why[:1] and v.why[0][0].startswith("moved"):
        return v
    return replace(v, device=None)


def project(v: Value, path: tuple) -> Value:
    """Element `path` of an unpacked value: `a, (b, c) = v`."""
    for index in path:
        if v.items is not None and index < len(v.items):
            v = v.items[index]
        elif v.kind in (TENSOR, NDARRAY, NUMBER):
            v = replace(v, items=None, element=None)
        elif v.kind is None and v.device == ON_DEVICE:
            v = Value(None, ON_DEVICE, v.why)
        else:
            return Value(origin=v.origin) if v.origin is not None and v.kind is None else UNKNOWN
    return v


# NumPy calls that, given one array and no axis, return one number; and those that return a flat array.
_NUMPY_TO_SCALAR = frozenset({"argmax", "argmin", "sum", "max", "min", "amax", "amin", "mean", "prod", "count_nonzero",
                              "median", "std", "var"})
_NUMPY_FLAT = frozenset({"unique", "flatnonzero", "ravel"})
# NumPy draws that give one number when no size is given: how many positional arguments come before `size`.
_NUMPY_DRAWS = {"randint": 2, "choice": 1, "uniform": 2, "normal": 2, "rand": 0, "randn": 0, "random": 0,
                "random_sample": 0, "beta": 2, "binomial": 2, "poisson": 1, "exponential": 1}


def element_of(v: Value) -> Value:
    """What iterating a value gives: a batch of host tensors for a loader, rows for a tensor."""
    if v.element is not None:
        return v.element
    if v.kind == LOADER:
        if v.device == ON_DEVICE:  # prepared by Accelerate: its batches arrive on the device
            return Value(TENSOR, ON_DEVICE, _why(("a batch from `{}`", v.loader), v.why), origin=None)
        return Value(TENSOR, ON_HOST, _why(("a batch from `{}`", v.loader), ()), loader=v.loader,
                     origin=None)
    if v.kind in (TENSOR, NDARRAY):
        return replace(v, items=None, element=None)
    if v.kind == MODULE:
        return v
    return UNKNOWN


def _dtype_argument(model: FileModel, call: cst.Call) -> bool:
    """A method call given a torch dtype (`x.cumsum(1, dtype=torch.float32)`, `x.to(torch.half)`)."""
    return any(model.qualname(a.value) in api.DTYPES for a in call.args
               if type(a.value) is cst.Attribute)


# Where torchvision and timm keep their modules: `timm.data.Mixup`, `torchvision.transforms.*` are not.
_MODEL_PACKAGES = ("torchvision.models.", "torchvision.ops.", "timm.models.", "timm.layers.", "timm.loss.")


def _constructs(node: cst.CSTNode) -> bool:
    """`Net(...)`, `models.ResNet(...)`: a call of a CamelCase name, which by convention makes an instance."""
    if type(node) is not cst.Call:
        return False
    last = (dotted(node.func) or "").rsplit(".", 1)[-1]
    return last[:1].isupper() and any(c.islower() for c in last)


def _device_word(lower: str) -> bool:
    return lower in api.DEVICE_WORDS or lower.endswith(("_device", "_dev", "_gpu")) or lower.startswith("device_")


def value_of(model: FileModel, node: cst.CSTNode) -> Value:
    return Values.of(model).value(node)


def _class_of(frame: Frame) -> ClassInfo | None:
    """The class whose method holds this frame (also inside a function nested in the method)."""
    function = frame.function
    while function is not None and function.cls is None and function.frame is not None \
            and function.frame.parent is not None:
        function = function.frame.parent.function
    return function.cls if function is not None else None


def option_path(node: cst.Attribute) -> str | None:
    """The option an attribute chain reads: "lr" for `args.lr` or `self.args.lr`, "MIXUP.ENABLE" for
    `cfg.MIXUP.ENABLE`; None when its root holds no options."""
    parts = []
    while type(node) is cst.Attribute:
        if option_holder(node.value):
            return ".".join([node.attr.value, *reversed(parts)])
        parts.append(node.attr.value)
        node = node.value
    return None


def option_holder(node: cst.CSTNode) -> bool:
    """`args`, `opt` (a parsed command line), or `self.args`, `self.opt` (one kept by a trainer object)."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        node = node.attr
    return type(node) is cst.Name and (node.value in OPTION_HOLDERS or node.value.endswith(OPTION_HOLDER_ENDINGS))


def _isinstance_of(model: FileModel, test: cst.BaseExpression, name: str) -> set[str] | None:
    """For `isinstance(name, T)` or `isinstance(name, (T, U))`: the kinds the types name (TENSOR for
    `torch.Tensor`, _SEQUENCE for lists and tuples, OTHER for NumPy arrays, numbers and the like); None for any
    other test."""
    if type(test) is not cst.Call or type(test.func) is not cst.Name or test.func.value != "isinstance" \
            or len(test.args) != 2 or type(test.args[0].value) is not cst.Name or test.args[0].value.value != name:
        return None
    types = test.args[1].value
    elements = [e.value for e in types.elements] if type(types) is cst.Tuple else [types]
    kinds = set()
    for t in elements:
        qual = model.qualname(t) or dotted(t) or ""
        kinds.add(TENSOR if qual in ("torch.Tensor", "torch.nn.Parameter") else _SEQUENCE if qual in ("list", "tuple")
                  else OTHER if qual in _NOT_TENSORS else None)
    return None if None in kinds else kinds


_SEQUENCE = "sequence"
_NOT_TENSORS = {"numpy.ndarray", "np.ndarray", "int", "float", "str", "dict", "bool", "numbers.Number"}
