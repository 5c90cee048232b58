import re

import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted, is_false, keyword, method_name
from perflint.model.program import FileModel
from perflint.model.project import PROJECTION_LAYERS
from perflint.model.steps import Step, Steps
from perflint.model.values import MODULE, ON_DEVICE, Values
from perflint.rule import Rule
from perflint.tree import find_all

# Modules worth compiling: a model of this file or a model zoo's, a stack of layers. A lone layer
# (`nn.Linear(20, 1)`), an activation or a loss is not.
# Not `nn.ModuleList`/`nn.ModuleDict`: they have no forward, `torch.compile` of one compiles nothing that runs
# (and its wrapper cannot be indexed or iterated): the models they hold are built and reported elsewhere.
_CONTAINERS = {"torch.nn.Sequential", "torch.nn.Transformer",
               "torch.nn.TransformerEncoder", "torch.nn.TransformerDecoder", "torch.nn.TransformerEncoderLayer",
               "torch.nn.TransformerDecoderLayer"}


class ModuleNotCompiled(Rule):
    code = "PFL401"
    name = "module-not-compiled"
    summary = "a model runs every step and its program never calls `torch.compile`"
    message = "`{name}` runs every step op by op, and this program never compiles it: `{name}.compile()` fuses " \
              "its elementwise work and cuts launch overhead (in place, unlike `torch.compile({name})`, whose " \
              "wrapper prefixes its state_dict keys with `_orig_mod.`)"
    method_message = "`{name}` runs every step op by op (through its `{method}`), and this program never compiles " \
                     "it: `{name}.{method} = torch.compile({name}.{method})` fuses its elementwise work and cuts " \
                     "launch overhead (`torch.compile({name})` would compile only `forward`)"
    forward_message = "`{name}` runs every step op by op (its `forward` called directly, which an in-place " \
                      "`{name}.compile()` would not reach), and this program never compiles it: `{name}.forward = " \
                      "torch.compile({name}.forward)` fuses its elementwise work and cuts launch overhead"
    data_parallel_message = "`{name}` runs every step op by op, and this program never compiles it; it runs under " \
                            "`nn.DataParallel`, which does not mix with compiling (an in-place `{name}.compile()` is " \
                            "copied into each replica still bound to the model on the first GPU, and a compiled " \
                            "`DataParallel` runs its replicas eagerly): move to `DistributedDataParallel`, one " \
                            "process per GPU, and compile the model before wrapping it"
    severity = "info"
    proof_metric = "ops"
    why = """
In eager mode every op is a separate kernel launch with its own pass over memory: an activation, a
normalisation and a residual add after a matmul each read and write the whole activation. Compiled with
Inductor, chains of element-wise and reduction ops become one generated kernel, and the Python and
dispatcher overhead per op disappears; on a GPU CUDA graphs (`mode="reduce-overhead"`) remove the launch
cost as well.
"""
    example = """
model = Net().to(device)
for x, y in loader:
    loss = loss_fn(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
"""
    instead = """
model = Net().to(device)
model.compile()  # in place: `model` stays a `Net`, its state_dict keys unchanged
for x, y in loader:
    loss = loss_fn(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
"""
    known_problems = """
Reported only in a file that trains (a `backward()`, an optimizer step or `torch.autograd.grad` in it: the
finding names that line), or for a model handed to a routine that trains it or samples from it step by step
(`train_one_epoch(model, ...)`, `Trainer(model)`, `diffusion.p_sample_loop(model, ...)`). A script that only
runs its models forward, over a test split, a folder of images or a few prompts, is left alone: compile
warm-up and recompiles at varying shapes often cost more than one pass saves, and the blind reviews split on
it (of the 73 such findings the corpus held at 656ad91, 29 judged right and 32 wrong, 48%: off, by the
bar of 80%).
Reported once per model, where it is built (for a factory that builds one model per branch, `get_model(name)`,
where the factory is called; for a name bound in two branches, where the defaults build it, and not at all
when only a branch the defaults never take does), when the model runs every step: called in a loop over a
data loader or over training steps (in this file, also through the functions it passes the model to), or
handed to a training or evaluation routine of another file (`train_one_epoch(model, ...)`,
`TrainLoop(model=model)`). A model handed to a class of the run that keeps it and runs a method of
it other than `forward` (`DDIMSampler(model)`, whose steps call `model.apply_model`) gets that method
compiled in the fix, since `torch.compile(model)` compiles only `forward`, and so does a model a loop
runs through such a method (`vae.encode(x)`). A model whose `forward` is called directly (`self.model.forward(x)`,
also by a trainer class of another file) gets `model.forward = torch.compile(model.forward)`: an in-place
`model.compile()` changes only `__call__` and would never run (checked on torch 2.13). A model wrapped in
`nn.DataParallel` is told to move to `DistributedDataParallel` and compile there: the wrapper's replicas copy
the module's `__dict__`, the compiled call of an in-place `compile()` included, so each would run the original
on the first GPU (torch 2.13's `Module._replicate_for_data_parallel`), and `torch.compile` of the wrapper falls
back to eager speed on several GPUs (pytorch/pytorch#94636). A model handed to a class that keeps it and calls
none of its methods is not reported. Quiet when the model's program (the files linked to it by imports) calls
`torch.compile`, `torch.jit.script`/`trace` or `torch.export` on a model anywhere, even behind a flag:
the option exists, and whether it is on is the user's call. Quiet for lone layers, activations and
losses (also a module bound to a name such as `criterion` or `loss_fn`, however it is built:
`getattr(model, "criterion", CrossEntropyLoss)()`, `lpips.LPIPS()`), for a head of dropout and linear
layers only (nothing to fuse), also a class of any file of the run that builds one linear layer (a linear
probe's `LinearClassifier`) or, straight from `nn.Module`, no layer and keeps no model (a memory bank), or whose `forward` takes a training step itself (MAML's
`Meta`: `autograd.grad` and an optimizer step inside), for the modules of a file that multiplies by a sparse
matrix (`torch.spmm(adj, h)` in a GCN: torch.compile does not support sparse tensors, measured on 2.13), for
models built around cuDNN RNNs with no convolution (`nn.LSTM`, directly or through classes of their file such
as sgan's `Encoder` and `Decoder`: compile leaves each RNN one opaque call, and blind reviews 8, 14, 35 and 36
judged every such finding wrong), for models run a few fixed times (`for _ in range(3)`), for models that
stay on the CPU (a tutorial's toy; compile pays off on accelerators first), in interactive apps (a file
that imports gradio or streamlit: the model runs per user request, at the shapes the user picks), in
loops that show each result on screen (`cv2.imshow`: a video demo, paced by capture and display), for
modules of a file that trains which only its evaluations run (a loop over the validation set with no
training step in it, or a block behind an every-k gate: gsplat's SSIM and LPIPS metrics, AnimateDiff's
sample grid; blind review 50 judged all three findings wrong), and in test files.
Compiling costs seconds to minutes up front and some models graph-break: the finding is advice (severity
info), not an error.
Quiet in a file that imports Opacus (differentially private training: its per-sample gradient hooks do
not support torch.compile), and in a trainer built on transformers' `Trainer`, whose `torch_compile`
argument is the flag. Quiet in a file that differentiates twice (`torch.autograd.grad(...,
create_graph=True)`: a gradient penalty such as R1 or WGAN-GP), or whose program does in another file (a
trainer module), which torch.compile does not support. Quiet in a program that builds layers from a compiled
extension library (InPlaceABN, spconv, DGL, Deformable DETR's `MultiScaleDeformableAttention`): Dynamo cannot
trace their kernels, so the graph breaks at every such layer; blind reviews 43, 45, 47 and 48 judged all seven
such findings wrong.
The pair uses Inductor, which compiles C++ on its first run (about 10-15 s with a cold cache, about 1 s
warm): the eager backend does not fuse, so it would prove nothing.
"""

    def finish(self, model: FileModel) -> None:
        facts = model.facts
        if facts.compiles or facts.double_backward or facts.extension_layers or _double_backward(model) \
                or _OPACUS.search(model.text):
            return
        values, steps = Values.of(model), Steps.of(model)
        compiled = set()  # models this file compiles: `torch.compile(Net())`, `model.compile()`
        for call in model.calls:
            qual = model.qualname(call.func)
            if qual in api.COMPILERS and call.args:
                compiled.add(values.value(call.args[0].value).origin)
            elif method_name(call) == "compile" and qual is None:
                compiled.add(values.value(call.func.value).origin)
        runs: dict[cst.CSTNode, tuple[cst.Call, Step]] = {}
        methods: dict[cst.CSTNode, str] = {}  # models whose every-step run is a method other than `forward`
        evaluated: dict[cst.CSTNode, bool] = {}  # models run directly: whether only by loops that evaluate
        for call in model.calls:
            origin, method = self._module_run(model, values, call)
            if origin is None or _loss_named(call.func):
                continue  # `criterion(logits, y)` of `optimizer, scheduler, criterion = get_optim_scheduler(...)`
            step = steps.at(call)
            if not step.hot:
                continue
            evaluated[origin] = evaluated.get(origin, True) and _in_an_evaluation(model, steps, call)
            if origin not in runs:
                runs[origin] = (call, step)
                if method is not None:
                    methods[origin] = method  # `vae.encode(x)`
        learned = set()  # models handed to a routine that trains them or samples from them
        runners = dict(model.facts.runners)  # classes of the run that call a method of the model they keep
        for call in model.calls if steps.interactive_app() is None else ():  # handed to another file's loop
            name = dotted(call.func) or ""
            last = name.rsplit(".", 1)[-1].lower()
            if not any(w in last for w in api.RUNNER_WORDS) \
                    or values.callee(call) is not None \
                    or model.qualname(call.func) is not None and model.qualname(call.func).startswith("torch."):
                continue
            for i, arg in enumerate(call.args):
                v = values.value(arg.value)
                if v.kind == MODULE and _learned_or_sampled(call):
                    learned.add(v.origin)  # `evaluate(model, ...)` first, `train_one_epoch(model, ...)` later (DETR)
                if v.kind == MODULE and v.origin is not None and v.origin not in runs and not _loss_named(arg.value) \
                        and _worth_compiling(model, v.origin) and not _inside_a_module(model, values, v.origin):
                    method = runners.get(name) if i == 0 and arg.keyword is None else None
                    if method == "":
                        continue  # `Sampler(model)` keeps the model and never runs it
                    how = "it"
                    if method:
                        methods[v.origin] = method
                        how = f"its `{method}`"
                    runs[v.origin] = (call, Step(True, ((f"handed to `{{}}`, which runs {how} every step", call.func),)))
        learns = steps.training_call()
        for origin, (call, step) in runs.items():
            if learns is None and origin not in learned:
                continue  # a file that only runs models forward, over a test set or a few inputs (see known_problems)
            if learns is not None and evaluated.get(origin) and origin not in learned \
                    and origin not in _handed_on(model, values):
                continue  # run only by the evaluations of a file that trains (gsplat's LPIPS metric, a pipeline)
            if origin in compiled or not self._on_device(model, values, call):
                continue  # a model that stays on the CPU (a toy, a tutorial): compiling it is not the point
            name = _bound_name(model, origin) or "model"
            if _moved_only_off(model, steps, name, origin):
                continue  # `if args.use_cuda: model.cuda()` with `--use_cuda` 0 (Conv-TasNet): it runs on the CPU
            if steps.never_taken(model.frame_of(origin)):
                # built in a branch the defaults never take (VideoPose3D's `else:` fallback model, a trajectory
                # model only under `--evaluate`): report where the default run builds it, or not at all
                origin = _built_by_default(model, steps, name, origin)
                if origin is None or origin in compiled or not _worth_compiling(model, origin):
                    continue
            method = methods.get(origin)
            wrap = _data_parallel(model, steps, name, origin)
            if wrap is not None:
                message = self.data_parallel_message.format(name=name)
            elif method == "forward":
                message = self.forward_message.format(name=name)
            elif method:  # `torch.compile(model)` compiles `forward` only: compile the method that runs
                message = self.method_message.format(name=name, method=method)
            else:
                message = self.message.format(name=name)
            learning = (("this file trains: `{}`", learns),) if learns is not None else ()
            wrapped = (("wrapped by `{}`", wrap),) if wrap is not None else ()
            self.report(model, origin, message, evidence=(("runs every step: `{}`", call), *step.why[:2], *learning,
                                                          *wrapped), step=step)

    @staticmethod
    def _on_device(model: FileModel, values: Values, call: cst.Call) -> bool:
        """Whether the model a call runs (or is handed to) lives on the device, or may in a program that uses one."""
        func = call.func
        target = func.value if type(func) is cst.Attribute and method_name(call) in api.FORWARD_METHODS else func
        v = values.value(target)
        if v.kind != MODULE:  # handed to another file: the argument that is the model
            v = next((values.value(a.value) for a in call.args if values.value(a.value).kind == MODULE), v)
        return v.device == ON_DEVICE

    @staticmethod
    def _module_run(model: FileModel, values: Values, call: cst.Call) -> tuple[cst.CSTNode | None, str | None]:
        """The construction of the model this call runs, and the method it runs when not called (`vae.encode(x)`,
        `model.forward(x)`; None for `model(x)`, `self.model(x)`)."""
        func = call.func
        if model.qualname(func) is not None:
            return None, None
        method = None
        if type(func) is cst.Attribute and method_name(call) in api.FORWARD_METHODS:
            v = values.value(func.value)
            method = method_name(call)  # `model.forward(x)` too: it bypasses an in-place `model.compile()`
        else:
            v = values.value(func)
        if v.kind != MODULE or v.origin is None or not _worth_compiling(model, v.origin) \
                or _inside_a_module(model, values, v.origin):
            return None, None
        return v.origin, method


def _in_an_evaluation(model: FileModel, steps: Steps, call: cst.Call) -> bool:
    """Whether a run of a model sits in loops of its function none of which takes a training step (the
    validation pass of a file that trains: gsplat's `for data in valloader: ... self.lpips(colors, pixels)`),
    or behind an every-k gate (AnimateDiff's sample grid every `validation_steps`): the few passes it runs do
    not repay compiling it. A run outside any loop of its function (a helper or `forward` called per step) is
    not one."""
    frame = model.frame_of(call)
    function, looped = frame.function, False
    for f in frame.chain():
        if f.function is not function or f.kind == "function":
            break
        if f.kind == "gate" and not steps.gate_does_step_work(f):
            return True  # `if global_step % validation_steps == 0:` inside the training loop
        if f.kind in ("loop", "comprehension"):
            if any(steps.trains(c) for c in steps.calls_in(f)):
                return False
            looped = True
    return looped


def _handed_on(model: FileModel, values: Values) -> set:
    """The models this file hands to any call, alone or in a tuple or list, or whose parameters it takes
    (pycls' `construct_optimizer(model)`, `model.parameters()`): what else runs or trains them is not all in
    view, so only a model the file just calls is known to be run by its evaluations alone."""
    found = model._memo.get("handed-on")
    if found is None:
        found = model._memo["handed-on"] = set()
        for call in model.calls:
            nodes = [a.value for a in call.args]
            if type(call.func) is cst.Attribute and method_name(call) in ("parameters", "named_parameters",
                                                                          "state_dict"):
                nodes.append(call.func.value)
            for node in nodes:  # the values handed (not a call in an argument: `append(self.ssim(a, b))`)
                for item in [e.value for e in node.elements] if type(node) in (cst.Tuple, cst.List) else [node]:
                    v = values.value(item)
                    if v.kind == MODULE and v.origin is not None:
                        found.add(v.origin)
    return found


def _learned_or_sampled(call: cst.Call) -> bool:
    """Whether a call of another file's routine trains the models it is handed or samples from them step by
    step, by the routine's name (`train_one_epoch(model, ...)`, `Trainer(model)`, `diffusion.p_sample_loop(model,
    ...)`, `DDIMSampler(model)`)."""
    last = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
    return any(w in last for w in ("train", "fit", "sampl"))


# Opacus computes per-sample gradients with module hooks (`PrivacyEngine.make_private`, `GradSampleModule`),
# which torch.compile does not support: its examples' models cannot take the advice.
_OPACUS = re.compile(r"^[ \t]*(?:from|import)[ \t]+opacus\b", re.MULTILINE)


def _double_backward(model: FileModel) -> bool:
    """A gradient penalty (`torch.autograd.grad(..., create_graph=True)`, `.backward(create_graph=True)`: R1,
    path length, WGAN-GP) differentiates through the models twice, which torch.compile does not support."""
    for call in model.calls:
        arg = keyword(call, "create_graph")
        if arg is not None and not is_false(arg.value) and (
                model.qualname(call.func) in ("torch.autograd.grad", "torch.autograd.backward")
                or method_name(call) == "backward"):
            return True
    return False


def _inside_a_module(model: FileModel, values: Values, origin: cst.CSTNode) -> bool:
    """A submodule built by a module class (`self.head = nn.Linear(...)` in `__init__`): it is compiled with
    the model that holds it."""
    function = model.frame_of(origin).function
    while function is not None:
        if function.cls is not None and values.is_module_class(function.cls):
            return True
        parent = function.frame.parent if function.frame is not None else None
        function = parent.function if parent is not None else None
    return False


def _worth_compiling(model: FileModel, origin: cst.CSTNode) -> bool:
    if type(origin) is not cst.Call:
        return False
    qual = model.qualname(origin.func) or dotted(origin.func) or ""
    last = qual.rsplit(".", 1)[-1]
    if _loss_word(qual) or last.lower().endswith(("dropout", "norm")):
        return False
    if _loss_word(_bound_name(model, origin) or ""):
        return False  # `criterion = getattr(model, "criterion", CrossEntropyLoss)(**kw)`, `loss_fn = LPIPS()`
    if qual == "torch.nn.Sequential":
        return not _only_projection(model, origin)
    if last in model.facts.not_worth_compiling:
        return False  # `LinearClassifier(...)`, a memory bank, a `forward` that trains (project.py)
    if qual.startswith("torch.nn."):
        return qual in _CONTAINERS
    return True


def _only_projection(model: FileModel, call: cst.Call) -> bool:
    layers = []
    for arg in call.args:
        value = arg.value
        if arg.star == "*" and type(value) in (cst.List, cst.Tuple):
            layers += [e.value for e in value.elements]
        elif not arg.star:
            layers.append(value)
        else:
            return False
    names = [(model.qualname(v.func) or dotted(v.func) or "").rsplit(".", 1)[-1] if type(v) is cst.Call else ""
             for v in layers]
    return bool(names) and all(n in PROJECTION_LAYERS for n in names)


def _built_by_default(model: FileModel, steps: Steps, name: str, origin: cst.CSTNode) -> cst.CSTNode | None:
    """Another construction bound to the same name in the same function, in a branch the defaults take (not a
    wrapper or a move of the model already bound: `model = DistributedDataParallel(model)`, `model.cuda()`)."""
    function = model.frame_of(origin).function
    for assign in model.nodes(cst.Assign):
        value = assign.value
        if len(assign.targets) == 1 and dotted(assign.targets[0].target) == name and value is not origin \
                and type(value) is cst.Call and model.frame_of(assign).function is function \
                and not _mentions(value, name) \
                and not steps.never_taken(model.frame_of(assign)):
            return value
    return None


def _moved_only_off(model: FileModel, steps: Steps, name: str, origin: cst.CSTNode) -> bool:
    """Whether every move of the model to a device in the function that builds it (`model.cuda()`,
    `model = DataParallel(model).cuda()`) lies in a branch the defaults never take."""
    function = model.frame_of(origin).function
    moves = [c for c in model.calls if method_name(c) in ("cuda", "to") and type(c.func) is cst.Attribute
             and model.sites[c][0].function is function
             and (_mentions(c.func.value, name) or origin in _chain(c.func.value))]  # `Net().to(device)` too
    return bool(moves) and all(steps.never_taken(model.sites[c][0]) for c in moves)


def _data_parallel(model: FileModel, steps: Steps, name: str, origin: cst.CSTNode) -> cst.Call | None:
    """`nn.DataParallel(model)` (or of the construction itself) in this file, not in a branch the defaults never
    take. Its replicas copy the module's `__dict__`, the compiled `_call_impl` of an in-place `compile()`
    included (torch 2.13's `Module._replicate_for_data_parallel`), so each would run the original on the first
    GPU's weights; and `torch.compile` of the wrapper falls back to eager speed on several GPUs
    (pytorch/pytorch#94636)."""
    for call in model.calls:
        if model.qualname(call.func) in api.DATA_PARALLEL and call.args \
                and (_mentions(call.args[0].value, name) or origin in _chain(call.args[0].value)) \
                and not steps.never_taken(model.sites[call][0]):
            return call
    return None


def _mentions(expr: cst.CSTNode, name: str) -> bool:
    """Whether an expression reads the dotted name (`model` in `DDP(model)`, not in `args.model`)."""
    attrs = {id(a.attr) for a in find_all(expr, cst.Attribute)}
    return any(dotted(n) == name for n in find_all(expr, (cst.Name, cst.Attribute)) if id(n) not in attrs)


def _loss_named(node: cst.CSTNode) -> bool:
    """A module run or handed on under a loss's name (`criterion`, `loss_fn`): where it was unpacked from a
    helper's tuple (AutoDL's `optimizer, scheduler, criterion = get_optim_scheduler(...)`, blind review 44),
    its origin names no model."""
    return _loss_word(dotted(node) or "")


def _loss_word(name: str) -> bool:
    """Whether a (dotted) name's last part says loss: `criterion`, `self.loss_fn`, `metric`."""
    last = name.rsplit(".", 1)[-1].lower()
    return any(w in last for w in api.LOSS_WORDS)


def _bound_name(model: FileModel, origin: cst.CSTNode) -> str | None:
    """The name the model is bound to: `model` in `model = Net().to(device)` (the first assignment whose
    chain of calls holds it). The file's assignments are read once, into a table by node."""
    names = model._memo.get("pfl401-bound-names")
    if names is None:
        names = model._memo["pfl401-bound-names"] = {}
        for assign in model.nodes(cst.Assign):
            if len(assign.targets) == 1:
                target = dotted(assign.targets[0].target)
                for node in _chain(assign.value):
                    names.setdefault(node, target)
    return names.get(origin)


def _chain(expr: cst.CSTNode):
    """The expression and what it is made from, through calls: `Net().to(device)`, `Net()`, `Net`
    (a method's receiver, or a function's first argument: `DDP(Net())`)."""
    while True:
        yield expr
        if type(expr) is not cst.Call:
            return
        if type(expr.func) is cst.Attribute:
            expr = expr.func.value
        elif expr.args:
            expr = expr.args[0].value
        else:
            return
