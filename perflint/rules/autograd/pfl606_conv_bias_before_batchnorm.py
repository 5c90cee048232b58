import libcst as cst

from perflint.model.names import dotted, keyword, positional
from perflint.model.program import FileModel

from perflint.rule import Rule

_CONVS = {f"torch.nn.Conv{d}d" for d in (1, 2, 3)} | {f"torch.nn.LazyConv{d}d" for d in (1, 2, 3)}
_NORMS = {f"torch.nn.BatchNorm{d}d" for d in (1, 2, 3)} | {f"torch.nn.LazyBatchNorm{d}d" for d in (1, 2, 3)} \
    | {"torch.nn.SyncBatchNorm"}
_LOADS = ("state_dict", "pretrained", "checkpoint", "torch.load", "load_weights")


def _statements(body) -> list:
    return [s for s in getattr(body, "body", ()) if type(s) is cst.SimpleStatementLine]


class ConvBiasBeforeBatchNorm(Rule):
    code = "PFL606"
    call_names = frozenset({"Sequential", "ModuleList"})
    name = "conv-bias-before-batchnorm"
    summary = "a convolution with a bias feeds straight into BatchNorm, which subtracts the bias again"
    message = "this convolution's bias is cancelled by the BatchNorm that follows it; pass `bias=False`"
    severity = "warning"
    # Off by default: on real code the saving is small (cuDNN adds a convolution's bias in the kernel's
    # epilogue) and the fix changes the model's checkpoint, so reviewers did not want it (see known_problems).
    default = False
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
`running_mean` instead). In a file that loads weights (it mentions `state_dict`, `pretrained`,
`checkpoint`, `torch.load`) no fix is offered at all: the weights it loads would not fit.

Off by default. The claim is always true, but a seasoned reviewer rarely wants the change: the bias add
is usually fused into the convolution kernel's epilogue (so it costs a few parameters, not a pass over
memory), and `bias=False` changes the model's `state_dict`, so released checkpoints stop loading. In the
sixth blind review of repositories it was not tuned on (open_clip), none of its 25 findings was judged
worth fixing (blocks of an audio model whose fusion is off by default, or whose released checkpoint has
the biases). Select it (`--select PFL606`) for a new model trained from scratch.
"""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self._pending: list[list] = []  # per open class: [(conv Call, conv attr, bn attr)]

    def _biased_conv(self, expr, model: FileModel) -> bool:
        if type(expr) is not cst.Call or model.call_name(expr) not in _CONVS:
            return False
        arg = keyword(expr, "bias") or positional(expr, 7)
        return arg is None or type(arg.value) is cst.Name and arg.value.value == "True"

    def _norm(self, expr, model: FileModel) -> bool:
        return type(expr) is cst.Call and model.call_name(expr) in _NORMS

    def _check_sequence(self, exprs: list, model: FileModel) -> None:
        for a, b in zip(exprs, exprs[1:]):
            if self._biased_conv(a, model) and self._norm(b, model):
                self._flag(a, model)

    def _flag(self, conv: cst.Call, model: FileModel) -> None:
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
        # A file that loads weights (a checkpoint, pretrained weights) would then miss `conv.bias`.
        loads = any(word in model.text for word in _LOADS)
        self.report(model, conv, replacement=None if loads else conv.with_changes(args=args))

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        if model.call_name(node) in ("torch.nn.Sequential", "torch.nn.ModuleList"):
            self._check_sequence([a.value for a in node.args if a.keyword is None and not a.star], model)

    def visit_List(self, node: cst.List, model: FileModel) -> None:
        self._check_sequence([e.value for e in node.elements if type(e) is cst.Element], model)

    def visit_ClassDef(self, node: cst.ClassDef, model: FileModel) -> None:
        self._pending.append([])

    def visit_FunctionDef(self, node: cst.FunctionDef, model: FileModel) -> None:
        if node.name.value != "__init__" or not self._pending:
            return
        lines = _statements(node.body)
        for first, second in zip(lines, lines[1:]):
            a, b = first.body[0], second.body[0]
            if type(a) is cst.Assign and type(b) is cst.Assign and len(a.targets) == 1 \
                    and len(b.targets) == 1 and self._biased_conv(a.value, model) and self._norm(b.value, model):
                conv, bn = dotted(a.targets[0].target), dotted(b.targets[0].target)
                if conv and bn and conv.startswith("self.") and bn.startswith("self."):
                    self._pending[-1].append((a.value, conv, bn))

    def leave_ClassDef(self, node: cst.ClassDef, model: FileModel) -> None:
        pairs = self._pending.pop()
        if not pairs:
            return
        chained = _chained(node)
        for conv_call, conv, bn in pairs:
            if (conv, bn) in chained:
                self._flag(conv_call, model)


def _chained(cls: cst.ClassDef) -> set[tuple[str, str]]:
    """(conv, bn) attribute pairs that the class applies one right after the other."""
    out: set[tuple[str, str]] = set()

    class _Visit(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            outer = dotted(node.func)
            if outer and node.args and type(node.args[0].value) is cst.Call:
                inner = dotted(node.args[0].value.func)
                if inner:
                    out.add((inner, outer))

        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            lines = _statements(node)
            for first, second in zip(lines, lines[1:]):
                a, b = first.body[0], second.body[0]
                if type(a) is cst.Assign and len(a.targets) == 1 and type(a.value) is cst.Call \
                        and type(a.targets[0].target) is cst.Name:
                    var, inner = a.targets[0].target.value, dotted(a.value.func)
                    value = getattr(b, "value", None)
                    if inner and type(value) is cst.Call and value.args \
                            and type(value.args[0].value) is cst.Name and value.args[0].value.value == var:
                        outer = dotted(value.func)
                        if outer:
                            out.add((inner, outer))

    cls.visit(_Visit())
    return out
