import libcst as cst

from perflint.model.names import method_name
from perflint.model.values import TENSOR
from perflint.rules.fusion.elementwise import elementwise_kind
from perflint.tree import find_all

from perflint.rule import Rule

_COMPILERS = {"torch.compile", "torch.jit.script", "torch.jit.trace"}
MIN_OPS = 3


class UnfusedElementwiseChain(Rule):
    code = "PFL301"
    name = "unfused-elementwise-chain"
    summary = "a chain of 3 or more elementwise ops in uncompiled per-step code: one kernel and one full " \
              "memory round trip per op"
    message = "{n} elementwise ops in one expression run as {n} kernels, each reading and writing the whole " \
              "tensor; use the fused op ({hint}) or `torch.compile` the function"
    severity = "info"
    default = False
    proof_metric = "kernels"
    why = """
In eager mode every elementwise op is its own kernel: it reads its inputs from memory and writes its
output back. Elementwise ops do almost no arithmetic per byte, so each one is limited by memory bandwidth
and the chain costs n times the memory traffic (and n launches, and n temporaries for autograd) of a
single fused kernel. `torch.compile` fuses such chains into one kernel (measured here: `x.cos().cos().sin()`
compiles to 1 generated kernel, `torch._inductor.metrics.generated_kernel_count == 1`); for common
activations a fused op already exists (`F.gelu(x, approximate="tanh")`, `F.silu`, `F.hardswish`, `F.mish`).
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
Off by default: most findings are correct but small (activations on small tensors are cheap, and many
codebases compile the whole model elsewhere, which this rule cannot see). Reports one expression with at
least 3 elementwise ops (arithmetic operators, `torch.*`/`F.*` elementwise functions and tensor methods
such as `.sigmoid()`, `.mul_()`) that contains at least one torch elementwise call or a value known to be
a tensor, so pure Python arithmetic (`H * W // 2 + 1`, `2 / math.pi`) stays quiet. Only in `forward`
methods and loop bodies; quiet in functions decorated with `torch.compile`/`torch.jit.script`, in files
that call `torch.compile` or `torch.jit.script` anywhere, and in `if step % k == 0:` blocks. Chains split
over several statements (`y = x.cos()`, `y = y.sin()`, ...) are not seen.
"""

    def visit_Module(self, node, model) -> None:
        self.inner: set[int] = set()
        self.compiled_file: bool | None = None

    def visit_Call(self, node, model) -> None:
        self._visit(node, model)

    def visit_BinaryOperation(self, node, model) -> None:
        self._visit(node, model)

    def visit_UnaryOperation(self, node, model) -> None:
        self._visit(node, model)

    def _visit(self, node, model) -> None:
        if id(node) in self.inner or not (model.in_forward or model.in_hot_loop) or model.in_compiled:
            return
        kind = elementwise_kind(model, node)
        if kind is None:
            return
        params = _forward_params(model)
        ops, evidence = 0, False
        stack = [node]
        while stack:
            n = stack.pop()
            k = elementwise_kind(model, n)
            if k is None or k == "operator" and not _tensorish(model, n, params):
                evidence = evidence or model.kind(n) == TENSOR
                continue
            self.inner.add(id(n))
            ops += 1
            evidence = evidence or k == "call"
            stack += _operands(n)
        if ops < MIN_OPS or not evidence:
            return
        if self.compiled_file is None:
            self.compiled_file = bool(model.calls_in(model.module) & _COMPILERS)
        if not self.compiled_file:
            self.report(model, node, self.message.format(n=ops, hint=_hint(node)))


def _operands(node) -> list:
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    out = [a.value for a in node.args if a.keyword is None]  # alpha=, value=: Python scalars
    if method_name(node) is not None and isinstance(node.func, cst.Attribute):
        out.append(node.func.value)
    return out


def _forward_params(model) -> set[str]:
    """In `forward(self, x, ...)`, the inputs: nearly always tensors."""
    if not model.in_forward:
        return set()
    params = model.function.params
    return {p.name.value for p in (*params.posonly_params, *params.params)[1:]}


def _tensorish(model, node, params: set[str]) -> bool:
    """Whether an operator works on a tensor: one operand is a known tensor, a forward input, an
    elementwise call, or itself such an operator (`lr * wd` on Python numbers is not)."""
    for operand in _operands(node):
        if model.kind(operand) == TENSOR or isinstance(operand, cst.Name) and operand.value in params:
            return True
        k = elementwise_kind(model, operand)
        if k == "call" or k == "operator" and _tensorish(model, operand, params):
            return True
    return False


def _hint(node) -> str:
    names = {method_name(c) or (c.func.value if isinstance(c.func, cst.Name) else "") for c in find_all(node, cst.Call)}
    floats = {n.value for n in find_all(node, cst.Float)}
    if "tanh" in names and any(f.startswith("0.0447") for f in floats):
        return '`F.gelu(x, approximate="tanh")`'
    if "relu6" in names:
        return "`F.hardswish` / `F.hardsigmoid`"
    if "sigmoid" in names:
        return "`F.silu`"
    if "erf" in names:
        return "`F.gelu`"
    return "`torch.addcmul`, `torch.lerp`, an activation in `torch.nn.functional`"
