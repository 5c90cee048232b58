"""The program model of one file: scopes and their bindings, functions, classes, loops, and where every
node sits (its frame and its place in the file's order). One walk builds it; rules read it.

The walk is also where rules that still look at nodes one by one get called (`visit_<Node>` hooks):
during the walk the model answers questions about the code seen so far (`model.frame`, `in_loop`...);
after it, `finish(model)` hooks ask whole-file questions: what a value is and where it lives
(`values.py`), whether code runs on every step (`steps.py`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Callable, Iterable

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import conjuncts, dotted, int_value, target_names
from perflint.tree import fields, is_node_type

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Decorators that compile the function they wrap (a ScriptModule's methods by `script_method`).
_COMPILING = api.COMPILERS | {"torch.jit.script_method"}
# Node types the model lists in file order (`model.nodes(type)`), for rule families that look at all of them.
INDEXED = (cst.If, cst.While, cst.Assert, cst.IfExp, cst.FormattedStringExpression, cst.Subscript,
           cst.BinaryOperation, cst.UnaryOperation, cst.Assign, cst.AugAssign, cst.Name, cst.Attribute, cst.Yield,
           cst.With)


class Scope:
    """Names bound in a module, class, function, lambda or comprehension, each with its bindings in order."""

    __slots__ = ("node", "kind", "parent", "bindings", "globals", "function", "cls")

    def __init__(self, node: cst.CSTNode, kind: str, parent: "Scope | None", function=None, cls=None) -> None:
        self.node = node
        self.kind = kind  # "module", "class", "function", "lambda", "comprehension"
        self.parent = parent
        self.bindings: dict[str, list[Binding]] = {}
        self.globals: set[str] = set()
        self.function = function  # FunctionInfo for function and lambda scopes
        self.cls = cls  # ClassInfo for class scopes

    def bind(self, name: str, binding: "Binding") -> None:
        self.bindings.setdefault(name, []).append(binding)


class Binding:
    """One place where a name gets a value: `how` says what kind of place, `value` holds the expression
    (or call, or loop iterable) it comes from, `path` the position inside a tuple being unpacked."""

    __slots__ = ("order", "how", "target", "value", "path", "frame")

    def __init__(self, order: int, how: str, target, value, path: tuple, frame: "Frame") -> None:
        self.order = order
        self.how = how  # assign, annotation, aug, for, comp, param, with, mutate, def, class, import, walrus,
        #                 except, del
        self.target = target
        self.value = value
        self.path = path
        self.frame = frame

    def assigned(self) -> cst.CSTNode | None:
        """The expression an assignment gives this name, through the tuple it unpacks (`self.gr,
        self.autobalance = 1.0, autobalance`: `autobalance`); None for other bindings or a starred element."""
        if self.how != "assign":
            return None
        value = self.value
        for i in self.path:
            value = value.elements[i].value if type(value) is cst.Tuple and i < len(value.elements) \
                and type(value.elements[i]) is not cst.StarredElement else None
        return value


class Frame:
    """A region of code with one context: a scope, a loop body, a branch, a gated block, a `no_grad` block.
    Frames form a tree; every node of the file records the frame it is in."""

    __slots__ = ("kind", "node", "parent", "scope", "function", "loop", "no_grad", "compiled", "depth", "condition")

    def __init__(self, kind: str, node: cst.CSTNode, parent: "Frame | None", scope: Scope | None = None,
                 function=None, no_grad: bool | None = None, compiled: bool | None = None) -> None:
        self.kind = kind  # module, class, function, lambda, comprehension, loop, branch, gate, once, block, error,
        # handler
        self.node = node
        self.parent = parent
        inherit = parent is not None and kind not in ("function", "lambda", "class")
        self.scope = scope if scope is not None else parent.scope
        self.function = function if kind in ("function", "lambda") else \
            (None if kind == "class" else parent.function if parent is not None else None)
        self.loop = self if kind in ("loop", "comprehension") else (parent.loop if inherit else None)
        base_no_grad = parent.no_grad if parent is not None else False
        self.no_grad = base_no_grad if no_grad is None else (no_grad or base_no_grad)
        base_compiled = parent.compiled if parent is not None else False
        self.compiled = base_compiled if compiled is None else (compiled or base_compiled)
        self.depth = parent.depth + 1 if parent is not None else 0
        self.condition: tuple | None = None  # for an `if` body or its `else`: (test, whether it holds there)

    def chain(self) -> Iterable["Frame"]:
        """This frame and its parents, innermost first."""
        frame = self
        while frame is not None:
            yield frame
            frame = frame.parent

    def loops(self) -> list["Frame"]:
        """Enclosing loop and comprehension frames of the current function (or module), innermost first."""
        out = []
        loop = self.loop
        while loop is not None:
            out.append(loop)
            parent = loop.parent
            loop = parent.loop if parent is not None and parent.function is loop.function else None
        return out

    def every_iteration_of(self, loop: "Frame") -> bool:
        """Whether code in this frame runs on every iteration of `loop`: no branch between them."""
        frame = self
        while frame is not loop:
            if frame is None or frame.kind != "block":
                return False
            frame = frame.parent
        return True

    def encloses(self, other: "Frame") -> bool:
        """Whether `other` is this frame or inside it."""
        while other is not None and other.depth >= self.depth:
            if other is self:
                return True
            other = other.parent
        return False


class FunctionInfo:
    """A `def` or `lambda` of the file."""

    __slots__ = ("node", "name", "cls", "scope", "frame", "params", "decorators", "calls", "returns", "yields",
                 "is_lambda")

    def __init__(self, node, name: str, cls, decorators: list[str]) -> None:
        self.node = node
        self.name = name
        self.cls = cls  # ClassInfo of a method
        self.scope: Scope | None = None
        self.frame: Frame | None = None
        self.params: list[tuple[str, cst.Param, str]] = []  # (name, node, "pos" | "kw" | "star")
        self.decorators = decorators  # qualified (or dotted) names of the decorators
        self.calls: list[cst.Call] = []  # calls made directly in its body (not in nested functions)
        self.returns: list[cst.BaseExpression] = []
        self.yields: list[cst.BaseExpression] = []  # a generator's yielded values (`yield x, y`)
        self.is_lambda = type(node) is cst.Lambda

    @property
    def qualname(self) -> str:
        return f"{self.cls.name}.{self.name}" if self.cls is not None else self.name

    def positional(self) -> list[str]:
        """Parameters that positional arguments fill, `self`/`cls` of a method left out."""
        names = [n for n, _, k in self.params if k == "pos"]
        if self.cls is not None and names and not self._static():
            names = names[1:]
        return names

    def _static(self) -> bool:
        return any(d.rsplit(".", 1)[-1] == "staticmethod" for d in self.decorators)


class ClassInfo:
    __slots__ = ("node", "name", "bases", "methods", "attrs", "scope")

    def __init__(self, node: cst.ClassDef, bases: list[str]) -> None:
        self.node = node
        self.name = node.name.value
        self.bases = bases  # qualified or dotted names of the bases
        self.methods: dict[str, FunctionInfo] = {}
        self.attrs: dict[str, list[Binding]] = {}  # `self.x = ...` in any method
        self.scope: Scope | None = None


def _gate(test: cst.BaseExpression, counters: set[str] = frozenset()) -> bool:
    """`if step % log_every == 0:` (once every k iterations), `if i == 0:` or `if t == num_steps - 1:` (once,
    for a loop counter `t`), `if batch_i < 3:` (the first few): a block whose cost is not paid on every
    iteration."""
    stack = [test]
    while stack:
        node = stack.pop()
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
            return True
        if type(node) is cst.Comparison and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) is cst.Equal:
            sides = (node.left, node.comparisons[0].comparator)
            if any(type(side) is cst.Integer for side in sides) and not main_process_test(node):
                return True  # (not `if rank == 0:`, which the main process takes every step)
            if any(type(side) is cst.Name and side.value in counters for side in sides):
                return True
        if type(node) is cst.Comparison and len(node.comparisons) == 1 \
                and type(node.comparisons[0].operator) in (cst.LessThan, cst.LessThanEqual) \
                and type(node.left) is cst.Name and node.left.value in counters \
                and type(node.comparisons[0].comparator) is cst.Integer:
            return True  # `if plots and batch_i < 3:`: the first few iterations
        if type(node) in (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation):
            stack.extend(c for c in node.children if isinstance(c, cst.BaseExpression))
        elif type(node) is cst.ComparisonTarget:
            stack.append(node.comparator)
    return False


_MAIN_PROCESS = re.compile(r"(?:^|_)(?:is_)?(?:local_)?(?:main|master)(?:_process)?$|^is_rank_?(?:zero|0)$")
_RANKS = frozenset({"rank", "local_rank", "global_rank", "get_rank", "process_index", "RANK", "LOCAL_RANK"})


def main_process_test(test: cst.BaseExpression) -> bool:
    """A test the main process passes: `accelerator.is_local_main_process`, `self.is_main`, `rank == 0`,
    `dist.get_rank() == 0`."""
    name = dotted(test.func if type(test) is cst.Call and not test.args else test) or ""
    if _MAIN_PROCESS.search(name.rsplit(".", 1)[-1]):
        return True
    if type(test) is cst.Comparison and len(test.comparisons) == 1 \
            and type(test.comparisons[0].operator) is cst.Equal and int_value(test.comparisons[0].comparator) == 0:
        left = test.left.func if type(test.left) is cst.Call else test.left
        return (dotted(left) or "").rsplit(".", 1)[-1] in _RANKS
    return False


def _one_line_tests(module: cst.Module) -> dict[str, tuple[cst.BaseExpression, tuple[str, ...]]]:
    """The top-level functions whose body is one `return` of a test, by name: `def divisible_by(num, den):
    return (num % den) == 0`, so that `if divisible_by(i, k):` reads as the test it returns."""
    found = {}
    for statement in module.body:
        if type(statement) is cst.FunctionDef and type(statement.body) is cst.IndentedBlock:
            lines = [line for line in statement.body.body if not (
                type(line) is cst.SimpleStatementLine and type(line.body[0]) is cst.Expr
                and type(line.body[0].value) in (cst.SimpleString, cst.ConcatenatedString))]  # a docstring
            if len(lines) == 1 and type(lines[0]) is cst.SimpleStatementLine \
                    and type(lines[0].body[0]) is cst.Return and lines[0].body[0].value is not None:
                found[statement.name.value] = (lines[0].body[0].value, tuple(
                    p.name.value for p in statement.params.params))
    return found


def _fresh_state(test: cst.BaseExpression) -> bool:
    subject = None
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        subject = test.expression
    elif type(test) is cst.Comparison and len(test.comparisons) == 1:
        op, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if type(op) is cst.NotIn:
            subject = right
        elif type(op) is cst.Equal and type(right) is cst.Integer and right.value == "0" \
                and type(test.left) is cst.Call and dotted(test.left.func) == "len" and test.left.args:
            subject = test.left.args[0].value
    if type(subject) is cst.Subscript:
        subject = subject.value
    name = (dotted(subject) or "").rsplit(".", 1)[-1] if subject is not None else ""
    return name == "state" or name.endswith("_state")


# A flag that says this step is one of the few that log, evaluate or save: `if should_log:`,
# `if not self.metrics.should_log(step):`, `if do_eval:`, `if log_this_step:`.
_PERIODIC = re.compile(r"^(?:should|do|is|need|time)_?(?:to_?)?(?:log|print|eval|evaluate|validate|val|save|"
                       r"checkpoint|ckpt|report|sample|visuali[sz]e|plot|display|profile)"
                       r"|^(?:log|eval|save|print|ckpt|checkpoint)_(?:step|iter|now|this_step|due|time)$")


def _periodic(test: cst.BaseExpression) -> bool:
    """`if step % k == 0:` anywhere, or a flag named for the occasional step (`_PERIODIC`), negated or not,
    alone or as a part of the test (veRL's `if is_last_step and ... or (self.test_freq > 0 and is_valid_step):`,
    `is_valid_step = global_step % self.test_freq == 0`)."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
    if type(test) is cst.Call:
        test = test.func
    name = dotted(test)
    if name is not None:
        return bool(_PERIODIC.match(name.rsplit(".", 1)[-1].lower()))
    return any(type(n) is cst.BinaryOperation and type(n.operator) is cst.Modulo
               or type(n) is cst.Name and _PERIODIC.match(n.value.lower()) or _rarely(n) for n in _walk_expr(test))


_DRAWS = {"random.random", "np.random.random", "np.random.rand", "numpy.random.random", "numpy.random.rand"}


def _rarely(test: cst.CSTNode) -> bool:
    """`random.random() < 0.005` (icefall's occasional diagnostics): a draw that passes on at most one call in
    ten, like `step % 10 == 0` on average."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 \
            or type(test.comparisons[0].operator) not in (cst.LessThan, cst.LessThanEqual):
        return False
    bound = test.comparisons[0].comparator
    return type(test.left) is cst.Call and not test.left.args and dotted(test.left.func) in _DRAWS \
        and type(bound) in (cst.Float, cst.Integer) and 0 <= float(bound.evaluated_value) <= 0.1


def interval_gate(node: cst.If) -> bool:
    """`if t_env - self.log_stats_t >= interval:` whose body restarts the count (`self.log_stats_t = t_env`):
    once every `interval` steps, like `step % k == 0`; also as the last part of an `and` (vicreg's `if
    args.rank == 0 and current_time - last_logging > args.log_freq_time:`)."""
    test = conjuncts(node.test)[-1]
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 \
            or type(test.comparisons[0].operator) not in (cst.GreaterThanEqual, cst.GreaterThan) \
            or type(test.left) is not cst.BinaryOperation or type(test.left.operator) is not cst.Subtract:
        return False
    mark = dotted(test.left.right)
    if mark is None or type(node.body) is not cst.IndentedBlock:
        return False
    return any(type(line) is cst.SimpleStatementLine and any(
        type(small) is cst.Assign and any(dotted(t.target) == mark for t in small.targets) for small in line.body)
        for line in node.body.body)


def _walk_expr(node: cst.CSTNode):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if type(n) in (cst.Comparison, cst.BooleanOperation, cst.UnaryOperation, cst.BinaryOperation):
            stack.extend(c for c in n.children if isinstance(c, cst.BaseExpression))
        elif type(n) is cst.ComparisonTarget:
            stack.append(n.comparator)


def _guard(statement: cst.CSTNode) -> bool:
    """`if not should_log: return`: a guard clause after which the rest of the block runs only on the
    occasional step."""
    if type(statement) is not cst.If or statement.orelse is not None or not _periodic(statement.test):
        return False
    negated = type(statement.test) is cst.UnaryOperation and type(statement.test.operator) is cst.Not
    body = statement.body.body if type(statement.body) is cst.IndentedBlock else ()
    if not negated or not body or not all(type(line) is cst.SimpleStatementLine for line in body):
        return False
    return all(type(s) in (cst.Return, cst.Continue) for line in body for s in line.body)


def _caches(node: cst.If) -> bool:
    """`if self.mask is None or self.mask.size(0) != n: self.mask = make(n)`: a value computed once and kept
    (again only when it must change), not on every call. Also an optimizer's per-parameter state, made
    lazily on its first step (`if not state:`, `if len(state) == 0:`, `if "exp_avg" not in state:`), and a
    memo filled on a miss (`if key not in hann_window: hann_window[key] = torch.hann_window(n).to(d)`, RVC's
    window per size, dtype and device)."""
    test = node.test
    if _fresh_state(test):
        return True
    names, memos = set(), set()
    stack = [test]
    while stack:
        n = stack.pop()
        if type(n) is cst.BooleanOperation:
            stack += [n.left, n.right]
        elif type(n) is cst.Comparison and len(n.comparisons) == 1 \
                and type(n.comparisons[0].operator) is cst.Is \
                and type(n.comparisons[0].comparator) is cst.Name and n.comparisons[0].comparator.value == "None":
            name = dotted(n.left)
            if name is not None:
                names.add(name)
        elif type(n) is cst.Comparison and len(n.comparisons) == 1 and type(n.comparisons[0].operator) is cst.NotIn:
            memo = dotted(n.comparisons[0].comparator)
            if memo is not None:
                memos.add((memo, dotted(n.left)))
    if not names and not memos:
        return False
    body = node.body.body if type(node.body) is cst.IndentedBlock else ()
    for statement in body:
        if type(statement) is cst.SimpleStatementLine:
            for small in statement.body:
                if type(small) is cst.Assign and any(
                        dotted(t.target) in names or type(t.target) is cst.Subscript and len(t.target.slice) == 1
                        and type(t.target.slice[0].slice) is cst.Index
                        and (dotted(t.target.value), dotted(t.target.slice[0].slice.value)) in memos
                        for t in small.targets):
                    return True
    return False


class FileModel:
    """Everything the rules know about one file. Built by `build()`; see the module docstring."""

    def __init__(self, path: str, module: cst.Module, facts=None, text: str = "") -> None:
        from perflint.model.project import FileFacts

        self.path = path
        self.module = module
        self.text = text
        self.facts = facts if facts is not None else FileFacts.alone()
        self.aliases: dict[str, str] = {}  # local name -> qualified name, from imports
        # module-level imports, relative ones included: local name -> (level, module, imported name or None)
        self.imports: dict[str, tuple[int, str, str | None]] = {}
        self.module_scope = Scope(module, "module", None)
        self.frame = Frame("module", module, None, scope=self.module_scope)
        self.order = 0
        self.sites: dict[cst.CSTNode, tuple[Frame, int]] = {}
        self.functions: list[FunctionInfo] = []
        self.function_of: dict[cst.CSTNode, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.all_loops: list[Frame] = []  # every loop and comprehension of the file, in order
        self.calls: list[cst.Call] = []
        self.index: dict[type, list] = {t: [] for t in INDEXED}
        self.findings: list = []
        self._qualnames: dict[int, tuple[cst.CSTNode, str | None]] = {}
        self._memo: dict = {}  # per-question caches of values.py, steps.py and rule families
        self._trees: dict = {}  # what a subtree holds (its calls, the names it binds): true during the walk too
        self.top_orders: list[int] = []  # the order at which each top-level statement starts
        self.block_orders: dict[cst.IndentedBlock, tuple[list[int], int]] = {}  # the same in a block, and its end

    def walked(self) -> None:
        """The walk is over. Answers cached during it saw only the code walked so far (a function's callers
        or calls, who trains, what is passed where): dropped, so that every rule's `finish` sees the whole
        file and a rule's findings never depend on which other rules ran during the walk."""
        self._memo.clear()

    def release(self) -> None:
        """Break the model's reference cycles (a function and its frame and scope, a scope and its bindings,
        the caches and the model), so that the model and the file's tree are freed as soon as the last
        finding is placed, without waiting for the garbage collector to find them."""
        scopes = [self.module_scope, *(f.scope for f in self.functions), *(c.scope for c in self.classes.values()),
                  *(loop.scope for loop in self.all_loops)]
        for scope in scopes:
            if scope is not None:
                scope.bindings.clear()
                scope.function = scope.cls = None
        for loop in self.all_loops:
            loop.loop = None  # (a loop's frame is its own `loop`)
        for info in self.functions:
            info.frame = info.scope = info.cls = None
        for cls in self.classes.values():
            cls.scope = None
        self._memo.clear()
        self._trees.clear()
        self.sites.clear()

    # ---- names ----------------------------------------------------------------------------------------
    def qualname(self, node: cst.CSTNode) -> str | None:
        """Qualified name of a Name/Attribute chain through import aliases: with `import torch as T`,
        `T.nn.functional.relu` -> "torch.nn.functional.relu"; None when the head is not imported."""
        key = id(node)  # by id: a node's __hash__ is a Python call (the node is kept, so its id stays its own)
        hit = self._qualnames.get(key)
        if hit is not None:
            return hit[1]
        name = dotted(node)
        qual = None
        if name is not None:
            head, _, rest = name.partition(".")
            target = self.aliases.get(head)
            if target is not None:
                qual = f"{target}.{rest}" if rest else target
        self._qualnames[key] = (node, qual)
        return qual

    def call_name(self, call: cst.Call) -> str | None:
        return self.qualname(call.func)

    def is_torch(self, node: cst.CSTNode, *names: str) -> bool:
        return self.qualname(node) in names

    # ---- where a node is ------------------------------------------------------------------------------
    def site(self, node: cst.CSTNode) -> tuple[Frame, int]:
        return self.sites[node]

    def frame_of(self, node: cst.CSTNode) -> Frame:
        return self.sites[node][0]

    def function_at(self, frame: Frame) -> FunctionInfo | None:
        return frame.function

    # During the walk, about the node being visited (the rules' visit hooks use these).
    @property
    def loops(self) -> list[cst.CSTNode]:
        """The loops (and comprehensions) around the current node in its function, outermost first."""
        return [f.node for f in reversed(self.frame.loops())]

    @property
    def in_loop(self) -> bool:
        return self.frame.loop is not None

    @property
    def in_logging_gate(self) -> bool:
        return any(f.kind == "gate" for f in self._within_function(self.frame))

    @property
    def in_hot_loop(self) -> bool:
        return self.in_loop and not self.in_logging_gate

    @property
    def in_no_grad(self) -> bool:
        return self.frame.no_grad

    @property
    def in_compiled(self) -> bool:
        return self.frame.compiled

    @property
    def function(self) -> cst.FunctionDef | None:
        return self.def_of(self.frame)

    @staticmethod
    def def_of(frame: Frame) -> cst.FunctionDef | None:
        """The `def` a frame is in, past any lambdas; None at module level."""
        f = frame.function
        while f is not None and f.is_lambda:
            f = f.frame.parent.function
        return f.node if f is not None else None

    def torch_compiled(self, frame: Frame | None = None) -> bool:
        """Inside (any level of) a function decorated with `torch.compile`: TorchDynamo traces this code."""
        function = (frame or self.frame).function
        while function is not None:
            if any(d in api.TORCH_COMPILE for d in function.decorators):
                return True
            parent = function.frame.parent if function.frame is not None else None
            function = parent.function if parent is not None else None
        return False

    @property
    def function_info(self) -> FunctionInfo | None:
        return self.frame.function

    @property
    def in_forward(self) -> bool:
        f = self.frame.function
        return f is not None and f.name == "forward" and f.cls is not None

    @staticmethod
    def _within_function(frame: Frame) -> Iterable[Frame]:
        function = frame.function
        while frame is not None and frame.function is function and frame.kind not in ("function", "lambda"):
            yield frame
            frame = frame.parent

    # ---- values (model/values.py) -------------------------------------------------------------------
    def value(self, node: cst.CSTNode):
        from perflint.model.values import Values

        return Values.of(self).value(node)

    def kind(self, node: cst.CSTNode) -> str | None:
        """What an expression holds: "tensor", "ndarray", "module", "loader", ... or None (unknown)."""
        return self.value(node).kind

    def is_tensor(self, node: cst.CSTNode) -> bool:
        return self.value(node).kind == "tensor"

    def known(self, name: str) -> bool:
        """Whether this file binds `name` where the current node can see it."""
        scope = self.frame.scope
        while scope is not None:
            if name in scope.bindings:
                return True
            scope = scope.parent
        return False

    def calls_in(self, node: cst.CSTNode) -> set[str]:
        """Qualified names (or dotted names, when not imported) of every call inside a subtree."""
        key = ("calls-in", node)
        names = self._trees.get(key)
        if names is None:
            from perflint.tree import find_all

            names = self._trees[key] = set()
            for call in find_all(node, cst.Call):
                name = self.qualname(call.func) or dotted(call.func)
                if name:
                    names.add(name)
        return names

    def one_line_tests(self) -> dict[str, tuple[cst.BaseExpression, tuple[str, ...]]]:
        """The file's top-level functions whose body returns one test, by name: (the test, the parameters)."""
        tests = self._memo.get("one-line-tests")
        if tests is None:
            tests = self._memo["one-line-tests"] = _one_line_tests(self.module)
        return tests

    def assigned_in(self, node: cst.CSTNode) -> set[str]:
        """Dotted names (re)bound anywhere inside a subtree (a loop, with its target), in-place methods
        (`x.mul_(2)`, `xs.append(t)`) included: a value not in this set is the same on every iteration."""
        key = ("assigned-in", node)
        names = self._trees.get(key)
        if names is None:
            names = self._trees[key] = _bound_names(node)
        return names

    def statement_path(self, node: cst.CSTNode) -> tuple[int, ...]:
        """Where the statement that holds a node sits: its index in `module.body`, then, through the bodies of
        the functions and classes around it, its index in each (`(3, 0, 5)`: the sixth statement of the first
        method of the fourth top-level statement), and so on into the bodies of loops, `if`s, `with`s and
        `try`s. Positions render only that statement."""
        order = self.sites[node][1]
        i = max(bisect_right(self.top_orders, order) - 1, 0)
        path, statement = [i], self.module.body[i] if self.module.body else None
        while type(getattr(statement, "body", None)) is cst.IndentedBlock:
            recorded = self.block_orders.get(statement.body)
            if recorded is None or order > recorded[1]:  # not recorded, or in an `else`, a handler
                break
            j = bisect_right(recorded[0], order) - 1
            if j < 0:  # in the header (decorators, parameters, a loop's iterable, a condition)
                break
            path.append(j)
            statement = statement.body.body[j]
        return tuple(path)

    def nodes(self, node_type: type) -> list:
        """Every node of an indexed type (INDEXED), in file order."""
        return self.index[node_type]


_BINDERS = (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Call)
_MUTATORS = ("append", "extend", "update", "add_module")


def _bound_names(node: cst.CSTNode) -> set[str]:
    from perflint.tree import find_all

    out: set[str] = set()

    def add(target: cst.CSTNode) -> None:
        if type(target) in (cst.Tuple, cst.List):
            for e in target.elements:
                add(e.value)
        elif type(target) is cst.StarredElement:
            add(target.value)
        else:
            name = dotted(target)
            if name is None and type(target) is cst.Subscript:
                name = dotted(target.value)
            if name is not None:
                out.add(name)

    for n in find_all(node, _BINDERS):
        if type(n) is not cst.Call:
            add(n.target)
        elif type(n.func) is cst.Attribute:
            m = n.func.attr.value
            if m.endswith("_") and not m.endswith("__") or m in _MUTATORS:
                base = dotted(n.func.value)
                if base is not None:
                    out.add(base)
    return out


class Walker:
    """Depth-first walk that builds the model and calls the rules' visit/leave hooks."""

    def __init__(self, model: FileModel, visits: dict, leaves: dict, broken: dict,
                 calls_by_name: dict | None = None) -> None:
        self.model = model
        self.visits, self.leaves = visits, leaves
        self.calls_by_name = calls_by_name or {}  # visit_Call hooks that want only some callees, by name
        self.broken = broken

    # ---- rule hooks ------------------------------------------------------------------------------------
    def call(self, rule, fn: Callable, *args) -> None:
        """Call one rule hook outside the walk (`finish`), with the same crash handling."""
        if rule in self.broken:
            return
        try:
            fn(*args)
        except RecursionError:
            raise
        except Exception as e:
            self._crashed(rule, e)

    def _crashed(self, rule, error: Exception) -> None:
        """A rule bug must not stop the other rules or files: record it and stop calling that rule."""
        text = " ".join(str(error).split())  # one line: a KeyError's text is the repr of its key, a whole node
        self.broken[rule] = f"{type(error).__name__}: {text[:200]}" + ("\u2026" if len(text) > 200 else "")
        self.visits = {t: [f for f in fns if f.__self__ is not rule] for t, fns in self.visits.items()}
        self.leaves = {t: [f for f in fns if f.__self__ is not rule] for t, fns in self.leaves.items()}
        self.calls_by_name = {n: [f for f in fns if f.__self__ is not rule] for n, fns in self.calls_by_name.items()}

    def _hooks(self, fns: list[Callable], node: cst.CSTNode) -> None:
        model = self.model
        for fn in fns:
            try:
                fn(node, model)
            except RecursionError:
                raise
            except Exception as e:
                self._crashed(fn.__self__, e)

    # ---- the walk --------------------------------------------------------------------------------------
    def walk(self, node: cst.CSTNode) -> None:
        model = self.model
        model.order += 1
        model.sites[node] = (model.frame, model.order)
        node_type = type(node)
        listed = model.index.get(node_type)
        if listed is not None:
            listed.append(node)
        fns = self.visits.get(node_type)
        if fns:
            self._hooks(fns, node)
        if node_type is cst.Call and self.calls_by_name:
            func = node.func
            name = func.attr.value if type(func) is cst.Attribute else \
                model.aliases.get(func.value, func.value).rpartition(".")[2] if type(func) is cst.Name else None
            fns = self.calls_by_name.get(name)
            if fns:
                self._hooks(fns, node)
        special = _SPECIAL.get(node_type)
        if special is not None:
            special(self, node)
        else:
            self.children(node)
        fns = self.leaves.get(node_type)
        if fns:
            self._hooks(fns, node)

    def children(self, node: cst.CSTNode, skip: tuple[str, ...] = ()) -> None:
        walk = self.walk
        for name in fields(type(node)):
            if name in skip:
                continue
            value = getattr(node, name)
            kind = type(value)
            if kind is tuple or kind is list:
                for child in value:
                    if is_node_type(type(child)):
                        walk(child)
            elif is_node_type(kind):
                walk(value)

    def _in(self, frame: Frame, nodes: Iterable[cst.CSTNode]) -> None:
        model = self.model
        outer, model.frame = model.frame, frame
        try:
            for n in nodes:
                if n is not None:
                    self.walk(n)
        finally:
            model.frame = outer

    def bind(self, target: cst.CSTNode, how: str, value, path: tuple = ()) -> None:
        """Record what an assignment target now holds; tuples are unpacked into paths."""
        model = self.model
        if type(target) in (cst.Tuple, cst.List):
            for i, element in enumerate(target.elements):
                if type(element) is cst.StarredElement:
                    self.bind(element.value, "del", None)
                else:
                    self.bind(element.value, how, value, path + (i,))
            return
        if type(target) is cst.StarredElement:
            self.bind(target.value, "del", None)
            return
        name = dotted(target)
        if name is None:
            return
        frame = model.frame
        binding = Binding(model.order, how, target, value, path, frame)
        if name.startswith("self.") and name.count(".") == 1:
            function = frame.function
            if function is not None and function.cls is not None:
                function.cls.attrs.setdefault(name[5:], []).append(binding)
                return
        scope = frame.scope
        if name in scope.globals:
            scope = model.module_scope
        scope.bind(name, binding)

    # ---- context-changing nodes -------------------------------------------------------------------------
    def _import(self, node: cst.Import) -> None:
        model = self.model
        for alias in node.names:
            full = dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
                model.aliases[local] = full
                model.imports[local] = (0, full, None)
            else:
                local = full.split(".")[0]
                model.aliases[local] = local
                model.imports[local] = (0, local, None)
            model.frame.scope.bind(local, Binding(model.order, "import", alias, full, (), model.frame))
        self.children(node)

    def _import_from(self, node: cst.ImportFrom) -> None:
        model = self.model
        if type(node.names) is cst.ImportStar:
            return
        module = dotted(node.module) if node.module is not None else ""
        for alias in node.names:  # a function's own imports too (`from functions.denoising import ddpm_steps` in
            name = dotted(alias.name)  # the branch that samples with it), where the module's do not name it
            local = alias.asname.name.value if alias.asname is not None \
                and type(alias.asname.name) is cst.Name else name
            if name and local and module is not None and (model.frame.kind == "module" or local not in model.imports):
                model.imports[local] = (len(node.relative), module, name)
        if node.relative or node.module is None:
            return
        base = dotted(node.module)
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name.value if alias.asname is not None and type(alias.asname.name) is cst.Name \
                else name
            if name and local:
                model.aliases[local] = f"{base}.{name}"
                model.frame.scope.bind(local, Binding(model.order, "import", alias, f"{base}.{name}", (),
                                                      model.frame))

    def _decorator_names(self, decorators) -> list[str]:
        out = []
        for d in decorators:
            expr = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
            name = self.model.qualname(expr) or dotted(expr)
            if name:
                out.append(self._compiler_alias(expr) or name)
        return out

    def _compiler_alias(self, expr) -> str | None:
        """`@MyFunction` after `MyFunction = torch.jit.script_method` at the top of the file (RWKV's switch on
        an environment variable, set on by its scripts): the compiler one of the module's assignments names."""
        if type(expr) is not cst.Name:
            return None
        frame = self.model.frame
        while frame.parent is not None:
            frame = frame.parent
        for b in frame.scope.bindings.get(expr.value, ()):
            if b.how == "assign" and b.value is not None and not b.path:
                name = self.model.qualname(b.value)
                if name in _COMPILING:
                    return name
        return None

    def _function(self, node: cst.FunctionDef) -> None:
        model = self.model
        for d in node.decorators:
            self.walk(d)
        decorators = self._decorator_names(node.decorators)
        outer = model.frame
        cls = outer.scope.cls if outer.scope.kind == "class" else None
        info = FunctionInfo(node, node.name.value, cls, decorators)
        if cls is not None:
            cls.methods[info.name] = info
        model.functions.append(info)
        model.function_of[node] = info
        self._place_name(node.name)
        self.bind(node.name, "def", info)
        self.walk(node.params)  # defaults and annotations are evaluated in the enclosing scope
        compiled = any(d in _COMPILING for d in decorators)
        no_grad = any(d in api.NO_GRAD for d in decorators)
        self._enter_function(info, node, node.params, compiled, no_grad, node.body)

    def _enter_function(self, info: FunctionInfo, node, params: cst.Parameters, compiled: bool, no_grad: bool,
                        body) -> None:
        model = self.model
        outer = model.frame
        parent_scope = outer.scope
        while parent_scope.kind == "class":  # a method does not see its class's names
            parent_scope = parent_scope.parent
        info.scope = Scope(node, "lambda" if info.is_lambda else "function", parent_scope, function=info)
        frame = Frame("lambda" if info.is_lambda else "function", node, outer, scope=info.scope, function=info,
                      no_grad=no_grad, compiled=compiled)
        info.frame = frame
        model.frame = frame
        try:
            for kind, group in (("pos", params.posonly_params), ("pos", params.params), ("kw", params.kwonly_params)):
                for p in group:
                    info.params.append((p.name.value, p, kind))
                    info.scope.bind(p.name.value, Binding(model.order, "param", p, info, (), frame))
            for p in (params.star_arg, params.star_kwarg):
                if type(p) is cst.Param:
                    info.params.append((p.name.value, p, "star"))
                    info.scope.bind(p.name.value, Binding(model.order, "param", p, info, (), frame))
            self.walk(body)
        finally:
            model.frame = outer

    def _place_name(self, name: cst.Name) -> None:
        """A def's or class's name has a place (evidence cites it) but is no read of a name: no hooks."""
        model = self.model
        model.order += 1
        model.sites[name] = (model.frame, model.order)

    def _lambda(self, node: cst.Lambda) -> None:
        model = self.model
        self.walk(node.params)
        info = FunctionInfo(node, "<lambda>", None, [])
        model.functions.append(info)
        model.function_of[node] = info
        self._enter_function(info, node, node.params, False, False, node.body)

    def _class(self, node: cst.ClassDef) -> None:
        model = self.model
        for d in node.decorators:
            self.walk(d)
        for base in node.bases:
            self.walk(base)
        bases = [model.qualname(b.value) or dotted(b.value) or "" for b in node.bases]
        info = ClassInfo(node, bases)
        model.classes.setdefault(info.name, info)
        self._place_name(node.name)
        self.bind(node.name, "class", info)
        outer = model.frame
        info.scope = Scope(node, "class", outer.scope, cls=info)
        self._in(Frame("class", node, outer, scope=info.scope), [node.body])

    def _for(self, node: cst.For) -> None:
        model = self.model
        self.walk(node.iter)
        frame = Frame("loop", node, model.frame)
        model.all_loops.append(frame)
        outer, model.frame = model.frame, frame
        try:
            self.bind(node.target, "for", node.iter)
            self.walk(node.target)
            self.walk(node.body)
        finally:
            model.frame = outer
        if node.orelse is not None:
            self._in(Frame("branch", node.orelse, model.frame), [node.orelse])

    def _while(self, node: cst.While) -> None:
        model = self.model
        frame = Frame("loop", node, model.frame)
        model.all_loops.append(frame)
        self._in(frame, [node.test, node.body])
        if node.orelse is not None:
            self._in(Frame("branch", node.orelse, model.frame), [node.orelse])

    def _comprehension(self, node: cst.CSTNode) -> None:
        model = self.model
        self.walk(node.for_in.iter)  # evaluated once, in the enclosing scope
        outer = model.frame
        scope = Scope(node, "comprehension", outer.scope)
        scope.function = outer.scope.function
        frame = Frame("comprehension", node, outer, scope=scope)
        model.all_loops.append(frame)
        model.frame = frame
        try:
            for_in = node.for_in
            first = True
            while for_in is not None:
                if not first:
                    self.walk(for_in.iter)
                first = False
                self.bind(for_in.target, "comp", for_in.iter)
                self.walk(for_in.target)
                for cond in for_in.ifs:
                    self.walk(cond)
                for_in = for_in.inner_for_in
            for name in ("elt", "key", "value"):
                child = getattr(node, name, None)
                if child is not None:
                    self.walk(child)
        finally:
            model.frame = outer

    def _if(self, node: cst.If) -> None:
        model = self.model
        self.walk(node.test)
        loop = model.frame.loop
        counters = target_names(loop.node.target) if loop is not None and type(loop.node) is cst.For else set()
        test = node.test
        if loop is not None:  # `num_total += 1` earlier in the loop: a counter of iterations too
            counters = counters | self._counted(test, loop)
        if loop is not None and type(test) is cst.Name:  # `regularize = i % k == 0` ... `if regularize:`
            bound = [b for b in model.frame.scope.bindings.get(test.value, ()) if b.how == "assign" and not b.path]
            if bound and loop.encloses(bound[-1].frame):
                test = bound[-1].value
        if type(test) is cst.Call and type(test.func) is cst.Name:  # `if divisible_by(i, validate_every):`
            test = model.one_line_tests().get(test.func.value, (test,))[0]
        gated = loop is not None and _gate(test, counters) or _periodic(test) \
            and not (type(test) is cst.UnaryOperation and type(test.operator) is cst.Not) or interval_gate(node)
        kind = "gate" if gated else "once" if _caches(node) else "branch"
        body = Frame(kind, node, model.frame)
        body.condition = (node.test, True)
        self._in(body, [node.body])
        if node.orelse is not None:
            orelse = Frame("branch", node.orelse, model.frame)
            orelse.condition = (node.test, False)
            self._in(orelse, [node.orelse])

    def _counted(self, test: cst.BaseExpression, loop: Frame) -> set[str]:
        """The names in `test` that the loop counts up by a constant (`n += 1`) before this point."""
        out = set()
        for name in _walk_expr(test):
            if type(name) is cst.Name and any(
                    b.how == "aug" and loop.encloses(b.frame) and type(b.value.operator) is cst.AddAssign
                    and type(b.value.value) is cst.Integer
                    for b in self.model.frame.scope.bindings.get(name.value, ())):
                out.add(name.value)
        return out

    def _block(self, node: cst.IndentedBlock) -> None:
        body, model = node.body, self.model
        starts = []
        for i, statement in enumerate(body):
            starts.append(model.order + 1)
            self.walk(statement)
            if _guard(statement) and i + 1 < len(body):  # `if not should_log: return`, then the logging
                self._in(Frame("gate", statement, model.frame), body[i + 1:])
                return  # (the block's statements are not recorded: positions render it whole)
        model.block_orders[node] = (starts, model.order)

    def _try(self, node) -> None:
        model = self.model
        self.walk(node.body)
        for handler in node.handlers:
            frame = Frame("handler", handler, model.frame)  # runs when an exception is caught: not per step
            outer, model.frame = model.frame, frame
            try:
                if handler.name is not None:
                    self.bind(handler.name.name, "except", handler)
                self.children(handler)
            finally:
                model.frame = outer
        if node.orelse is not None:
            self._in(Frame("branch", node.orelse, model.frame), [node.orelse])
        if node.finalbody is not None:
            self.walk(node.finalbody)

    def _with(self, node: cst.With) -> None:
        model = self.model
        no_grad = False
        for item in node.items:
            self.walk(item.item)
            expr = item.item.func if type(item.item) is cst.Call else item.item
            if model.qualname(expr) in api.NO_GRAD:
                no_grad = True
            if item.asname is not None:
                self.bind(item.asname.name, "with", item.item)
                self.walk(item.asname)
        if no_grad:
            self._in(Frame("block", node, model.frame, no_grad=True), [node.body])
        else:
            self.walk(node.body)

    def _assign(self, node: cst.Assign) -> None:
        self.walk(node.value)
        for target in node.targets:
            self.bind(target.target, "assign", node.value)
            self.walk(target)

    def _ann_assign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.walk(node.value)
        self.walk(node.annotation)
        if node.value is not None:
            self.bind(node.target, "assign", node.value)
        else:
            self.bind(node.target, "annotation", node.annotation)
        self.walk(node.target)

    def _aug_assign(self, node: cst.AugAssign) -> None:
        self.walk(node.value)
        self.bind(node.target, "aug", node)
        self.walk(node.target)

    def _named_expr(self, node: cst.NamedExpr) -> None:
        self.walk(node.value)
        self.bind(node.target, "walrus", node.value)
        self.walk(node.target)

    def _expr(self, node: cst.Expr) -> None:
        self.children(node)
        call = node.value
        # `model.to(device)`, `model.cuda()`, `model.eval()` on their own move or change a module in place.
        if type(call) is cst.Call and type(call.func) is cst.Attribute \
                and call.func.attr.value in api.MODULE_SELF_METHODS:
            receiver = call.func.value
            name = dotted(receiver)
            # Only where the name is this scope's own: `model.train()` in a function does not make `model` local.
            if name is not None and (name in self.model.frame.scope.bindings or name.startswith("self.")):
                self.bind(receiver, "mutate", call)
        # `self.register_buffer("scale", torch.ones(n))`: `self.scale` now holds that tensor.
        if type(call) is cst.Call and type(call.func) is cst.Attribute \
                and call.func.attr.value in ("register_buffer", "register_parameter") \
                and dotted(call.func.value) == "self" and len(call.args) >= 2 \
                and type(call.args[0].value) is cst.SimpleString \
                and isinstance(call.args[0].value.evaluated_value, str) \
                and call.args[0].value.evaluated_value.isidentifier():  # not `"std-of-means"` (get_buffer only)
            attr = cst.Attribute(cst.Name("self"), cst.Name(call.args[0].value.evaluated_value))
            self.bind(attr, "buffer", call.args[1].value)

    def _module(self, node: cst.Module) -> None:
        model = self.model
        for statement in node.body:
            model.top_orders.append(model.order + 1)
            self.walk(statement)

    def _global(self, node) -> None:
        scope = self.model.frame.scope
        if scope is self.model.module_scope:
            return  # `global args` under `if __name__ == "__main__":` (facebookresearch/msn): a no-op there; kept,
            # it would send a lookup of the name from the module scope back to the module scope forever
        for item in node.names:
            if type(item.name) is cst.Name:
                scope.globals.add(item.name.value)

    def _del(self, node: cst.Del) -> None:
        self.children(node)
        self.bind(node.target, "del", None)

    def _call(self, node: cst.Call) -> None:
        model = self.model
        model.calls.append(node)
        function = model.frame.function
        if function is not None:
            function.calls.append(node)
        self.children(node)

    def _yield(self, node: cst.Yield) -> None:
        function = self.model.frame.function
        if function is not None and isinstance(node.value, cst.BaseExpression):
            function.yields.append(node.value)
        self.children(node)

    def _raise(self, node: cst.Raise) -> None:
        self._in(Frame("error", node, self.model.frame), [node.exc, node.cause])

    def _assert(self, node: cst.Assert) -> None:
        self.walk(node.test)
        if node.msg is not None:
            self._in(Frame("error", node, self.model.frame), [node.msg])

    def _return(self, node: cst.Return) -> None:
        function = self.model.frame.function
        if function is not None and node.value is not None:
            function.returns.append(node.value)
        self.children(node)


_SPECIAL: dict[type, Callable[[Walker, cst.CSTNode], None]] = {
    cst.Import: Walker._import,
    cst.ImportFrom: Walker._import_from,
    cst.FunctionDef: Walker._function,
    cst.Lambda: Walker._lambda,
    cst.ClassDef: Walker._class,
    cst.For: Walker._for,
    cst.While: Walker._while,
    cst.If: Walker._if,
    cst.IndentedBlock: Walker._block,
    cst.Try: Walker._try,
    cst.TryStar: Walker._try,
    cst.With: Walker._with,
    cst.Assign: Walker._assign,
    cst.AnnAssign: Walker._ann_assign,
    cst.AugAssign: Walker._aug_assign,
    cst.NamedExpr: Walker._named_expr,
    cst.Expr: Walker._expr,
    cst.Module: Walker._module,
    cst.Global: Walker._global,
    cst.Nonlocal: Walker._global,
    cst.Del: Walker._del,
    cst.Call: Walker._call,
    cst.Return: Walker._return,
    cst.Raise: Walker._raise,
    cst.Yield: Walker._yield,
    cst.Assert: Walker._assert,
    **{c: Walker._comprehension for c in _COMPREHENSIONS},
}
