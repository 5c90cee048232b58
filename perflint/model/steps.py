"""Which code runs on every step of training or inference, with the evidence.

A loop is a *step* loop when it iterates a data loader, or when each iteration does a step's work
(a module's forward, `.backward()`, an optimizer or environment step) and it is not a loop of a few
constant iterations (`range(1, n + 1)` with `n = 10` counts as ten). A loop whose iterations each run a
whole step loop (epochs, hyper-parameter trials) is an *outer* loop: its own body runs once per epoch.
Loops that wait for `input()`, only plot, walk the files of a folder (a script converting file by file)
or what the command line names (`for f in args.input`) are *cold*. Other loops (over a module's blocks,
a few micro-batches) are *neutral*: their body runs as often as the code around them. Nothing runs
every step in a module that no file of the program imports (`FileFacts.unused`), nor in an interactive
app (a file that imports gradio or streamlit): its work runs once per user request.

Code is on the per-step path when the nearest deciding frame around it is a step loop, or when its
function runs every step: a module's `forward` (and Lightning's `*_step` hooks), or a function called
from per-step code in this file, transitively. A block gated by `if step % k == 0:` or `if i == 0:`
inside the step loop is not per step, nor `if t == 0:` in a function the loop calls with its counter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import built_by, conjuncts, dotted, int_value, method_name, target_names
from perflint.model.program import ClassInfo, FileModel, Frame, FunctionInfo, interval_gate
from perflint.model.project import set_aside
from perflint.model.values import (LOADER, MODULE, NO_DEFAULT, ON_DEVICE, OPTIMIZER, TENSOR, Values, compare,
                                   given_to, option_holder)
from perflint.tree import find_all

STEP, OUTER, SMALL, NEUTRAL, COLD = "step", "outer", "small", "neutral", "cold"
_FOLDED = {cst.Add: int.__add__, cst.Subtract: int.__sub__, cst.Multiply: int.__mul__,
           cst.FloorDivide: int.__floordiv__}
_SMALL_RANGE = 16  # `for i in range(k)` with a literal k at most this is a few fixed iterations
_STEP_HOOKS = {"training_step", "validation_step", "test_step", "predict_step", "forward", "__call__"}
_FORWARDS = {"forward", "__call__"}
DECODERS = ("generate", "decode", "translate", "beam_search")  # names of functions whose loop makes a token a step
_LISTINGS = {"os.listdir", "os.scandir", "os.walk", "glob.glob", "glob.iglob"}
_CACHING = {"lru_cache", "cache", "cached_property"}
_APPS = {"gradio", "streamlit"}  # frameworks of interactive demos
_WRAPPERS = {"enumerate", "tqdm", "iter", "zip", "trange", "track", "progress_bar", "reversed", "islice",
             "chain", "cycle", "prefetch", "Prefetcher", "PrefetchLoader", "MetricLogger.log_every", "log_every"}


@dataclass(frozen=True)
class Step:
    hot: bool
    why: tuple = ()  # ("runs every step: loop over `{}`", node), ...
    # Not hot as far as this file shows, but hot if one of these functions is called every step from
    # another file of the run (they have no caller here; the runner decides, see model/crossfile.py).
    unless: tuple = ()
    # Once per iteration of an outer loop (an epoch, an RL iteration of rollout and update): not every step,
    # but a loop of device ops there runs as many times as the steps do.
    outer: bool = False
    # Hot only because a module's `forward` (or an optimizer's `step`) runs every step wherever the module is
    # used, not because a loop the linter sees runs it: whether this module is trained, with this option, on
    # tensors big enough to matter, the code does not say (findings resting on it are shown only with
    # `assume-forward-per-step`; see Finding.assumed).
    assumed: bool = False

    def both(self, other: "Step") -> "Step":
        """Where two things must both run every step (a tensor made here and moved there)."""
        if self.hot and other.hot:
            return self if self.assumed or not other.assumed else other
        if not (self.hot or self.unless) or not (other.hot or other.unless):
            return NOT_PER_STEP
        return Step(False, self.why or other.why, tuple(dict.fromkeys(self.unless + other.unless)))


NOT_PER_STEP = Step(False)


@dataclass(frozen=True)
class LoopKind:
    kind: str
    why: tuple = ()
    device_ops_only: bool = False  # a step loop only because its body runs device ops (not a training step)


class Steps:
    """The per-step questions of one file, cached on its model."""

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self.values = Values.of(model)
        self.loop_kinds: dict[Frame, LoopKind] = {}
        self.function_steps: dict[FunctionInfo, Step] = {}
        self.module_steps: dict[ClassInfo, Step] = {}
        self._calls_in: dict[Frame, list[cst.Call]] | None = None
        self._step_work: dict[FunctionInfo, tuple | None] = {}
        self._has_step_loop: dict[FunctionInfo, tuple | None] = {}
        self.once_per_loop: dict[Frame, bool] = {}
        self.off: dict[Frame, cst.BaseExpression | None] = {}
        self.unreached_by: dict[FunctionInfo, cst.BaseExpression | None] = {}
        self.default_steps: bool | None = None

    @staticmethod
    def of(model: FileModel) -> "Steps":
        steps = model._memo.get("steps")
        if steps is None:
            steps = model._memo["steps"] = Steps(model)
        return steps

    # ---- where a node runs -------------------------------------------------------------------------------
    def at(self, node: cst.CSTNode) -> Step:
        frame, _ = self.model.site(node)
        off = self._untaken_values().get(node) if type(node) is cst.Call else None
        if off is not None:  # `a() if cfg.NUM_SHARDS > 1 else b()`: the branch the defaults do not take
            return Step(False, (("not with the defaults: `{}`", off),))
        return self.in_frame(frame)

    def interactive_app(self) -> str | None:
        """`import gradio as gr`: a demo that runs its model when a user clicks, at the shapes the user picks;
        warm-up and per-request waits are not a training step's (like a loop that waits on `input()`)."""
        found = self.model._memo.get("interactive-app", ())
        if found == ():
            found = self.model._memo["interactive-app"] = next(
                (q.split(".")[0] for q in self.model.aliases.values() if q.split(".")[0] in _APPS), None)
        return found

    def _untaken_values(self) -> dict[cst.Call, cst.BaseExpression]:
        """The calls in the branch of a conditional expression that the defaults never take, with its test."""
        found = self.model._memo.get("untaken-values")
        if found is None:
            found = self.model._memo["untaken-values"] = {}
            for node in self.model.nodes(cst.IfExp):
                truth = self.values.default_truth(node.test)
                if truth is not None:
                    for call in find_all(node.orelse if truth else node.body, cst.Call):
                        found.setdefault(call, node.test)
        return found

    def in_frame(self, frame: Frame) -> Step:
        if self.model.facts.unused:
            if set_aside(self.model.path):
                return Step(False, (("a file kept aside (in a folder such as `backup/`): not part of the run", None),))
            return Step(False, (("no file of this program imports this module", None),))
        app = self.interactive_app()
        if app is not None:
            return Step(False, ((f"an interactive `{app}` app: its work runs once per user request", None),))
        unused = self.model.facts.unused_defines
        top = frame.function  # the top-level function or method it is in
        while top is not None and top.frame is not None and top.frame.parent is not None \
                and top.frame.parent.function is not None:
            top = top.frame.parent.function
        name = top.cls.name if top is not None and top.cls is not None else top.name if top is not None else None
        if name in unused:
            return Step(False, ((f"no file of this program uses `{name}`", None),))
        if top is not None and top.cls is not None and self.built_off(top.cls):
            return Step(False, ((f"`{top.cls.name}` is built only where the defaults never go", None),))
        off = self.off_by_default(frame)
        if off is not None:  # a branch the defaults never take, however deep its own loops are
            return Step(False, (("not with the defaults: `{}`", off),))
        gate: Frame | None = None
        for f in frame.chain():
            kind = f.kind
            if kind == "error":
                return Step(False, (("only when raising an error", f.node),))
            if kind == "handler":  # `except: word_idx = torch.tensor(0)`: the fallback, not the step's path
                return Step(False, (("only when an exception is caught: `{}`", f.node.type or f.node),))
            if kind == "once":
                return Step(False, (("computed once and kept: `{}`", f.node.test),))
            if f.condition is not None and _cpu_only(*f.condition):
                return Step(False, (("only where the tensors are on the CPU: `{}`", f.condition[0]),))
            if kind == "gate" and gate is None and not (_every_k(f) and self.gate_does_step_work(f)) \
                    or kind == "branch" and gate is None and self._once_per_loop(f):
                gate = f
            elif kind in ("loop", "comprehension"):
                loop = self.loop_kind(f)
                if gate is not None and loop.kind in (SMALL, NEUTRAL) and _gate_over(gate, f):
                    gate = None  # `if i % 2 == 0` over an inner loop's index: still every step
                if loop.kind in (SMALL, NEUTRAL) and f.function is not None and f.function.yields:
                    feeds = self.feeds_step_loop(f.function)
                    if feeds is not None:
                        loop = LoopKind(STEP, feeds)
                if loop.kind == STEP:
                    if gate is not None:
                        return Step(False, (("gated by `{}`", gate.node.test),))
                    periodic = self._periodic_job(f)
                    if periodic is not None:  # `if (i + 1) % 100 == 0: for _ in range(n): samples.append(g(z))`
                        return Step(False, (("a loop run every k steps of its outer loop: `{}`", periodic.node.test),))
                    off = self.unreached(f.function)
                    if off is not None:  # `if FLAGS.moco: train_moco(...)`: its loop of steps never starts
                        return Step(False, ((f"`{f.function.name}` is called only where the defaults never go: "
                                             "`{}`", off),))
                    if loop.device_ops_only:
                        return self._device_loop(f, loop)
                    return Step(True, loop.why)
                if loop.kind == OUTER:
                    return Step(False, loop.why, outer=True)
                if loop.kind == COLD:
                    return Step(False, loop.why)
            elif kind in ("function", "lambda"):
                if gate is not None:
                    return Step(False, (("gated by `{}`", gate.node.test),))
                step = self.function(f.function)
                skipped = self._untaken_by_callers(frame, f) if step.hot and not step.assumed else None
                if skipped is not None:
                    return Step(False, ((f"not on the per-step calls: `{skipped[1]}` leaves `{{}}` untaken",
                                         skipped[0]),))
                return step
            elif kind in ("class", "module"):
                return NOT_PER_STEP
        return NOT_PER_STEP

    def _untaken_by_callers(self, frame: Frame, top: Frame) -> tuple[cst.BaseExpression, str] | None:
        """The branch around `frame`, tested on a parameter of the function `top` opens, that every per-step
        call of the function leaves untaken by what it passes (mbrl-lib's `update` calls `self.loss(batch,
        target)` with `reduce=True` by default: the `else` of `if reduce:`, which only `eval_score` takes, does
        not run every step): (its test, the first such call as written). None where a per-step call may take it
        or passes the function on."""
        info = top.function
        if info is None or self.values.passed().get(info):
            return None
        tests = []
        f = frame
        while f is not None and f is not top:
            if f.condition is not None:
                tests.append(f.condition)
            f = f.parent
        if not tests:
            return None
        hot = [c for c in self.values.callers().get(info, ()) if self.at(c).hot]
        if not hot:
            return None
        for test, holds in tests:
            if all(self._truth_at_call(info, test, call) is (not holds) for call in hot):
                return test, " ".join(self.model.module.code_for_node(hot[0]).split())[:40]
        return None

    def _truth_at_call(self, info: FunctionInfo, test: cst.BaseExpression, call: cst.Call) -> bool | None:
        """Whether `p`, `not p`, `p is None`, `p == "x"` (and the like) holds, `p` a parameter of the function,
        with what `call` gives it (its default where the call leaves it out); None for any other test."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self._truth_at_call(info, test.expression, call)
            return None if inner is None else not inner
        name, comparison = test, None
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            name, comparison = test.left, test.comparisons[0]
        if type(name) is not cst.Name:
            return None
        param = next((p for n, p, k in info.params if n == name.value and k != "star"), None)
        reaching = self.values.reaching_bindings(name) or ()
        if param is None or not reaching or any(b.how != "param" for b in reaching):
            return None  # not a parameter, or one the function rebinds before the test
        given = given_to(info, param, call)
        value = NO_DEFAULT if given is None or given is NO_DEFAULT else self.values.default_of(given)
        if value is NO_DEFAULT:
            return None
        if comparison is None:
            return bool(value)
        other = self.values.default_of(comparison.comparator)
        return None if other is NO_DEFAULT else compare(comparison.operator, value, other)

    def _periodic_job(self, loop: Frame) -> Frame | None:
        """The every-k gate (`if step % k == 0:` that takes no training step) between a loop and an outer loop
        of steps in the same function, or the start of a function run every step: the inner loop (a grid of
        samples, a few evaluation lengths, the scales of a log line) is a periodic job of that loop, not its
        step. Not a loop over a loader: each batch of a validation pass over its data is a step of that pass
        (pytorch/examples' snli, every `dev_every` iterations)."""
        node = loop.node
        if type(node) is not cst.For or not _few_items(node.iter) or self.values.value(node.iter).kind == LOADER:
            return None
        gate = None
        for f in loop.parent.chain() if loop.parent is not None else ():
            if f.function is not loop.function:
                return None
            if f.kind == "gate" and gate is None and _every_k(f) and not self.gate_does_step_work(f):
                gate = f
            elif f.kind in ("loop", "comprehension") and gate is not None:
                return gate if self.loop_kind(f).kind == STEP else None
            elif f.kind == "function" and gate is not None:  # the step loop is in a caller: VAR's train_step
                return gate  # logs per scale under `if (g_it + 1) % 500 == 0:`
        return None

    def uncalled_function(self, node: cst.CSTNode) -> str:
        """The qualified name of the outermost function around `node` when this file neither calls it nor
        hands it on: whether it runs is up to other files (Finding.within); "" otherwise."""
        site = self.model.sites.get(node)
        function = outer = site[0].function if site is not None else None
        while function is not None:
            outer = function
            parent = function.frame.parent if function.frame is not None else None
            function = parent.function if parent is not None else None
        if outer is None or outer.is_lambda or self.values.callers().get(outer) or self.values.passed().get(outer):
            return ""
        return outer.qualname

    def off_by_default(self, frame: Frame) -> cst.BaseExpression | None:
        """The condition of an enclosing branch that does not hold with the code's defaults (`if
        args.val_loss_every > 0 and ...:` with a default of 0), memoized per frame."""
        todo, f = [], frame  # up to the nearest frame already answered, then down again (no recursion: a file
        while f is not None and f not in self.off:  # may nest a thousand blocks)
            todo.append(f)
            f = f.parent
        found = self.off.get(f) if f is not None else None
        for f in reversed(todo):
            if found is None and f.condition is not None \
                    and self.values.default_truth(f.condition[0]) is (not f.condition[1]):
                found = f.condition[0]
            self.off[f] = found
        return found

    def unreached(self, info: FunctionInfo | None) -> cst.BaseExpression | None:
        """For a function of a script that the script calls only in branches the defaults never take
        (`if FLAGS.moco: train_moco(...)`), directly or through functions called only there: the test of the
        first such branch. None where it may run: a call on the default path, a function handed on or
        that another file may import (a module without an entry point), and in a script whose defaults run
        no loop of steps at all (`if args.do_train: train(...)`, `if args.do_eval: evaluate(...)`: those
        options are what the script is run with, not switches left off)."""
        if info is None or not self._default_steps():
            return None
        return self._unreached(info)

    def _default_steps(self) -> bool:
        """Whether the defaults run some loop of steps of this file (memoized)."""
        found = self.default_steps
        if found is None:
            found, seen = False, set()
            for call in self.model.calls:
                loop = self.model.sites[call][0].loop
                if loop is None or loop in seen:
                    continue
                seen.add(loop)
                function = loop.function
                if function is not None and _script(self.model) and not self.values.callers().get(function) \
                        and not self.values.passed().get(function):
                    continue  # a script's function nothing calls
                if self.loop_kind(loop).kind == STEP and self.off_by_default(loop) is None \
                        and self._unreached(function) is None:
                    found = True
                    break
            self.default_steps = found
        return found

    def _unreached(self, info: FunctionInfo | None) -> cst.BaseExpression | None:
        if info is None or info.is_lambda:
            return None
        if info in self.unreached_by:
            return self.unreached_by[info]
        self.unreached_by[info] = None  # a cycle of calls proves nothing
        # Its calls, and the places that name it without calling it (`train = train_dice` in a dispatch on an
        # option): where every one of them lies off the default path, so does the function.
        places = (*self.values.callers().get(info, ()), *self.values.passed().get(info, ()))
        found = None
        if places and (not _callable_from_elsewhere(info) or _script(self.model)):
            for call in places:
                frame = self.model.sites[call][0]
                off = self.off_by_default(frame)
                if off is None:
                    off = self._unreached(frame.function) if frame.function is not info else None
                if off is None:
                    found = None
                    break
                found = found or off
        self.unreached_by[info] = found
        return found

    def built_off(self, cls, seen: frozenset = frozenset()) -> bool:
        """Whether every construction of a class of this file lies where the defaults never go: in an untaken
        branch (transformer-xl's `elif attn_type == 1:` layers, `attn_type=0` by default) or in a class built
        only there. Not for a class another file imports (or may, through a whole-module import), nor one its
        file names other than by calling it (`layer_cls=Block`)."""
        named = self.model.facts.named_elsewhere
        if named is None or cls.name in named or cls.name in seen:
            return False
        key = ("built-off", cls.name)
        found = self.model._memo.get(key)
        if found is None:
            uses = [n for n in self.model.nodes(cst.Name) if n.value == cls.name and n in self.model.sites]
            calls = [c for c in self.model.calls if type(c.func) is cst.Name and c.func.value == cls.name]
            supers = [c for c in self.model.calls if type(c.func) is cst.Name and c.func.value == "super" and c.args
                      and type(c.args[0].value) is cst.Name and c.args[0].value.value == cls.name]
            found = bool(calls) and len(uses) == len(calls) + len(supers) and all(
                self.never_taken(self.model.sites[c][0]) or self._in_class_built_off(c, seen | {cls.name})
                for c in calls)
            self.model._memo[key] = found
        return found

    def _in_class_built_off(self, call: cst.Call, seen: frozenset) -> bool:
        function = self.model.sites[call][0].function
        while function is not None and function.cls is None:
            function = function.frame.parent.function if function.frame is not None and function.frame.parent else None
        return function is not None and self.built_off(function.cls, seen)

    def never_taken(self, frame: Frame) -> bool:
        """Whether a CUDA run with the code's defaults never reaches this frame: it lies in a branch off by
        default (`if args.use_multi_gpu:`) or in a CPU fallback (the else of `if torch.cuda.is_available():`),
        the two tests `in_frame` starts with, for code that runs once rather than per step."""
        return self.off_by_default(frame) is not None \
            or any(f.condition is not None and _cpu_only(*f.condition) for f in frame.chain())

    def every_k_gate(self, frame: Frame) -> Frame | None:
        """The `if i % k == 0:` gate around a node inside the nearest loop when the loop also trains outside it
        (a WGAN's generator update every n_critic batches beside the critic's every batch): what it holds runs
        every k steps. A gate that holds all of the loop's training (an RL loop that updates every 4th
        environment step) is the step itself."""
        gate = None
        for f in frame.chain():
            if gate is None and f.kind == "gate" and _every_k(f):
                gate = f
            elif f.kind in ("loop", "comprehension"):
                if gate is None:
                    return None
                outside = [c for c in self.calls_in(f) if not gate.encloses(self.model.sites[c][0])]
                return gate if any(method_name(c) == "backward" for c in outside) else None
            elif f.kind in ("function", "lambda", "class", "module"):
                return None
        return None

    def _once_per_loop(self, branch: Frame) -> bool:
        """`if t == 0:` in a function whose `t` is the counter of the loops that call it (`for t in
        reversed(range(T)): x = self.p_sample(x, t)`): once per loop, as the same test inside the loop is."""
        found = self.once_per_loop.get(branch)
        if found is None:
            found = self.once_per_loop[branch] = branch.condition is not None and branch.condition[1] \
                and any(self._counter_test(test) for test in conjuncts(branch.condition[0]))
        return found

    def _counter_test(self, test: cst.BaseExpression) -> bool:
        if not (type(test) is cst.Comparison and len(test.comparisons) == 1
                and type(test.comparisons[0].operator) is cst.Equal):
            return False
        sides = (test.left, test.comparisons[0].comparator)
        return any(type(side) is cst.Integer for side in sides) \
            and any(type(side) is cst.Name and self._counter_param(side) for side in sides)

    def _counter_param(self, name: cst.Name) -> bool:
        """A parameter for which every call site of the file passes the target of a `for` loop."""
        reaching = self.values.reaching_bindings(name)
        if not reaching or any(b.how != "param" for b in reaching):
            return False
        passed = [a for b in reaching for a in self.values.arguments(b.value, b.target)]
        return bool(passed) and all(
            type(a) is cst.Name and (r := self.values.reaching_bindings(a)) and all(x.how == "for" for x in r)
            for a in passed)

    def _device_loop(self, frame: Frame, loop: LoopKind) -> Step:
        """A Python loop of device ops (a GAE over time steps, an NMS) costs once per iteration wherever it
        runs often: inside the per-step path or an outer loop of steps. Run once (setup, a one-off
        prediction helper), it is not a step."""
        context = self.in_frame(frame.parent) if frame.parent is not None else NOT_PER_STEP
        if context.hot or context.outer:
            return Step(True, (*loop.why, *context.why[:1]), context.unless if context.assumed else (),
                        assumed=context.assumed)
        return Step(False, loop.why, context.unless)

    def function(self, info: FunctionInfo) -> Step:
        found = self.function_steps.get(info)
        if found is not None:
            return found
        self.function_steps[info] = NOT_PER_STEP  # a cycle of calls proves nothing
        result = self._function(info)
        self.function_steps[info] = result
        return result

    def _function(self, info: FunctionInfo) -> Step:
        if info.name.startswith("test_"):
            return NOT_PER_STEP
        cached = next((d for d in info.decorators if d.rsplit(".", 1)[-1] in _CACHING), None)
        if cached is not None:  # runs again only for arguments it has not seen
            return Step(False, ((f"computed once per argument and kept: `@{cached}`", info.node.name),))
        if self._foreach_fallback(info):
            return Step(False, ((f"`{info.name}` is the single-tensor fallback of an optimizer whose foreach "
                                 f"path runs by default on a GPU", info.node.name),))
        if info.cls is not None and "onnx" in info.cls.name.lower():
            return Step(False, ((f"`{info.cls.name}` is a module built for ONNX export: traced once, not run",
                                 info.node.name),))
        if info.cls is not None and info.name in _STEP_HOOKS and self.values.is_module_class(info.cls):
            if info.name not in _FORWARDS:  # Lightning's `training_step`: the module is the one trained
                return Step(True, ((f"runs every step: `{info.cls.name}.{info.name}`", info.node.name),))
            seen = self.module_run(info.cls)
            if seen.hot:
                return seen
            # Every module's forward runs every step wherever the module is used, but no loop of this file runs
            # this one: assumed, unless another file's loop runs it or a module built from it (`seen.unless`).
            return Step(True, ((f"runs every step: `{info.cls.name}.{info.name}`", info.node.name),),
                        seen.unless, assumed=True)
        if info.cls is not None and info.name == "step" and any(
                b.rsplit(".", 1)[-1] == "Optimizer" for b in info.cls.bases):
            return Step(True, ((f"runs every step: `{info.cls.name}.step`, an optimizer's", info.node.name),),
                        assumed=True)
        if info.is_lambda:
            return self.in_frame(info.frame.parent)
        callers, passed = self.values.callers().get(info, ()), self.values.passed().get(info, ())
        roots: list[FunctionInfo] = []
        in_outer = assumed = None  # a caller hot only because it is a module's forward: a seen loop wins
        for call in callers:
            outer = self.at(call)
            if outer.hot:
                found = Step(True, ((f"`{info.qualname}` is called every step by `{{}}`", call), *outer.why[:2]),
                             outer.unless if outer.assumed else (), assumed=outer.assumed)
                if not outer.assumed:
                    return found
                assumed = assumed or found
            roots += outer.unless
            if outer.outer and in_outer is None:
                in_outer = Step(False, ((f"`{info.qualname}` is called by `{{}}`", call), *outer.why[:1]), outer=True)
        for ref in passed:
            outer = self.at(ref)
            if outer.hot:
                found = Step(True, ((f"`{info.qualname}` is passed on at `{{}}`, in code that runs every step", ref),
                                    *outer.why[:2]), outer.unless if outer.assumed else (), assumed=outer.assumed)
                if not outer.assumed:
                    return found
                assumed = assumed or found
            roots += outer.unless
        if assumed is not None:
            return assumed
        if not callers and not passed:
            step = next((c for c in info.calls if self.model.sites[c][0].loop is None and self._trains(c)), None)
            if step is not None:  # `def train_step(batch): ... loss.backward(); opt.step()`: it is the step
                return Step(True, ((f"runs every step: `{info.qualname}` takes a training step (`{{}}`)", step),))
            if _callable_from_elsewhere(info):
                return Step(False, unless=(info,))
        if in_outer is not None:
            return Step(False, in_outer.why, tuple(dict.fromkeys(roots)), outer=True)
        return Step(False, unless=tuple(dict.fromkeys(roots))) if roots else NOT_PER_STEP

    def module_run(self, cls: ClassInfo) -> Step:
        """Whether a loop this file shows runs a module class: an instance of it is called on the per-step path
        (`actor(obs)`, `actor = Actor(envs).to(device)`), or a module class that builds it (a submodule, `self.mlp
        = MLP(...)`) is. Not hot: `unless` names the forwards of the class and of those that build it, which a
        loop of another file may run (model/crossfile.py)."""
        found = self.module_steps.get(cls)
        if found is not None:
            return found
        self.module_steps[cls] = NOT_PER_STEP  # a cycle of classes building each other proves nothing
        runs, builders = self._module_sites()
        result = None
        for call in runs.get(cls, ()):
            outer = self.at(call)
            if outer.hot and not outer.assumed:
                result = Step(True, ((f"runs every step: `{{}}` runs `{cls.name}`", call), *outer.why[:1]))
                break
        unless = [cls.methods["forward"]] if "forward" in cls.methods else []
        if result is None:
            for builder, call in builders.get(cls, ()):
                outer = self.module_run(builder)
                if outer.hot:
                    result = Step(True, ((f"runs every step: built by `{builder.name}` (`{{}}`)", call),
                                         *outer.why[:1]))
                    break
                unless += outer.unless
        found = self.module_steps[cls] = result or Step(False, unless=tuple(dict.fromkeys(unless)))
        return found

    def _module_sites(self) -> tuple[dict, dict]:
        """Per module class of this file: the calls that run an instance of it, and (builder class, call) for
        each construction of it inside another class of the file."""
        found = self.model._memo.get("module-sites")
        if found is None:
            runs: dict[ClassInfo, list[cst.Call]] = {}
            builders: dict[ClassInfo, list[tuple[ClassInfo, cst.Call]]] = {}
            classes = self.model.classes
            for call in self.model.calls:
                func = call.func
                if type(func) is cst.Name and func.value in classes:  # `Block(config)` inside `GPT`
                    frame = self.model.frame_of(call)
                    builder = frame.function.cls if frame.function is not None else None
                    if builder is not None and builder is not classes[func.value]:
                        builders.setdefault(classes[func.value], []).append((builder, call))
                    continue
                target = func.value if type(func) is cst.Attribute and func.attr.value in api.FORWARD_METHODS \
                    else func
                v = self.values.value(target)
                built = built_by(v.origin) if v.kind == MODULE else None  # `Actor(envs).to(device)`
                if built in classes:
                    runs.setdefault(classes[built], []).append(call)
            found = self.model._memo["module-sites"] = (runs, builders)
        return found

    def _foreach_fallback(self, info: FunctionInfo) -> bool:
        """`_single_tensor_adamw` beside `_multi_tensor_adamw`, in an optimizer whose `foreach` defaults to None
        (torch then picks the multi-tensor path for CUDA tensors) or True: the per-parameter loop runs only
        when asked for. With `foreach=False` by default it is the path that runs."""
        if not info.name.startswith("_single_tensor_") or info.cls is not None:
            return False
        twin = "_multi_tensor_" + info.name[len("_single_tensor_"):]
        if not any(f.name == twin for f in self.model.functions):
            return False
        defaults = [p.default for f in self.model.functions if f.name == "__init__"
                    for p in (*f.node.params.params, *f.node.params.kwonly_params)
                    if p.name.value == "foreach" and p.default is not None]
        return not any(type(d) is cst.Name and d.value == "False" for d in defaults)

    # ---- loops --------------------------------------------------------------------------------------------
    def loop_kind(self, frame: Frame) -> LoopKind:
        found = self.loop_kinds.get(frame)
        if found is None:
            self.loop_kinds[frame] = LoopKind(NEUTRAL)  # while deciding (a loop seen through a call cycle)
            found = self.loop_kinds[frame] = self._loop_kind(frame)
        return found

    def _loop_kind(self, frame: Frame) -> LoopKind:
        node = frame.node
        if type(node) is cst.For:
            iterable = node.iter
        elif type(node) is cst.While:
            iterable = None
        else:
            iterable = node.for_in.iter
        if _ends_in_break(node):  # `for batch in eval_loader: ...; break`: one batch, one iteration
            return LoopKind(SMALL, (("runs once: the loop body ends in `break`", node.body),))
        if _breaks_after_few(node, self.values):  # `...; if i >= 5: break`: six iterations at most
            return LoopKind(SMALL, (("a few iterations: the loop breaks after a fixed count", node.body),))
        catcher = _catches_first_layer(node)
        if catcher is not None:
            return LoopKind(COLD, (("a calibration pass: each iteration's model call stops at a layer that raises "
                                    "(`{}`) to capture its inputs, once per run", catcher),))
        calls = self.calls_in(frame)
        model = self.model
        for call in calls:
            qual = model.qualname(call.func) or dotted(call.func) or ""
            if qual in api.INTERACTIVE or qual == "cv2.waitKey" and (
                    not call.args or type(call.args[0].value) is cst.Integer and call.args[0].value.value == "0"):
                return LoopKind(COLD, (("waits for `{}`", call),))  # `input()`, `cv2.waitKey(0)`: a key press
            if qual in api.DISPLAY and model.sites[call][0].every_iteration_of(frame):
                # A video demo that detects and shows each frame: paced by capture and display, a run to watch
                return LoopKind(COLD, (("shows each iteration's result on screen: `{}`", call),))
        sources = _sources(iterable) if iterable is not None else []
        for source in sources:
            v = self.values.value(source)
            if v.kind == LOADER:
                return LoopKind(STEP, (("runs every step: loop over `{}`", source),))
        listing = next((s for s in sources if self._file_listing(s)), None)
        if listing is not None and not any(self._trains(c) for c in calls):
            return LoopKind(COLD, (("a loop over the files of a folder (`{}`): each iteration reads and writes "
                                    "files", listing),))
        named = next((s for s in sources if self._command_line_list(s)), None)
        if named is not None and not any(self._trains(c) for c in calls):
            return LoopKind(COLD, (("a loop over what the command line names (`{}`): a few items, one at a time",
                                    named),))
        inner = self.inner_step_loop(frame, calls)
        if inner is not None:
            # An RL loop steps the environment and updates the critic itself, with a few actor updates in
            # an inner loop: it is a loop of steps all the same. An epoch loop does neither itself.
            own = next((c for c in calls if model.sites[c][0].loop is frame and self._trains(c)), None)
            if own is None:
                # Gradient accumulation: the inner loop runs micro-batches' `backward()`, and this iteration
                # steps the optimizer once, outside any loop (improved-diffusion's `run_step`).
                once = next((c for c in calls if model.sites[c][0].loop is frame and self._steps_once(c)), None)
                if once is None:
                    return LoopKind(OUTER, inner)
                return LoopKind(STEP, (("runs every step: each iteration steps the optimizer once (`{}`)", once),
                                       ("loop at `{}`", _header(node))))
            return LoopKind(STEP, (("runs every step: each iteration runs `{}`", own),
                                   ("loop at `{}`", _header(node))))
        if iterable is not None and self._few(iterable, sources) and not (len(frame.loops()) > 1 and any(
                model.sites[c][0].loop is frame and self._trains(c) for c in calls)):
            # (inside another loop, a few minibatches each with its own `backward()` are steps all the same)
            return LoopKind(SMALL)
        if iterable is not None and _over_model_tensors(sources):
            return LoopKind(NEUTRAL)
        work = self.step_work(calls)
        if work is not None:
            # In a module's own methods (an RNN over time steps), a loop of submodule calls is part of one
            # forward, not a loop of steps: it does not make the loops that call it outer loops. A sampling
            # or generation method's loop (`p_sample_loop`, `generate`) is a loop of steps all the same.
            within = self.values.in_module_class(node) and not generates(frame.function) and not any(
                method_name(c) in ("backward", "step") for c in calls)
            return LoopKind(STEP, (("runs every step: each iteration runs `{}`", work),
                                   ("loop at `{}`", _header(node))), device_ops_only=within)
        device_op = self.device_work(frame, calls)
        if device_op is not None:  # a Python loop of device ops (GAE over time steps): its own steps
            return LoopKind(STEP, (("runs every iteration of a loop of device ops: `{}`", device_op),
                                   ("loop at `{}`", _header(node))), device_ops_only=True)
        if any(_plots(model, call) for call in calls):
            return LoopKind(COLD, (("a loop that plots", node),))
        return LoopKind(NEUTRAL)

    def _file_listing(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """`os.listdir(d)`, `glob.glob(p)`, `Path(d).iterdir()`, `sorted(...)` of one, or a name bound to one:
        a script that processes a folder file by file, bound by reading and writing files."""
        if type(node) is cst.Name and depth < 3:
            reaching = self.values.reaching_bindings(node) or []
            return bool(reaching) and all(b.how == "assign" and not b.path and b.value is not None
                                          and self._file_listing(b.value, depth + 1) for b in reaching)
        if type(node) is not cst.Call:
            return False
        name = self.model.qualname(node.func) or dotted(node.func) or ""
        if name in ("sorted", "list") and node.args:
            return self._file_listing(node.args[0].value, depth + 1)
        return name in _LISTINGS or method_name(node) in ("iterdir", "glob", "rglob")

    def _command_line_list(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """`args.input` (`nargs="+"`: the images to predict), or a name bound to it: the files or settings a
        user names on the command line (also `opt.weights if isinstance(opt.weights, list) else
        [opt.weights]`)."""
        if type(node) is cst.IfExp and depth < 2:
            return self._command_line_list(node.body, depth + 1) and self._command_line_list(node.orelse, depth + 1)
        if type(node) in (cst.List, cst.Tuple) and node.elements and depth < 2:
            return all(type(e) is cst.Element and self._command_line_list(e.value, depth + 1)
                       for e in node.elements)
        if type(node) is cst.Name and depth < 2:
            reaching = self.values.reaching_bindings(node) or []
            return len(reaching) == 1 and reaching[0].how == "assign" and not reaching[0].path \
                and reaching[0].value is not None and self._command_line_list(reaching[0].value, depth + 1)
        return type(node) is cst.Attribute and option_holder(node.value)

    def _few(self, iterable: cst.CSTNode, sources: list) -> bool:
        """A loop of a few fixed iterations: `range(3)`, `for x in (a, b, c)`, `for k in ["a", "b"]`."""
        for source in sources or [iterable]:
            if type(source) is cst.Call and type(source.func) is cst.Name and source.func.value == "range":
                bounds = [self._constant(a.value) for a in source.args]
                if bounds and all(b is not None for b in bounds):
                    n = bounds[0] if len(bounds) == 1 else (bounds[1] - bounds[0]) // (bounds[2] if len(bounds) > 2
                                                                                         and bounds[2] else 1)
                    if n <= _SMALL_RANGE:
                        return True
            if type(source) in (cst.Tuple, cst.List, cst.Set) and len(source.elements) <= _SMALL_RANGE:
                return True
            if type(source) is cst.Call and method_name(source) in ("items", "keys", "values") and not source.args \
                    and self._few_entries(source.func.value):
                return True
        return False

    def _few_entries(self, node: cst.CSTNode) -> bool:
        """A name every reaching binding of which is a dict display of a few entries written out (Depth-Anything's
        nine metrics, `results = {'d1': ..., 'd2': ...}`), and that no code adds keys to (`results[k] = ...`,
        `results.update(...)`): a loop over its entries runs those few times."""
        reaching = self.values.reaching_bindings(node) if type(node) is cst.Name else None
        if not reaching or any(b.how != "assign" or b.path or type(b.value) is not cst.Dict
                               or len(b.value.elements) > _SMALL_RANGE
                               or any(type(e) is not cst.DictElement for e in b.value.elements) for b in reaching):
            return False
        name = node.value
        grows = any(type(t.target) is cst.Subscript and type(t.target.value) is cst.Name
                    and t.target.value.value == name for a in self.model.nodes(cst.Assign) for t in a.targets)
        return not grows and not any(method_name(c) in ("update", "setdefault") and type(c.func.value) is cst.Name
                                     and c.func.value.value == name for c in self.model.calls)

    def _constant(self, node: cst.CSTNode, depth: int = 0) -> int | None:
        """An integer the code fixes: a literal, an option's default, a local name every reaching binding of
        which sets it to the same constant (`number_int = 10`), or `+ - * //` of such (`range(1, n + 1)`)."""
        found = int_value(node)
        if found is not None or depth > 3:
            return found
        if type(node) is cst.BinaryOperation and type(node.operator) in _FOLDED:
            left, right = self._constant(node.left, depth + 1), self._constant(node.right, depth + 1)
            if left is None or right is None or type(node.operator) is cst.FloorDivide and not right:
                return None
            return _FOLDED[type(node.operator)](left, right)
        if type(node) is cst.Attribute:  # `range(args.pics)` with `--pics` defaulting to 1
            value = self.values.default_of(node)
            return value if type(value) is int else None
        reaching = self.values.reaching_bindings(node) if type(node) is cst.Name else None
        if not reaching or any(b.how != "assign" or b.path or b.value is None for b in reaching):
            return None
        values = {self._constant(b.value, depth + 1) for b in reaching}
        return values.pop() if len(values) == 1 else None

    def feeds_step_loop(self, info: FunctionInfo) -> tuple | None:
        """For a generator: evidence that a step loop of this file iterates it (each of its iterations then
        runs once per step)."""
        key = ("feeds-step", info)
        if key in self.model._memo:
            return self.model._memo[key]
        self.model._memo[key] = None
        found = None
        for loop in self.model.all_loops:
            node = loop.node
            iterable = node.iter if type(node) is cst.For else getattr(getattr(node, "for_in", None), "iter", None)
            if iterable is None:
                continue
            for source in _sources(iterable):
                if type(source) is cst.Call and self.values.callee(source) is info \
                        and self.loop_kind(loop).kind == STEP:
                    found = ((f"runs every step: `{info.qualname}` yields the batches of the step loop at `{{}}`",
                              iterable),)
                    break
            if found:
                break
        self.model._memo[key] = found
        return found

    def gate_does_step_work(self, gate: Frame) -> bool:
        """`if step % train_frequency == 0: ... loss.backward(); opt.step()`: a training step taken every k
        iterations is still a step; a block that logs, checks or evaluates (`estimate_loss()`, a loop over
        the validation set) is a gate."""
        key = ("gate-work", gate)
        found = self.model._memo.get(key)
        if found is None:
            sites = self.model.sites
            calls = gate.function.calls if gate.function is not None else self.model.calls
            found = any(gate.encloses(sites[call][0]) and self.trains(call) for call in calls)
            self.model._memo[key] = found
        return found

    def trains(self, call: cst.Call, depth: int = 0) -> bool:
        """Whether a call takes a training step: `loss.backward()`, `optimizer.step()`, or a function of
        this file that does (`update()`, `train_step(batch)`)."""
        if self._trains(call):
            return True
        callee = self.values.callee(call)
        if callee is None or callee.name == "__init__" or depth >= 3:
            return False
        key = ("trains", callee)
        found = self.model._memo.get(key)
        if found is None:
            self.model._memo[key] = False  # a cycle of calls
            found = self.model._memo[key] = any(self.trains(c, depth + 1) for c in callee.calls)
        return found

    def training_call(self) -> cst.Call | None:
        """The first call of this file that learns (`loss.backward()`, an optimizer step, `torch.autograd.grad`),
        not an environment's step: None in a file that only runs models forward (an evaluation, a demo)."""
        key = "training-call"
        if key not in self.model._memo:
            self.model._memo[key] = next(
                (c for c in self.model.calls if "env" not in _receiver(c) and self._trains(c)
                 or self.model.qualname(c.func) == "torch.autograd.grad"), None)
        return self.model._memo[key]

    def _steps_once(self, call: cst.Call, depth: int = 0) -> bool:
        """`optimizer.step()`, or a call of a function of this file that steps an optimizer outside any loop
        of its own (`run_step()` -> `optimize_normal()` -> `self.opt.step()`)."""
        if method_name(call) == "step" and "env" not in _receiver(call) and self._trains(call):
            return True
        callee = self.values.callee(call)
        if callee is None or callee.name == "__init__" or depth >= 3:
            return False
        return any(self.model.sites[c][0].loop is None and self._steps_once(c, depth + 1) for c in callee.calls)

    def calls_in(self, frame: Frame) -> list[cst.Call]:
        """The calls inside a loop (nested loops included, nested functions not)."""
        if self._calls_in is None:
            self._calls_in = {}
            sites = self.model.sites
            for call in self.model.calls:
                f = sites[call][0]
                function = f.function
                for loop in f.loops():
                    if loop.function is function:
                        self._calls_in.setdefault(loop, []).append(call)
        return self._calls_in.get(frame, [])

    def inner_step_loop(self, frame: Frame, calls: list[cst.Call]) -> tuple | None:
        """Evidence that each iteration of this loop runs a whole step loop: a step loop inside it, or a
        call to a function of this file that has one."""
        for loop in self.model.all_loops:
            if loop is not frame and loop.function is frame.function and frame.encloses(loop):
                inner = self.loop_kind(loop)
                if inner.kind == STEP and not inner.device_ops_only:
                    return (("each iteration runs the step loop at `{}`", _header(loop.node)),)
        for call in calls:
            callee = self.values.callee(call)
            if callee is not None and self.has_step_loop(callee) is not None:
                return ((f"each iteration calls `{callee.qualname}`, which loops over steps", call),)
        return None

    def has_step_loop(self, info: FunctionInfo) -> tuple | None:
        if info in self._has_step_loop:
            return self._has_step_loop[info]
        self._has_step_loop[info] = None
        found = None
        for loop in self.model.all_loops:
            kind = self.loop_kind(loop) if loop.function is info else None
            if kind is not None and kind.kind in (STEP, OUTER) and not kind.device_ops_only:
                found = (("a step loop", loop.node),)
                break
        if found is None:
            for call in info.calls:
                callee = self.values.callee(call)
                if callee is not None and callee is not info and self.has_step_loop(callee) is not None:
                    found = (("a step loop", call),)
                    break
        self._has_step_loop[info] = found
        return found

    def step_work(self, calls: list[cst.Call]) -> cst.Call | None:
        """The first call among these that does a step's work: a module's forward, `.backward()`, an
        optimizer or environment step, or a function of this file that does one of these."""
        for call in calls:
            if self.is_step_work(call):
                return call
        return None

    def device_work(self, frame: Frame, calls: list[cst.Call]) -> cst.CSTNode | None:
        """An op in the loop whose result is a tensor on the device, when the loop is over a range or a
        while loop (not a few fixed items)."""
        node = frame.node
        if type(node) not in (cst.For, cst.While):
            return None
        sites = self.model.sites
        for op in self.model.nodes(cst.BinaryOperation):
            if frame.encloses(sites[op][0]):
                v = self.values.value(op)
                if v.kind == TENSOR and v.device == ON_DEVICE:
                    return op
        for call in calls:
            v = self.values.value(call)
            if v.kind == TENSOR and v.device == ON_DEVICE and method_name(call) not in ("to", "cuda"):
                return call
        return None

    def _trains(self, call: cst.Call) -> bool:
        """`loss.backward()`, `optimizer.step()`, `scaler.step(opt)`, `envs.step(actions)`: a call that
        only a training (or acting) step makes."""
        method = method_name(call)
        receiver = _receiver(call)
        if method == "backward":
            return True
        if method == "step" and receiver and "sched" not in receiver:
            if any(w in receiver for w in ("optim", "opt", "scaler", "env")):
                return True
            if self.values.value(call.func.value).kind == OPTIMIZER:
                return True
        return self.model.qualname(call.func) == "torch.autograd.backward"

    def is_step_work(self, call: cst.Call, depth: int = 0) -> bool:
        if self._trains(call):
            return True
        callee = self.values.callee(call)
        if callee is not None:
            if callee.name == "__init__":
                return False
            if depth < 3:
                return self.function_does_step_work(callee, depth + 1)
            return False
        if type(call.func) is cst.Name and call.func.value == "self" and self.values.in_module_class(call):
            return True  # `self(idx)` in `GPT.generate`: the module's own forward, once per generated token
        if type(call.func) in (cst.Name, cst.Attribute, cst.Subscript) and self.model.qualname(call.func) is None:
            v = self.values.value(call.func)
            if v.kind == MODULE:
                return True
            if type(call.func) is cst.Attribute and call.func.attr.value in api.FORWARD_METHODS \
                    and self.values.value(call.func.value).kind == MODULE:
                return True  # `model.decode(ys, memory)`: a step of generation
        return False

    def function_does_step_work(self, info: FunctionInfo, depth: int) -> bool:
        if info in self._step_work:
            return self._step_work[info] is not None
        self._step_work[info] = None
        for call in info.calls:
            if self.is_step_work(call, depth):
                self._step_work[info] = ((), call)
                return True
        return False


def generates(function: FunctionInfo | None) -> bool:
    """Whether a function is a sampling or generation method (`p_sample_loop`, `generate`, `decode`, a beam
    search's `_fast_translate_batch`): its loop makes one token or frame per iteration, a loop of steps even
    inside a module's class."""
    return function is not None and any(w in function.name for w in ("sample", *DECODERS))


def _script(model: FileModel) -> bool:
    """A file run as a program (`if __name__ == "__main__":`, absl's `app.run(main)`): no other file imports
    its functions."""
    return "__main__" in model.text or "app.run(" in model.text


def _callable_from_elsewhere(info: FunctionInfo) -> bool:
    """A module-level function, or a method of a module-level class: another file can import and call it."""
    if info.is_lambda or info.frame is None:
        return False
    outer = info.frame.parent
    if info.cls is not None:
        outer = outer.parent if outer is not None and outer.kind == "class" else None
    return outer is not None and outer.kind == "module"


def _sources(iterable: cst.CSTNode) -> list[cst.CSTNode]:
    """What a loop really iterates: `enumerate(L)`, `tqdm(L)`, `zip(A, B)`, `iter(L)` -> [L], [A, B]."""
    out = []
    stack = [iterable]
    while stack:
        it = stack.pop()
        if type(it) is cst.Call and it.args and type(it.func) in (cst.Name, cst.Attribute):
            head = (dotted(it.func) or "").rsplit(".", 1)[-1]
            if head in _WRAPPERS or dotted(it.func) in _WRAPPERS:
                if head == "zip":
                    stack.extend(a.value for a in reversed(it.args) if a.keyword is None and not a.star)
                else:
                    first = next((a for a in it.args if a.keyword is None and not a.star), None)
                    if first is not None:
                        stack.append(first.value)
                continue
        out.append(it)
    return out


def _over_model_tensors(sources: list) -> bool:
    """`model.parameters()`, `state_dict().items()`, `named_parameters()`: saving or copying tensors."""
    for source in sources:
        while type(source) is cst.Call and method_name(source) in ("items", "values", "keys"):
            source = source.func.value
        if type(source) is cst.Call and method_name(source) in (
                "parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "modules",
                "named_modules", "children", "param_groups"):
            return True
    return False


def _plots(model: FileModel, call: cst.Call) -> bool:
    qual = model.qualname(call.func) or ""
    if qual.startswith(api.PLOTTING_PREFIXES):
        return True
    name = dotted(call.func) or ""
    head = name.split(".", 1)[0]
    return head in ("plt", "ax", "axes", "fig", "axs") or name.endswith(("imshow", "savefig", "show_images"))


_BATCHES = re.compile(r"iter|batch|data|load|set|dl|stream|queue")


def _few_items(iterable: cst.BaseExpression) -> bool:
    """What a loop run every k steps goes over when it is a job, not a pass of steps: a count (`range(n)`), a
    dict's items (`eval_dls.items()`: a few named things), an attribute of the object (`self.begin_ends`,
    VAR's scales). Not an iterator of batches (`dev_iter`, snli's pass over its dev set every `dev_every`)."""
    if type(iterable) is cst.Call and dotted(iterable.func) == "enumerate" and iterable.args:
        iterable = iterable.args[0].value
    if type(iterable) is cst.Call:
        name = dotted(iterable.func) or ""
        return name == "range" or name.rsplit(".", 1)[-1] in ("items", "keys", "values")
    name = dotted(iterable) or ""
    return name.startswith("self.") and not _BATCHES.search(name.rsplit(".", 1)[-1].lower())


def on_cuda_path(frame: Frame) -> bool:
    """A branch every CUDA run takes: the body of `if torch.cuda.is_available():`, of `if x.is_cuda:`."""
    return frame.kind == "branch" and frame.condition is not None and _cpu_only(frame.condition[0],
                                                                                not frame.condition[1])


def _cpu_only(test: cst.BaseExpression, holds: bool) -> bool:
    """The branch a CUDA run never takes: `if x.device.type == "cpu":` (a fallback of a fused CUDA op), the
    else of `if x.is_cuda:` or of `if self.device == "cuda":` (a prefetcher's path for other devices)."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, holds = test.expression, not holds
    if type(test) is cst.Attribute and test.attr.value == "is_cuda":
        return not holds
    if type(test) is cst.Call and (dotted(test.func) or "").endswith("cuda.is_available"):
        return not holds  # the else of `if torch.cuda.is_available():`
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        op, right = test.comparisons[0].operator, test.comparisons[0].comparator
        left = test.left
        if type(left) is cst.Attribute and left.attr.value == "type":
            left = left.value
        device = (left.attr.value if type(left) is cst.Attribute else left.value if type(left) is cst.Name
                  else "").endswith("device")  # `x.device.type`, `self.device`, `device`
        if device and type(right) is cst.SimpleString and right.evaluated_value in ("cpu", "cuda"):
            cpu = right.evaluated_value == "cpu"  # (the else of `if self.device == "cuda":` is the fallback)
            if type(op) is cst.Equal:
                return holds == cpu
            if type(op) is cst.NotEqual:
                return holds != cpu
    return False


def _receiver(call: cst.Call) -> str:
    """The lowercased dotted receiver of a method call (`self.optimizers` for `self.optimizers["critic"].step()`),
    "" for anything else."""
    head = call.func.value if type(call.func) is cst.Attribute else None
    if type(head) is cst.Subscript:
        head = head.value
    return (dotted(head) or "").lower() if head is not None else ""


def _last_statement(node: cst.CSTNode) -> cst.BaseStatement | None:
    """The last statement of a loop's or an `if`'s indented body."""
    body = getattr(node, "body", None)
    return body.body[-1] if type(body) is cst.IndentedBlock and body.body else None


def _ends_in_break(node: cst.CSTNode) -> bool:
    """A loop whose body ends in an unconditional `break` runs its body at most once (vits' evaluate takes
    the first batch of the eval loader and leaves)."""
    last = _last_statement(node)
    return type(last) is cst.SimpleStatementLine and any(type(s) is cst.Break for s in last.body)


def _catches_first_layer(loop: cst.CSTNode) -> cst.ExceptHandler | None:
    """`for batch in dataloader: try: model(batch[0].to(dev)) except ValueError: pass`: GPTQ's (and SparseGPT's,
    Wanda's, AWQ's) calibration capture, where the first layer is swapped for a `Catcher` that stores its inputs
    and raises. Each iteration runs only the embeddings, once per quantization run: not a step (blind review
    52). The handler, for a loop whose body holds such a `try`."""
    body = getattr(loop, "body", None)
    for statement in body.body if type(body) is cst.IndentedBlock else ():
        if type(statement) is not cst.Try:
            continue
        for handler in statement.handlers:
            quiet = all(type(s) is cst.SimpleStatementLine and all(type(x) in (cst.Pass, cst.Continue) for x in s.body)
                        for s in handler.body.body)
            if quiet and type(handler.type) is cst.Name and handler.type.value == "ValueError":
                return handler
    return None


def _breaks_after_few(loop: cst.CSTNode, values: Values) -> bool:
    """`for bib in range(len(batch)): ...; if bib >= 5: break` (StyleTTS2's audio samples after validation), `for
    i, x in enumerate(test_loader): ...; if i == args.n_test_samples - 1: break` with a default of 8 (melgan's
    reference clips, saved once): the body ends by leaving once the loop's own counter reaches a small bound; or
    starts so (`if i >= num_iterations: break` first, nanoVLM's VRAM probe of 2 iterations per batch size)."""
    body = getattr(loop, "body", None)
    first = body.body[0] if type(body) is cst.IndentedBlock and body.body else None
    return _leaves_after_few(loop, _last_statement(loop), values) or _leaves_after_few(loop, first, values)


def _leaves_after_few(loop: cst.CSTNode, statement: cst.CSTNode | None, values: Values) -> bool:
    """Whether `statement`, of the loop's body, is `if <counter> >= <small bound>: ... break`."""
    if type(loop) is not cst.For or type(statement) is not cst.If or statement.orelse is not None \
            or type(statement.test) is not cst.Comparison or len(statement.test.comparisons) != 1:
        return False
    counter = loop.target
    if type(counter) is cst.Tuple and len(counter.elements) == 2 and type(loop.iter) is cst.Call \
            and dotted(loop.iter.func) == "enumerate" and len(loop.iter.args) == 1:
        counter = counter.elements[0].value  # `for i, x in enumerate(loader)`: `i` counts the iterations
    test, comparison = statement.test, statement.test.comparisons[0]
    bound = int_value(comparison.comparator)
    if bound is None:
        bound = values.default_of(comparison.comparator)
        bound = bound if type(bound) is int else None
    counted = type(counter) is cst.Name and type(test.left) is cst.Name and test.left.value == counter.value \
        or _grown_every_iteration(loop, test.left)
    return counted and type(comparison.operator) in (cst.GreaterThan, cst.GreaterThanEqual, cst.Equal) \
        and bound is not None and bound <= _SMALL_RANGE and _ends_in_break(statement)


def _grown_every_iteration(loop: cst.For, node: cst.CSTNode) -> bool:
    """`len(images)` where the loop's body appends to or extends `images` in every iteration (DALLE2's
    `get_example_data`: `images.extend(list(img))`, then `if len(images) >= n: break` with `n=5`): the length
    counts the iterations, at least."""
    if not (type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "len" and len(node.args) == 1
            and type(node.args[0].value) is cst.Name):
        return False
    name = node.args[0].value.value
    for statement in getattr(loop.body, "body", ()):
        for small in getattr(statement, "body", ()) if type(statement) is cst.SimpleStatementLine else ():
            call = small.value if type(small) is cst.Expr else None
            if type(call) is cst.Call and type(call.func) is cst.Attribute \
                    and call.func.attr.value in ("append", "extend") \
                    and type(call.func.value) is cst.Name and call.func.value.value == name:
                return True
    return False


def _every_k(gate: Frame) -> bool:
    """`if step % k == 0:` (every k-th iteration; also `if t - last_t >= k: ... last_t = t`), as opposed to `if i
    == 0:` (once). A flag set from such a test (`regularize = i % k == 0` ... `if regularize:`) is a gate too,
    but an extra update every k steps beside the loop's own step (a lazy regularisation), not the loop's step."""
    return any(type(n.operator) is cst.Modulo for n in _nodes(gate.node.test, cst.BinaryOperation)) \
        or type(gate.node) is cst.If and interval_gate(gate.node)


def _gate_over(gate: Frame, loop: Frame) -> bool:
    """Whether a gate's condition takes every k-th iteration of an inner loop by its own index (`for i, blk
    in ...: if i % 2 == 0:`): still every step. `if t == n - 1:` stays a gate (once per loop)."""
    if not any(type(n) is cst.BinaryOperation and type(n.operator) is cst.Modulo
               for n in _nodes(gate.node.test, cst.BinaryOperation)):
        return False
    node = loop.node
    target = node.target if type(node) is cst.For else getattr(getattr(node, "for_in", None), "target", None)
    if target is None:
        return False
    names = {n.value for n in _names(gate.node.test)}
    return bool(names & target_names(target))


def _names(node: cst.CSTNode) -> list[cst.Name]:
    return _nodes(node, cst.Name)


def _nodes(node: cst.CSTNode, node_type: type) -> list:
    from perflint.tree import find_all

    return find_all(node, node_type)


def _header(node: cst.CSTNode) -> cst.CSTNode:
    """The part of a loop to show in evidence: its iterable, or a while loop's condition."""
    if type(node) is cst.For:
        return node.iter
    if type(node) is cst.While:
        return node.test
    return node.for_in.iter if hasattr(node, "for_in") else node


def step_at(model: FileModel, node: cst.CSTNode) -> Step:
    return Steps.of(model).at(node)
