import libcst as cst

from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.model.values import Values, copied_to_host
from perflint.rule import Rule
from perflint.rules.fusion.chains import MIN_OPS, chains, hint
from perflint.tree import find_all


class UnfusedElementwiseChain(Rule):
    code = "PFL301"
    # Off by default: on code it was not tuned on, fewer than half its findings are worth the change (see
    # known_problems); PFL401 names the fix that fuses them all, compiling the model.
    default = False
    name = "unfused-elementwise-chain"
    summary = "a chain of 3 or more elementwise ops on tensors runs every step uncompiled: one kernel and " \
              "one full memory round trip per op"
    message = "{n} elementwise ops ({ops}) run every step as {n} kernels, {passes} reading and writing the " \
              "whole tensor; use {hint}"
    severity = "info"
    proof_metric = "kernels"
    why = """
In eager mode every elementwise op is its own kernel: it reads its inputs from memory and writes its
output back. Elementwise ops do almost no arithmetic per byte, so each one is limited by memory bandwidth
and the chain costs n times the memory traffic (and n launches, and n temporaries for autograd) of a
single fused kernel. `torch.compile` fuses such chains into one kernel (measured here: `x.cos().cos().sin()`
compiles to 1 generated kernel, `torch._inductor.metrics.generated_kernel_count == 1`); for common
activations a fused op already exists (`F.gelu(x, approximate="tanh")`, `F.silu`, `F.hardswish`, `F.mish`),
and `torch.lerp` / `torch.addcmul` do a blend or a scaled add in one kernel.
"""
    example = """
def forward(self, x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
"""
    instead = """
def forward(self, x):
    return F.gelu(x, approximate="tanh")       # one kernel
# or, for chains without a fused op: model = torch.compile(model)
"""
    known_problems = """
Reports a chain where it starts, once: 3 or more elementwise ops (arithmetic operators, comparisons,
casts, `torch.*`/`F.*` elementwise functions and tensor methods such as `.exp()`, `.mul_()`) applied one
after another, in one expression or across statements whose intermediate values are used only by the
next (`std = (0.5 * logvar).exp()` then `z = mu + eps * std`). An op counts only when an operand is a
tensor with elements: arithmetic on Python numbers or on 0-dim results of reductions (`loss =
a.mean() + 0.1 * b.mean()`) is not a chain. Only on the per-step path (a loop over steps, the functions
it calls, a module's `forward` when such a loop runs the module or one that builds it, here or in another
file of the run; every module's `forward` with `assume-forward-per-step`); quiet in functions compiled with
`torch.compile` or TorchScript, in programs that compile their model by default (a compile call that
always runs, or under a flag that defaults to on), in programs that run their steps and never use a
device (a CPU toy or tutorial, as PFL401; a file of modules alone may run anywhere), and in test files.
Quiet for arithmetic on a result copied back with `.cpu()` (no kernels), and, in the step loop itself,
for chains of a few numbers (losses, a `(batch,)` vector): those are reported only in a loop of many
iterations inside a step (a GAE over time steps), where the launches add up. Chains that continue in
another function (a helper called with an intermediate) are seen in pieces. Severity info: most chains
are correct but small (a few launches on small tensors).

Quiet, too, for arithmetic on a value the code calls `.backward()` or `.item()` on (one number by torch's
own rule), and for a mask or condition computed from other data (`x.masked_fill(pad == 0, 0)`); the ops
under a reduction join the chain only when it reads the reduced data again (`x * rsqrt(x.pow(2).mean(-1))`
is one fusable chain, `(a * w).sum(1) - (b * w).sum(1)` is not).

Off by default since blind review 22. Of its findings in the blind reviews of repositories it was not
tuned on (reviews 9 to 22; each on the rules before the fixes it prompted; the verdicts prefixed `blind
review` in `benchmarks/accuracy/labels/`), 117 of 295 were judged right (40%), against 99% on the labelled
repositories; 17 of 59 in reviews 19 to 22, the last two after a module's forward stopped counting as per
step unless a loop the linter sees runs the module (`assume-forward-per-step`). The others were chains on
tensors too small to matter (per-sample augmentation parameters, a `(batch, 512)` latent, L2
normalisation of `(batch, 128)` embeddings), code the project's configuration never runs (a sampler no
script calls, a loss or mode no config selects, a debug argument no caller passes), methods nothing
calls, and models compiled through a configuration the linter cannot read. None of these is visible in
the source: the sizes of tensors and the settings in YAML files are not. A short chain inside a Python
loop counts only where the loop runs by count or once per parameter (`for t in reversed(range(n))`,
`for p in group["params"]`), not over a few listed items. Turn it on (`extend-select = ["PFL301"]`) to
review a model's hot path by hand; PFL401, on by default, gives the fix that fuses every chain of a
model at once: compiling it.
"""

    def finish(self, model: FileModel) -> None:
        facts = model.facts
        if facts.compiled_by_default:
            return
        steps, values = Steps.of(model), Values.of(model)
        if not facts.device_work and any(steps.loop_kind(loop).kind == "step" for loop in model.all_loops):
            return  # a program that trains here and never uses a device (a CPU toy: launches on tiny tensors)
        for chain in chains(model):
            frame = model.frame_of(chain.first)
            if frame.compiled or model.torch_compiled(frame):
                continue
            step = steps.at(chain.first)
            if not step.hot and not step.unless:
                continue
            if chain.large < MIN_OPS and not _in_a_python_loop(steps, frame):
                continue  # mostly launches on small tensors (a reduction's result, a per-sample coefficient)
            if _native_fallback(frame) or copied_to_host(values.value(chain.root)):
                continue  # a re-implemented activation torch ships fused; arithmetic on a result copied back
            ops = ", ".join(dict.fromkeys(chain.names))
            passes = "each" if chain.large >= chain.ops else f"{chain.large} of them"
            at = chain.first_large or chain.first  # where the passes over whole tensors start
            self.report(model, at, self.message.format(n=chain.ops, ops=ops, passes=passes, hint=hint(model, chain)),
                        evidence=step.why[:2], end_node=chain.root if chain.root is not at else None, step=step)


def _in_a_python_loop(steps: Steps, frame) -> bool:
    """A chain inside a loop of many iterations per step (a GAE over time steps): small tensors, but the
    launches add up. Not the step loop itself: there a chain on a few numbers (a weighted sum of losses)
    launches a handful of tiny kernels once per step."""
    loop = frame.loop
    if loop is None or not _counted(loop.node):
        return False
    kind = steps.loop_kind(loop)
    return kind.kind == "neutral" or kind.kind == "step" and kind.device_ops_only


def _counted(node: cst.CSTNode) -> bool:
    """A `while` loop, one over a `range` (`for t in reversed(range(num_steps))`) or one over a model's
    parameters or gradients (`for p in group["params"]`): iterations by the count, or one per parameter
    tensor. A loop over another list (a model's few output depths, `zip(self.depths, masks)`) runs a few
    times."""
    if type(node) is cst.While:
        return True
    if type(node) is not cst.For:
        return False
    return any(type(c.func) is cst.Name and c.func.value == "range" for c in find_all(node.iter, cst.Call)) \
        or any(w in n.value for n in find_all(node.iter, (cst.Name, cst.SimpleString)) for w in ("param", "grad"))


# Activations torch has as one fused op: a function or class of this name is a fallback for old versions.
_NATIVE = {"mish", "hardswish", "hardsigmoid", "swish", "silu", "hardtanh", "softplus", "elu", "selu", "celu",
           "leakyrelu", "relu6", "gelu", "logsigmoid", "softsign", "tanhshrink"}


def _native_fallback(frame) -> bool:
    """Inside `def mish(x)`, `class HardSwish`, `class MishMe`: a re-implementation of an activation torch
    ships fused (`F.mish`, `F.hardswish`). Libraries keep these for torch versions without the op and pick
    the native one otherwise, so the chain does not run on a current install."""
    function = frame.function
    names = []
    if function is not None:
        names.append(function.name)
        if function.cls is not None:
            names.append(function.cls.name)
    for name in names:
        key = name.lower().replace("_", "")
        for suffix in ("me", "jit", "fwd", "bwd", "forward", "backward", "autofn", "fn"):
            if key.endswith(suffix) and key[: -len(suffix)] in _NATIVE:
                key = key[: -len(suffix)]
        if key in _NATIVE:
            return True
    return False
