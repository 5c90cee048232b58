"""Which functions run every step because another file of the run calls them there.

A file alone cannot tell that `generalized_box_iou` in util/box_ops.py runs every step: its caller is
`HungarianMatcher.forward` in models/matcher.py. So linting a file also yields
- findings that hold only if one of the file's functions runs every step (`Finding.requires`: functions
  with no caller in the file, or the roots of the in-file calls that lead to the finding), and
- its calls out (`CallOut`): calls of functions, classes and methods imported from other modules, made
  every step here, or made where one of this file's own functions must run every step (`requires`).
After every file is linted (or read from the cache), `resolve` follows the calls out through the run's
imports (and re-exports in `__init__.py`) to a fixed point, and keeps the conditional findings whose
function is reached, with the call that reaches it as evidence. Nothing is parsed twice, and a cached
file gives its calls out from the cache, so the cache keeps its effect.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

import libcst as cst

from perflint.model.names import built_by, dotted
from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.model.values import Values
from perflint.rule import Finding


@dataclass(frozen=True)
class CallOut:
    """A call this file makes of something another module defines: `module.name.member...`."""

    level: int  # dots of a relative import
    module: str
    name: str | None  # the imported name (None: `import module`)
    member: tuple[str, ...]  # attributes after it: ("generalized_box_iou",) of `box_ops`, ("Mixup", "__call__")
    # This file's functions of which one must run every step (empty: it does); for an `assumed` call, those
    # whose run by a loop would make it hot for certain.
    requires: tuple[str, ...]
    # Where the call is, for the evidence: (enclosing function's qualified name or "", callee as written,
    # argument count, occurrence); `line_of` turns it into a line only for the calls a finding cites.
    where: tuple[str, str, int, int]
    assumed: bool = False  # made every step only as part of a module's forward (see Step.assumed)
    # "": made every step here (or if `requires` is); "cold": made where it runs, not every step; "off": made
    # only where the defaults never go. The last two reach nothing: they tell `Reach.judged` whether every
    # call of a function lies off the default path.
    site: str = ""


SITES = ("", "cold", "off")


@dataclass
class FileResult:
    """What linting one file gives the run."""

    findings: list[Finding] = field(default_factory=list)  # those that hold on their own
    conditional: list[Finding] = field(default_factory=list)  # those with `requires`
    calls: list[CallOut] = field(default_factory=list)


def calls_out(model: FileModel) -> list[CallOut]:
    """The calls of imported functions and classes (and of methods of instances of imported classes) that
    run every step here, or would if a function of this file did."""
    local = model.facts.local_imports
    if not local:
        return []
    imported = {name: target for name, target in model.imports.items() if f"{target[0]}:{target[1]}" in local
                and not _rebound(model, name)}
    if not imported:
        return []
    imported.update(_class_aliases(model, imported))
    instances = _instances(model, {n for n, (_, _, i) in imported.items() if _a_class(i)})
    steps, values = Steps.of(model), Values.of(model)
    out: list[CallOut] = []
    seen = set()
    for call in model.calls:
        target = _target(model, values, call, imported, instances)
        if target is None:
            built = _built_by_module(model, steps, values, call, imported)
            if built is not None and built not in seen:
                seen.add(built)
                out.append(CallOut(*built[0], built[1], _where(model, call), built[2]))
            continue
        step = steps.at(call)
        if not step.hot and not step.unless:
            site = "off" if steps.never_taken(model.sites[call][0]) else "cold"
            if (target, site) not in seen:
                seen.add((target, site))
                out.append(CallOut(*target, (), _where(model, call), False, site))
            continue
        assumed = step.hot and step.assumed  # made in a module's forward: hot for certain if a loop runs it
        requires = tuple(f.qualname for f in step.unless) if assumed or not step.hot else ()
        if (target, requires, assumed) not in seen:
            seen.add((target, requires, assumed))
            out.append(CallOut(*target, requires, _where(model, call), assumed))
    return out


def _built_by_module(model: FileModel, steps: Steps, values: Values, call: cst.Call, imported: dict) -> tuple | None:
    """`self.backbone = Backbone(...)` in a module class of this file, `Backbone` imported: its forward runs
    when the builder's does. As a call out of `Backbone.forward`: ((level, module, name, member), requires,
    assumed), hot for certain when a loop runs the builder, here or (`requires`) from another file."""
    func = call.func
    if type(func) is not cst.Name or func.value not in imported or not _a_class(imported[func.value][2]):
        return None
    function = model.frame_of(call).function
    cls = function.cls if function is not None else None
    if cls is None or not values.is_module_class(cls):
        return None
    seen = steps.module_run(cls)
    return (*imported[func.value], ("forward",)), tuple(f.qualname for f in seen.unless), not seen.hot


def _where(model: FileModel, call: cst.Call) -> tuple[str, str, int, int]:
    function = model.sites[call][0].function
    callee, nargs = dotted(call.func) or "", len(call.args)
    calls = function.calls if function is not None else \
        [c for c in model.calls if model.sites[c][0].function is None]
    nth = 0
    for c in calls:
        if c is call:
            break
        nth += len(c.args) == nargs and dotted(c.func) == callee
    return function.qualname if function is not None else "", callee, nargs, nth


def _class_aliases(model: FileModel, imported: dict) -> dict:
    """`Exp = Exp_Informer` (then `exp = Exp(args)`, `exp.predict(...)`): another name for an imported class,
    where every assignment of that name gives the same class."""
    found: dict[str, set] = {}
    for assign in model.nodes(cst.Assign):
        for target in assign.targets:
            if type(target.target) is cst.Name and target.target.value not in imported:
                value = assign.value
                cls = value.value if type(value) is cst.Name and value.value in imported \
                    and _a_class(imported[value.value][2]) else None
                found.setdefault(target.target.value, set()).add(cls)
    return {name: imported[next(iter(classes))] for name, classes in found.items()
            if len(classes) == 1 and None not in classes}


def _instances(model: FileModel, classes: set[str]) -> dict[str, str]:
    """Names and `self.` attributes assigned an object of one of these imported classes (`Mixup(...)`,
    also moved: `Net().to(device)`), with the class (the first one assigned, where several are)."""
    if not classes:
        return {}
    out: dict[str, str] = {}
    for assign in model.nodes(cst.Assign):
        value = assign.value
        if type(value) is cst.BooleanOperation and type(value.operator) is cst.Or:
            value = value.right  # `self.sampler = sampler or UniformSampler(diffusion)`: the default built here
        built = built_by(value)  # `Net(...).to(device).eval()`
        if built in classes:
            for target in assign.targets:
                name = dotted(target.target)
                if name is not None:
                    out.setdefault(name, built)
    return out


def line_of(text: str, where: tuple[str, str, int, int]) -> int | None:
    """The line of a call described by `CallOut.where`, from the stdlib parser (cheap, and done only for
    the calls that findings cite)."""
    function, callee, nargs, nth = where
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    scope = tree
    if function:
        cls, _, name = function.rpartition(".")
        scope = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.name == name and (not cls or any(isinstance(c, ast.ClassDef) and c.name == cls
                                                             and n in c.body for c in ast.walk(tree)))), None)
        if scope is None:
            return None
    calls = sorted((n for n in ast.walk(scope) if isinstance(n, ast.Call)
                    and len(n.args) + len(n.keywords) == nargs and _ast_dotted(n.func) == callee),
                   key=lambda n: (n.lineno, n.col_offset))
    return calls[nth].lineno if nth < len(calls) else None


def _target(model: FileModel, values: Values, call: cst.Call, imported: dict,
            instances: dict[str, str]) -> tuple | None:
    """(level, module, name, member) of what a call runs when it comes from an import of the run."""
    func = call.func
    head = func
    while type(head) is cst.Attribute:
        head = head.value
    if type(head) is cst.Call and type(func) is cst.Attribute and func.value is head and type(head.func) is cst.Name \
            and head.func.value in imported and _a_class(imported[head.func.value][2]):
        return (*imported[head.func.value], (func.attr.value,))  # `Exp_Main(args).predict(setting)`
    if type(head) is not cst.Name:
        return None
    if head.value in imported:
        name = dotted(func)
        if name is None:
            return None
        level, module, imported_name = imported[head.value]
        rest = tuple(name.split(".")[1:])
        if not rest and _a_class(imported_name):
            return None  # `Net(...)`: building an object, not running a step's function
        return level, module, imported_name, rest
    # `mixup_fn(x, y)` or `self.matcher(outputs, targets)`: an object built from an imported class
    receiver = func if type(func) is cst.Name else func.value if type(func) is cst.Attribute else None
    if receiver is None or dotted(receiver) not in instances:
        return None
    built = built_by(values.value(receiver).origin)
    made_by = built if built in imported else instances[dotted(receiver)]
    level, module, class_name = imported[made_by]
    return level, module, class_name, ("__call__" if receiver is func else func.attr.value,)


def _a_class(name: str | None) -> bool:
    """An imported name written as a class is (`Mixup`, `Backbone`): calling it builds an object."""
    return (name or "")[:1].isupper()


def _rebound(model: FileModel, name: str) -> bool:
    bindings = model.module_scope.bindings.get(name, ())
    return any(b.how != "import" for b in bindings)


class Reach:
    """Which functions of the run run every step because another file calls them there: the calls out
    of every file followed through the run's imports to a fixed point. `judged` then gives a file's
    findings with those of its conditional ones that hold, each with the call that reaches it as evidence.
    Paths are the project's (`project.scans`); `text_of(path)` gives a file's text, for the line of a
    cited call, and `shown(path)` the name reports use for it."""

    def __init__(self, project, calls: dict[str, list[CallOut]], text_of, shown=lambda path: path) -> None:
        self.text_of, self.shown = text_of, shown
        # (path, qualname) -> the kinds of the calls of it that reach nothing ("cold", "off"; CallOut.site)
        self.sites: dict[tuple[str, str], set[str]] = {}
        edges = []  # (caller path, requires, callee path, callee qualname, where, assumed)
        for path, out in calls.items():
            for c in out:
                target = project.function_file(path, c.level, c.module, c.name, c.member)
                if target is None or target[0] == path:
                    continue
                if c.site:
                    self.sites.setdefault(target, set()).add(c.site)
                else:
                    edges.append((path, c.requires, target[0], target[1], c.where, c.assumed))
        # (path, qualname) -> (caller, where, assumed): assumed when every path found to it runs through a
        # module's forward (Step.assumed); a path from a loop the linter sees replaces one through a forward.
        self.hot: dict[tuple[str, str], tuple[str, tuple, bool]] = {}
        changed = True
        while changed:
            changed = False
            for caller, requires, callee, qualname, where, in_forward in edges:
                # hot if one of `requires` is (a call in a forward: assumed unless a seen loop runs one of them)
                reached = [self.hot[(caller, r)][2] for r in requires if (caller, r) in self.hot]
                if requires and not reached and not in_forward:
                    continue
                assumed = all(reached) if reached else in_forward
                known = self.hot.get((callee, qualname))
                if known is None or known[2] and not assumed:
                    # `model(x)` runs `GPT.__call__`, which runs `GPT.forward`; `UniformSampler.sample` runs the
                    # `ScheduleSampler.sample` it inherits
                    also = [qualname[:-len("__call__")] + "forward"] if qualname.endswith(".__call__") else []
                    for name in (qualname, *also, *_inherited(project, callee, qualname)):
                        known = self.hot.get((callee, name))
                        if known is None or known[2] and not assumed:
                            self.hot[(callee, name)] = (caller, where, assumed)
                    changed = True
        self._why: dict[tuple[str, str], str] = {}

    def judged(self, path: str, result: FileResult) -> list[Finding]:
        """The file's findings, and those of its conditional findings whose function is reached; not those in
        a function that the run calls only where the defaults never go (Finding.within)."""
        out = [f for f in result.findings if not f.within or not self._only_off(path, f.within)]
        for f in result.conditional:
            reached = [r for r in f.requires if (path, r) in self.hot]
            seen = next((r for r in reached if not self.hot[(path, r)][2]), None)  # run by a seen loop
            if seen is not None:
                out.append(replace(f, requires=(), evidence=(*f.evidence, self._evidence(path, seen)), assumed=False))
            elif f.assumed:  # a module's forward no seen loop runs: its own evidence says why
                out.append(replace(f, requires=()))
            elif reached:  # reached only through modules' forwards
                out.append(replace(f, requires=(), evidence=(*f.evidence, self._evidence(path, reached[0])),
                                   assumed=True))
        return out

    def _only_off(self, path: str, qualname: str) -> bool:
        """Whether every call of the function that the run makes lies off the default path (and it makes one)."""
        return self.sites.get((path, qualname)) == {"off"} and (path, qualname) not in self.hot

    def _evidence(self, path: str, qualname: str) -> str:
        key = (path, qualname)
        why = self._why.get(key)
        if why is None:
            caller, where, _ = self.hot[key]
            line = line_of(self.text_of(caller), where)
            why = self._why[key] = f"`{qualname}` runs every step: called from {self.shown(caller)}" \
                + (f" (line {line})" if line else "")
        return why


def _inherited(project, path: str, qualname: str) -> list[str]:
    """`Base.method` for `Sub.method` when `Sub` derives from `Base` in the same file (transitively): the method
    a call on a subclass instance runs when the subclass does not define it."""
    cls, _, method = qualname.partition(".")
    if not method:
        return []
    bases = project.scans[path].bases
    out, todo, seen = [], list(bases.get(cls, ())), {cls}
    while todo:
        base = todo.pop()
        if base in seen or base not in bases and base not in project.scans[path].defines:
            continue
        seen.add(base)
        out.append(f"{base}.{method}")
        todo.extend(bases.get(base, ()))
    return out


def _ast_dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
