import libcst as cst

from perflint.context import Context, dotted, keyword, positional
from perflint.rule import Rule

_CONVS = {f"torch.nn.Conv{d}d" for d in (1, 2, 3)} | {f"torch.nn.LazyConv{d}d" for d in (1, 2, 3)}
_NORMS = {f"torch.nn.BatchNorm{d}d" for d in (1, 2, 3)} | {f"torch.nn.LazyBatchNorm{d}d" for d in (1, 2, 3)} \
    | {"torch.nn.SyncBatchNorm"}


def _statements(body) -> list:
    return [s for s in getattr(body, "body", ()) if isinstance(s, cst.SimpleStatementLine)]


class ConvBiasBeforeBatchNorm(Rule):
    code = "PFL606"
    name = "conv-bias-before-batchnorm"
    summary = "a convolution with a bias feeds straight into BatchNorm, which subtracts the bias again"
    message = "this convolution's bias is cancelled by the BatchNorm that follows it; pass `bias=False`"
    severity = "warning"
    fix_safety = "unsafe"
    proof_metric = "ops"
    why = """
BatchNorm subtracts the per-channel mean of its input, so a per-channel constant added just before it
(the convolution's bias) cancels exactly, and BatchNorm's own `beta` already provides the shift. The
bias still costs: the add over the whole output (an extra pass over the activation in memory unless the
convolution kernel fuses it), a gradient reduction over the batch and spatial dimensions in backward, and
one more parameter tensor for the optimizer to update and for the all-reduce to send each step.
"""
    example = """
block = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU())
"""
    instead = """
block = nn.Sequential(nn.Conv2d(64, 128, 3, padding=1, bias=False), nn.BatchNorm2d(128), nn.ReLU())
"""
    known_problems = """
Seen in `nn.Sequential(...)` arguments and list displays (`[conv, bn, relu]`) where the two calls are
adjacent, and in a class whose `__init__` assigns `self.conv = nn.ConvNd(...)` right before
`self.bn = nn.BatchNormNd(...)` when the class also calls `self.bn(self.conv(...))` or assigns
`x = self.conv(...)` right before a statement that calls `self.bn(x)`. A `bias=<expression>` is quiet.
In eval mode BatchNorm uses running statistics, where the bias does not cancel if the model was trained
with it; the fix is unsafe because the checkpoint's `conv.bias` key disappears and the running mean
changes (training again with the fix is needed; a trained bias can be folded into BatchNorm's
`running_mean` instead).
"""
    valid = (
        "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8))\n",
        "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.BatchNorm2d(8))\n",
        "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3, bias=not use_bn), nn.BatchNorm2d(8))\n",
        "from torch import nn\nclass B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n        self.bn = nn.BatchNorm2d(8)\n\n"
        "    def forward(self, x):\n        return self.bn(x) + self.conv(x)\n",
    )
    invalid = (
        "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))  # expect: PFL606\n",
        "import torch.nn as nn\n"
        "layers = [nn.Conv2d(3, 8, 3, bias=True), nn.BatchNorm2d(8), nn.ReLU()]  # expect: PFL606\n",
        "from torch import nn\nclass B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)  # expect: PFL606\n        self.bn = nn.BatchNorm2d(8)\n\n"
        "    def forward(self, x):\n        return self.bn(self.conv(x)).relu()\n",
        "from torch import nn\nclass B(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv1 = nn.Conv2d(3, 8, 3)  # expect: PFL606\n        self.bn1 = nn.BatchNorm2d(8)\n\n"
        "    def forward(self, x):\n        out = self.conv1(x)\n        out = self.bn1(out)\n        return out\n",
    )

    def visit_Module(self, node: cst.Module, ctx: Context) -> None:
        self._pending: list[list] = []  # per open class: [(conv Call, conv attr, bn attr)]

    def _biased_conv(self, expr, ctx: Context) -> bool:
        if not isinstance(expr, cst.Call) or ctx.call_name(expr) not in _CONVS:
            return False
        arg = keyword(expr, "bias") or positional(expr, 7)
        return arg is None or isinstance(arg.value, cst.Name) and arg.value.value == "True"

    def _norm(self, expr, ctx: Context) -> bool:
        return isinstance(expr, cst.Call) and ctx.call_name(expr) in _NORMS

    def _check_sequence(self, exprs: list, ctx: Context) -> None:
        for a, b in zip(exprs, exprs[1:]):
            if self._biased_conv(a, ctx) and self._norm(b, ctx):
                self._flag(a, ctx)

    def _flag(self, conv: cst.Call, ctx: Context) -> None:
        arg = keyword(conv, "bias")
        if arg is not None:
            args = [a.with_changes(value=cst.Name("False")) if a is arg else a for a in conv.args]
        else:
            args = list(conv.args)
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            args.append(cst.Arg(keyword=cst.Name("bias"), value=cst.Name("False"),
                                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                      whitespace_after=cst.SimpleWhitespace(""))))
        self.report(ctx, conv, replacement=conv.with_changes(args=args))

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        if ctx.call_name(node) in ("torch.nn.Sequential", "torch.nn.ModuleList"):
            self._check_sequence([a.value for a in node.args if a.keyword is None and not a.star], ctx)

    def visit_List(self, node: cst.List, ctx: Context) -> None:
        self._check_sequence([e.value for e in node.elements if isinstance(e, cst.Element)], ctx)

    def visit_ClassDef(self, node: cst.ClassDef, ctx: Context) -> None:
        self._pending.append([])

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: Context) -> None:
        if node.name.value != "__init__" or not self._pending:
            return
        lines = _statements(node.body)
        for first, second in zip(lines, lines[1:]):
            a, b = first.body[0], second.body[0]
            if isinstance(a, cst.Assign) and isinstance(b, cst.Assign) and len(a.targets) == 1 \
                    and len(b.targets) == 1 and self._biased_conv(a.value, ctx) and self._norm(b.value, ctx):
                conv, bn = dotted(a.targets[0].target), dotted(b.targets[0].target)
                if conv and bn and conv.startswith("self.") and bn.startswith("self."):
                    self._pending[-1].append((a.value, conv, bn))

    def leave_ClassDef(self, node: cst.ClassDef, ctx: Context) -> None:
        pairs = self._pending.pop()
        if not pairs:
            return
        chained = _chained(node)
        for conv_call, conv, bn in pairs:
            if (conv, bn) in chained:
                self._flag(conv_call, ctx)


def _chained(cls: cst.ClassDef) -> set[tuple[str, str]]:
    """(conv, bn) attribute pairs that the class applies one right after the other."""
    out: set[tuple[str, str]] = set()

    class _Visit(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            outer = dotted(node.func)
            if outer and node.args and isinstance(node.args[0].value, cst.Call):
                inner = dotted(node.args[0].value.func)
                if inner:
                    out.add((inner, outer))

        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            lines = _statements(node)
            for first, second in zip(lines, lines[1:]):
                a, b = first.body[0], second.body[0]
                if isinstance(a, cst.Assign) and len(a.targets) == 1 and isinstance(a.value, cst.Call) \
                        and isinstance(a.targets[0].target, cst.Name):
                    var, inner = a.targets[0].target.value, dotted(a.value.func)
                    value = getattr(b, "value", None)
                    if inner and isinstance(value, cst.Call) and value.args \
                            and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == var:
                        outer = dotted(value.func)
                        if outer:
                            out.add((inner, outer))

    cls.visit(_Visit())
    return out
