"""What every rule needs to know about the code around a node, gathered in the engine's single pass.

Rules ask the `Context`: what torch name an expression refers to through any import alias, whether the
node runs once per loop iteration, whether it sits in a logging block gated by `step % k == 0`, under
`no_grad`, in compiled code or in `forward`, and what kind of value an expression likely holds (tensor,
numpy array, module, data loader, plain Python). The kind inference is deliberately simple: it follows
assignments inside one scope and the return types of well-known torch APIs, and says "unknown" rather
than guess. Nothing here imports or runs the analysed code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from perflint.tree import find_all

# Kinds of values.
TENSOR = "tensor"
NDARRAY = "ndarray"
MODULE = "module"
LOADER = "loader"
OPTIMIZER = "optimizer"
PYTHON = "python"

# torch.* callables that do not return a tensor.
_TORCH_NOT_TENSOR = {
    "torch.device", "torch.dtype", "torch.Size", "torch.Generator", "torch.no_grad", "torch.enable_grad",
    "torch.inference_mode", "torch.set_grad_enabled", "torch.manual_seed", "torch.seed", "torch.is_tensor",
    "torch.is_floating_point", "torch.numel", "torch.save", "torch.load", "torch.compile",
    "torch.get_default_dtype", "torch.set_default_dtype", "torch.set_num_threads", "torch.get_num_threads",
    "torch.autocast", "torch.set_float32_matmul_precision", "torch.use_deterministic_algorithms",
    "torch.finfo", "torch.iinfo", "torch.typename", "torch.is_grad_enabled", "torch.stack_trace",
    "torch.is_complex", "torch.is_conj", "torch.is_neg", "torch.is_inference", "torch.is_signed",
    "torch.is_storage", "torch.is_same_size", "torch.is_autocast_enabled", "torch.initial_seed",
}
_TORCH_NOT_TENSOR_PREFIXES = ("torch.cuda.", "torch.backends.", "torch.distributed.", "torch.jit.",
                              "torch.profiler.", "torch.utils.", "torch.optim.", "torch.autograd.profiler.",
                              "torch.multiprocessing.", "torch.hub.", "torch.onnx.", "torch.export.",
                              "torch.fx.", "torch._dynamo.", "torch.amp.", "torch.library.", "torch.testing.")
# Tensor methods that return plain Python values (or numpy) rather than tensors.
_SCALAR_METHODS = {"item", "tolist", "size", "dim", "ndimension", "numel", "nelement", "element_size",
                   "data_ptr", "is_contiguous", "stride", "get_device", "is_floating_point", "is_complex",
                   "storage_offset", "__len__", "equal", "type", "untyped_storage", "register_hook"}
_PYTHON_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "is_leaf", "layout",
                 "itemsize", "nbytes", "names"}
_TENSOR_ATTRS = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
_MODULE_RETURNING_METHODS = {"to", "cuda", "cpu", "train", "eval", "half", "float", "double", "bfloat16",
                             "requires_grad_", "share_memory", "to_empty"}
# Names that, with nothing better known, almost always hold these kinds in PyTorch code.
_TENSOR_NAMES = {"loss", "logits", "outputs", "pred", "preds", "tensor"}
_MODULE_NAMES = {"model", "net", "criterion", "loss_fn", "loss_func", "lossfn", "module", "encoder",
                 "decoder", "classifier", "backbone", "head"}
_BUILTIN_PYTHON = {"len", "int", "float", "bool", "str", "range", "sum", "min", "max", "abs", "round",
                   "list", "tuple", "dict", "set", "sorted", "enumerate", "zip", "isinstance", "repr"}


def dotted(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a chain of Names and Attributes, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def method_name(call: cst.Call) -> str | None:
    """For `x.foo(...)`, "foo"."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index] if index < len(args) else None


@dataclass
class Scope:
    """Names bound in one function (or the module, or a class body) and the kind of value they hold."""

    node: cst.CSTNode
    kinds: dict[str, str | None] = field(default_factory=dict)
    loops: list[cst.CSTNode] = field(default_factory=list)


class Context:
    """Shared, incrementally built knowledge about the file being linted. The engine updates it while
    walking; rules only read it."""

    def __init__(self, path: str, module: cst.Module) -> None:
        self.path = path
        self.module = module
        self.aliases: dict[str, str] = {}  # local name -> qualified name, from imports
        self.module_classes: set[str] = set()  # classes in this file that subclass nn.Module
        self.scopes: list[Scope] = [Scope(module)]
        self.classes: list[cst.ClassDef] = []
        self.functions: list[cst.FunctionDef] = []
        self.gates: list[cst.If] = []  # enclosing `if step % k == 0:` blocks (in the current function)
        self.no_grad_depth = 0
        self.compiled_depth = 0
        self.findings: list = []
        self._loop_bindings: dict[cst.CSTNode, set[str]] = {}
        self._calls: dict[cst.CSTNode, set[str]] = {}
        self._qualnames: dict[cst.CSTNode, str | None] = {}
        self._trains: dict[cst.CSTNode, bool] = {}

    # ---- where we are -------------------------------------------------------------------------
    @property
    def loops(self) -> list[cst.CSTNode]:
        """Enclosing loops and comprehensions of the current function, innermost last."""
        return self.scopes[-1].loops

    @property
    def in_loop(self) -> bool:
        return bool(self.scopes[-1].loops)

    @property
    def in_logging_gate(self) -> bool:
        """Inside `if step % k == 0:` or `if i == 0:` within the current loop: not run every iteration."""
        return bool(self.gates)

    @property
    def in_hot_loop(self) -> bool:
        """Runs on every iteration of a loop: in a loop and not in a logging block."""
        return self.in_loop and not self.gates

    @property
    def in_no_grad(self) -> bool:
        return self.no_grad_depth > 0

    @property
    def in_compiled(self) -> bool:
        """Inside a function decorated with torch.compile or torch.jit.script/trace."""
        return self.compiled_depth > 0

    @property
    def function(self) -> cst.FunctionDef | None:
        return self.functions[-1] if self.functions else None

    @property
    def in_forward(self) -> bool:
        f = self.function
        return f is not None and f.name.value == "forward" and bool(self.classes)

    # ---- names --------------------------------------------------------------------------------
    def qualname(self, node: cst.CSTNode) -> str | None:
        """Qualified name of a Name/Attribute chain through import aliases: with `import torch as T`,
        `T.nn.functional.relu` -> "torch.nn.functional.relu"; None when the head is not imported."""
        try:
            return self._qualnames[node]  # several rules ask about the same node in a row
        except KeyError:
            pass
        name = dotted(node)
        qual = None
        if name is not None:
            head, _, rest = name.partition(".")
            target = self.aliases.get(head)
            if target is not None:
                qual = f"{target}.{rest}" if rest else target
        self._qualnames[node] = qual
        return qual

    def is_torch(self, node: cst.CSTNode, *names: str) -> bool:
        """Whether node refers to one of the given qualified names."""
        return self.qualname(node) in names

    def call_name(self, call: cst.Call) -> str | None:
        return self.qualname(call.func)

    # ---- kinds --------------------------------------------------------------------------------
    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope.kinds:
                return scope.kinds[name]
        return None

    def known(self, name: str) -> bool:
        return any(name in scope.kinds for scope in self.scopes)

    def bind(self, target: cst.CSTNode, kind: str | None) -> None:
        """Record what an assignment target now holds."""
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind(element.value, kind if kind == TENSOR else None)
            return
        if isinstance(target, cst.StarredElement):
            return
        name = dotted(target)
        if name is None:
            return
        scope = self.scopes[-1]
        if "." in name and name.startswith("self.") and self.classes:
            scope = next(s for s in reversed(self.scopes) if s.node is self.classes[-1])
        scope.kinds[name] = kind

    def kind(self, node: cst.CSTNode) -> str | None:
        """The likely kind of value of an expression, or None when unknown."""
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = dotted(node)
            if name is not None and self.known(name):
                return self.lookup(name)
            if isinstance(node, cst.Attribute):
                attr = node.attr.value
                if attr in _PYTHON_ATTRS:
                    return PYTHON
                base = self.kind(node.value)
                if attr in _TENSOR_ATTRS and base == TENSOR:
                    return TENSOR
                if base == MODULE and attr in ("weight", "bias"):
                    return TENSOR
                return None
            if node.value in _TENSOR_NAMES:
                return TENSOR
            if node.value in _MODULE_NAMES:
                return MODULE
            if node.value in ("True", "False", "None"):
                return PYTHON
            return None
        if isinstance(node, cst.Call):
            return self._call_kind(node)
        if isinstance(node, cst.BinaryOperation):
            kinds = {self.kind(node.left), self.kind(node.right)}
            for k in (TENSOR, NDARRAY):
                if k in kinds:
                    return k
            return PYTHON if kinds == {PYTHON} else None
        if isinstance(node, cst.UnaryOperation):
            return PYTHON if isinstance(node.operator, cst.Not) else self.kind(node.expression)
        if isinstance(node, cst.Comparison):
            kinds = {self.kind(node.left), *(self.kind(c.comparator) for c in node.comparisons)}
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return PYTHON
            return TENSOR if TENSOR in kinds else (NDARRAY if NDARRAY in kinds else None)
        if isinstance(node, cst.Subscript):
            base = self.kind(node.value)
            return base if base in (TENSOR, NDARRAY) else None
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                             cst.FormattedString, cst.List, cst.Dict, cst.Set, cst.Tuple, cst.ListComp,
                             cst.DictComp, cst.SetComp, cst.BooleanOperation)):
            return PYTHON if not isinstance(node, cst.BooleanOperation) else None
        if isinstance(node, cst.IfExp):
            body = self.kind(node.body)
            return body if body == self.kind(node.orelse) else None
        return None

    def is_tensor(self, node: cst.CSTNode) -> bool:
        return self.kind(node) == TENSOR

    def _call_kind(self, call: cst.Call) -> str | None:
        func = call.func
        qual = self.qualname(func)
        if qual is not None:
            if qual.startswith("numpy."):
                return NDARRAY
            if qual == "torch.utils.data.DataLoader" or qual.endswith(".DataLoader"):
                return LOADER
            if qual.startswith("torch.optim.") and qual.rsplit(".", 1)[1][:1].isupper():
                return OPTIMIZER
            if qual == "torch.compile" or qual in ("torch.jit.script", "torch.jit.trace"):
                return MODULE
            if qual.startswith("torch.nn.functional."):
                return TENSOR
            if qual.startswith("torch.nn.") and qual.rsplit(".", 1)[1][:1].isupper():
                return MODULE
            if qual.startswith("torch.") and qual not in _TORCH_NOT_TENSOR and \
                    not qual.startswith(_TORCH_NOT_TENSOR_PREFIXES) and qual.count(".") == 1:
                return TENSOR
            if qual.startswith("torch.linalg.") or qual.startswith("torch.fft.") or qual.startswith("torch.special."):
                return TENSOR
            return None
        if isinstance(func, cst.Name):
            if func.value in self.module_classes:
                return MODULE
            if func.value in _BUILTIN_PYTHON and not self.known(func.value):
                return PYTHON
        name = dotted(func)
        if name is not None and self.known(name):
            return TENSOR if self.lookup(name) == MODULE else None
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = self.kind(func.value)
            if receiver == TENSOR:
                if method == "numpy":
                    return NDARRAY
                return PYTHON if method in _SCALAR_METHODS else TENSOR
            if receiver == NDARRAY:
                return PYTHON if method in ("item", "tolist") else NDARRAY
            if receiver == MODULE:
                return MODULE if method in _MODULE_RETURNING_METHODS else None
            if receiver is None and method in _MODULE_NAMES and name is not None and not self.known(name):
                return TENSOR  # self.model(x)
            return None
        if isinstance(func, cst.Name) and func.value in _MODULE_NAMES:
            return TENSOR  # model(x), criterion(out, y)
        return None

    # ---- loops --------------------------------------------------------------------------------
    def calls_in(self, node: cst.CSTNode) -> set[str]:
        """Qualified names (or dotted names, when not imported) of every call inside a subtree."""
        names = self._calls.get(node)
        if names is None:
            names = self._calls[node] = set()
            for call in find_all(node, cst.Call):
                name = self.qualname(call.func) or dotted(call.func)
                if name:
                    names.add(name)
        return names

    def assigned_in(self, loop: cst.CSTNode) -> set[str]:
        """Dotted names (re)bound anywhere inside a loop, including its target: a value not in this set
        is the same on every iteration."""
        names = self._loop_bindings.get(loop)
        if names is None:
            names = self._loop_bindings[loop] = _bound_names(loop)
        return names


_BINDERS = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Call)
_MUTATORS = ("append", "extend", "update", "add_module")


def _bound_names(node: cst.CSTNode) -> set[str]:
    out: set[str] = set()

    def add(target: cst.CSTNode) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                add(e.value)
        elif isinstance(target, cst.StarredElement):
            add(target.value)
        else:
            name = dotted(target)
            if name is None and isinstance(target, cst.Subscript):
                name = dotted(target.value)
            if name is not None:
                out.add(name)

    for n in find_all(node, _BINDERS):
        if not isinstance(n, cst.Call):
            add(n.target)
        elif isinstance(n.func, cst.Attribute):
            # x.mul_(2), x.copy_(y), xs.append(t): in-place methods change their receiver.
            m = n.func.attr.value
            if m.endswith("_") and not m.endswith("__") or m in _MUTATORS:
                base = dotted(n.func.value)
                if base is not None:
                    out.add(base)
    return out


def target_names(target: cst.BaseExpression) -> set[str]:
    """Plain names an assignment or loop target binds: `i, (x, y)` -> {"i", "x", "y"}."""
    out: set[str] = set()
    stack = [target]
    while stack:
        t = stack.pop()
        if isinstance(t, (cst.Tuple, cst.List)):
            stack += [e.value for e in t.elements]
        elif isinstance(t, cst.Name):
            out.add(t.value)
    return out


def may_be_tensor(ctx: Context, node: cst.CSTNode) -> bool:
    """For methods that in PyTorch code are nearly always called on tensors (`.item()`, `.cpu()`):
    anything not known to be something else."""
    return ctx.kind(node) in (TENSOR, None)


def truth_tested(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The sub-expressions whose truth value a condition takes: `a and not b` -> [a, b]."""
    out, stack = [], [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BooleanOperation):
            stack += [node.left, node.right]
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            stack.append(node.expression)
        else:
            out.append(node)
    return out


# ---- devices and transfers (PFL2xx) -------------------------------------------------------------
_DEVICE_TYPES = {"cpu", "cuda", "mps", "xpu", "hpu", "npu", "meta", "xla", "mtia", "privateuseone"}
_DEVICE_WORDS = {"device", "dev", "gpu", "rank", "local_rank", "gpu_id", "device_id", "cuda_device"}


@dataclass(frozen=True)
class Move:
    """What a `.to(...)`, `.cuda(...)` or `.cpu(...)` call moves its receiver to."""

    device: str | None  # "cpu", "cuda", ... when it can be read off the code; else None
    expr: cst.BaseExpression | None  # the device argument as written (None for `.cuda()` / `.cpu()`)
    non_blocking: bool
    plain: bool  # `.to(dev)`, `.to(device=dev)`, `.cuda()`: one device argument and nothing else


def device_literal(ctx: Context, expr: cst.BaseExpression) -> str | None:
    """"cpu" for `"cpu"`, `"cpu:0"`, `torch.device("cpu")`; "cuda" for `"cuda:1"`; None otherwise."""
    if isinstance(expr, cst.Call) and ctx.is_torch(expr.func, "torch.device") and expr.args:
        expr = expr.args[0].value
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        kind = value.split(":")[0] if isinstance(value, str) else None
        return kind if kind in _DEVICE_TYPES else None
    return None


def looks_like_device(ctx: Context, expr: cst.BaseExpression) -> bool:
    """A device literal, `torch.device(...)`, an int (a GPU index), or a name such as `device`,
    `self.device`, `args.gpu`, `x.device`, `local_rank`. Names that could be a dtype or a tensor are not."""
    if device_literal(ctx, expr) is not None or isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Call):
        return ctx.is_torch(expr.func, "torch.device")
    name = dotted(expr)
    if name is None:
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return last in _DEVICE_WORDS or last.endswith(("_device", "_dev", "_gpu")) or last.startswith("device_")


def device_move(ctx: Context, call: cst.Call) -> Move | None:
    """For `x.to(dev, ...)`, `x.cuda(...)`, `x.cpu(...)`: where it moves x; None when the call is not a
    device move (`x.to(torch.float16)`, `x.to(other)`, `x.to(unknown)`) or not one of these methods."""
    method = method_name(call)
    nb = keyword(call, "non_blocking")
    non_blocking = nb is not None and not (isinstance(nb.value, cst.Name) and nb.value.value == "False")
    if method in ("cuda", "cpu"):
        first = positional(call, 0) or keyword(call, "device")
        expr = first.value if first is not None else None
        second = positional(call, 1)
        if method == "cuda" and second is not None and not (isinstance(second.value, cst.Name)
                                                             and second.value.value == "False"):
            non_blocking = True  # x.cuda(dev, True)
        return Move(method, expr, non_blocking, plain=not call.args)
    if method != "to":
        return None
    arg = keyword(call, "device") or positional(call, 0)
    if arg is None or not looks_like_device(ctx, arg.value):
        return None
    if positional(call, 1) is not None and isinstance(positional(call, 1).value, cst.Name) \
            and positional(call, 1).value.value == "True" and arg is positional(call, 0):
        non_blocking = True  # x.to(dev, True) is x.to(dev, non_blocking=True)
    return Move(device_literal(ctx, arg.value), arg.value, non_blocking, plain=len(call.args) == 1)


# ---- training and evaluation code (PFL4xx-6xx) --------------------------------------------------
_EVAL_WORDS = {"eval", "evaluate", "evaluation", "validate", "validation", "val", "valid", "test", "predict",
               "prediction", "infer", "inference"}
_LOSS_WORDS = ("loss", "criterion", "metric")


def eval_like(name: str) -> bool:
    """`evaluate`, `validate_one_epoch`, `run_inference`, `test`: a function name that says it evaluates."""
    return any(part in _EVAL_WORDS for part in name.lower().split("_"))


def trains(ctx: Context, node: cst.CSTNode) -> bool:
    """Whether a subtree calls `.backward()` (on anything) or an optimizer's (or grad scaler's) `.step()`."""
    found = ctx._trains.get(node)
    if found is None:
        found = False
        for call in find_all(node, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "backward":
                found = True
            elif isinstance(func, cst.Attribute) and func.attr.value == "step":
                head = (dotted(func.value) or "").rsplit(".", 1)[-1].lower()
                found = any(w in head for w in ("optim", "opt", "scaler"))
            elif ctx.qualname(func) == "torch.autograd.backward":
                found = True
            if found:
                break
        ctx._trains[node] = found
    return found


def module_call(ctx: Context, call: cst.Call) -> str | None:
    """For `model(x)` / `self.net(x)`, where the callee is a module (known, or named like one) that is not a
    loss or metric: its dotted name; else None."""
    name = dotted(call.func)
    if name is None or ctx.qualname(call.func) is not None:
        return None
    last = name.rsplit(".", 1)[-1].lower()
    if any(w in last for w in _LOSS_WORDS):
        return None
    if ctx.known(name) and ctx.lookup(name) is not None:
        return name if ctx.lookup(name) == MODULE else None
    return name if last in _MODULE_NAMES or last in ("layer", "block", "blk") or \
        last.endswith(("model", "_net", "net")) else None


_COMPILE_ONLY = {"torch.compile", "torch._dynamo.optimize"}


def compile_decorated(ctx: Context, func: cst.FunctionDef) -> bool:
    """Whether a function is decorated with `torch.compile` (bare or called), not TorchScript."""
    for d in func.decorators:
        expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if ctx.qualname(expr) in _COMPILE_ONLY:
            return True
    return False


def in_torch_compiled(ctx: Context) -> bool:
    """Inside (any level of) a function decorated with `torch.compile`: dynamo traces this code."""
    return any(compile_decorated(ctx, f) for f in ctx.functions)


# ---- elementwise ops (PFL3xx) --------------------------------------------------------------------
ELEMENTWISE = frozenset({
    "abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "square", "pow",
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "sigmoid", "erf", "erfc", "reciprocal",
    "sign", "floor", "ceil", "round", "trunc", "frac", "clamp", "clip", "clamp_min", "clamp_max", "add", "sub",
    "mul", "div", "true_divide", "maximum", "minimum", "relu", "gelu", "silu", "mish", "softplus", "relu6",
    "leaky_relu", "elu", "selu", "celu", "hardsigmoid", "hardswish", "hardtanh", "logit", "lerp", "where",
    "addcmul", "addcdiv", "nan_to_num"})
_ELEMENTWISE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)


def elementwise_kind(ctx: Context, node: cst.CSTNode) -> str | None:
    """"call" for an elementwise torch call or tensor method (`torch.tanh(x)`, `F.gelu(x)`, `x.sigmoid()`),
    "operator" for `a + b`, `a * b`, `-a`, ... that is not plain Python arithmetic; None otherwise."""
    if isinstance(node, cst.Call):
        qual = ctx.qualname(node.func)
        if qual is not None:
            head, _, last = qual.rpartition(".")
            return "call" if last in ELEMENTWISE and head in ("torch", "torch.nn.functional", "torch.special") \
                else None
        method = method_name(node)
        if method is not None and method.rstrip("_") in ELEMENTWISE and ctx.kind(node.func.value) in (TENSOR, None) \
                and not _python_scalar(ctx, node.func.value):
            return "call"
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ELEMENTWISE_OPERATORS):
        return None if _python_scalar(ctx, node.left) and _python_scalar(ctx, node.right) else "operator"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return None if _python_scalar(ctx, node.expression) else "operator"
    return None


def _python_scalar(ctx: Context, node: cst.CSTNode) -> bool:
    """A number, or arithmetic on numbers and `math.*` names: `2 / math.pi`, `math.sqrt(2)`."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.BinaryOperation):
        return _python_scalar(ctx, node.left) and _python_scalar(ctx, node.right)
    if isinstance(node, cst.UnaryOperation):
        return _python_scalar(ctx, node.expression)
    target = node.func if isinstance(node, cst.Call) else node
    qual = ctx.qualname(target)
    return qual is not None and qual.startswith("math.") or ctx.kind(node) == PYTHON
