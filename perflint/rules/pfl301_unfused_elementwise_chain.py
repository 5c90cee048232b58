import libcst as cst

from perflint.context import TENSOR, find_all, elementwise_kind, method_name
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
    valid = (
        "import torch\nclass M:\n    def forward(self, x):\n        return x * torch.sigmoid(x)\n",
        "import math\nclass M:\n    def forward(self, x):\n        return x.shape[0] * 2 + 1 - math.pi\n",
        "import torch\n@torch.compile\ndef f(x):\n    for i in range(3):\n        x = x.cos().cos().sin()\n",
        "import torch\ndef f(x):\n    return x.cos().cos().sin()\n",
        "import torch\nm = torch.compile(m)\nclass M:\n    def forward(self, x):\n        return x.cos().cos().sin()\n",
    )
    invalid = (
        "import torch, math\nclass G:\n    def forward(self, x):\n"
        "        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))"
        "  # expect: PFL301\n",
        "for x in xs:\n    y = x.cos().cos().sin()  # expect: PFL301\n",
        "import torch.nn.functional as F\nclass H:\n    def forward(self, x):\n"
        "        return x * F.relu6(x + 3.0) / 6.0  # expect: PFL301\n",
    )

    def visit_Module(self, node, ctx) -> None:
        self.inner: set[int] = set()
        self.compiled_file: bool | None = None

    def visit_Call(self, node, ctx) -> None:
        self._visit(node, ctx)

    def visit_BinaryOperation(self, node, ctx) -> None:
        self._visit(node, ctx)

    def visit_UnaryOperation(self, node, ctx) -> None:
        self._visit(node, ctx)

    def _visit(self, node, ctx) -> None:
        if id(node) in self.inner or not (ctx.in_forward or ctx.in_hot_loop) or ctx.in_compiled:
            return
        kind = elementwise_kind(ctx, node)
        if kind is None:
            return
        params = _forward_params(ctx)
        ops, evidence = 0, False
        stack = [node]
        while stack:
            n = stack.pop()
            k = elementwise_kind(ctx, n)
            if k is None or k == "operator" and not _tensorish(ctx, n, params):
                evidence = evidence or ctx.kind(n) == TENSOR
                continue
            self.inner.add(id(n))
            ops += 1
            evidence = evidence or k == "call"
            stack += _operands(n)
        if ops < MIN_OPS or not evidence:
            return
        if self.compiled_file is None:
            self.compiled_file = bool(ctx.calls_in(ctx.module) & _COMPILERS)
        if not self.compiled_file:
            self.report(ctx, node, self.message.format(n=ops, hint=_hint(node)))


def _operands(node) -> list:
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right]
    if isinstance(node, cst.UnaryOperation):
        return [node.expression]
    out = [a.value for a in node.args if a.keyword is None]  # alpha=, value=: Python scalars
    if method_name(node) is not None and isinstance(node.func, cst.Attribute):
        out.append(node.func.value)
    return out


def _forward_params(ctx) -> set[str]:
    """In `forward(self, x, ...)`, the inputs: nearly always tensors."""
    if not ctx.in_forward:
        return set()
    params = ctx.function.params
    return {p.name.value for p in (*params.posonly_params, *params.params)[1:]}


def _tensorish(ctx, node, params: set[str]) -> bool:
    """Whether an operator works on a tensor: one operand is a known tensor, a forward input, an
    elementwise call, or itself such an operator (`lr * wd` on Python numbers is not)."""
    for operand in _operands(node):
        if ctx.kind(operand) == TENSOR or isinstance(operand, cst.Name) and operand.value in params:
            return True
        k = elementwise_kind(ctx, operand)
        if k == "call" or k == "operator" and _tensorish(ctx, operand, params):
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
