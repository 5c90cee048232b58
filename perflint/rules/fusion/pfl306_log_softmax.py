import libcst as cst

from perflint.model.names import method_name, one_line
from perflint.model.values import NDARRAY

from perflint.rule import Rule

_SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}


class LogSoftmax(Rule):
    code = "PFL306"
    call_names = frozenset({"log"})
    name = "log-softmax"
    summary = "`log(softmax(x))` in two ops: use `log_softmax`, one fused op that is also numerically stable"
    message = "`log(softmax(...))` runs two ops and underflows to -inf for small probabilities; use `log_softmax`"
    fix_safety = "safe"
    proof_metric = "ops"
    why = """
`torch.log(torch.softmax(x, dim))` launches two kernels and writes the probabilities to memory in
between (one extra read and write of the whole tensor). Worse, softmax rounds probabilities below about
1e-38 (float32) or 6e-8 (float16) to 0, and `log(0)` is `-inf`, which turns into NaN losses and
gradients. `log_softmax` computes `x - logsumexp(x)` in one kernel and never underflows.
"""
    example = """
log_probs = torch.log(F.softmax(logits, dim=-1))
loss = -(log_probs * targets).sum(-1).mean()
"""
    instead = """
log_probs = F.log_softmax(logits, dim=-1)
loss = -(log_probs * targets).sum(-1).mean()
"""
    known_problems = """
Matches `torch.log(<softmax>)` and `<softmax>.log()` where `<softmax>` is `torch.softmax`, `F.softmax`,
`torch.special.softmax` or a `.softmax()` method call, with any arguments (the same `dim` and `dtype`
mean the same thing for `log_softmax`). `log(softmax(x) + eps)` is not matched: the epsilon changes the
values. The fix renames the call and drops the `log`; it is not offered when the softmax call spans
several lines (the rewrite would lose their indentation) or when `softmax` was imported bare (`from
torch.nn.functional import softmax`), since `log_softmax` may not be imported. The fixed values differ
from the original only where the original lost precision.
"""

    def visit_Call(self, node: cst.Call, model) -> None:
        if method_name(node) == "log" and not node.args:
            inner = node.func.value
        elif model.is_torch(node.func, "torch.log") and len(node.args) == 1 and node.args[0].keyword is None:
            inner = node.args[0].value
        else:
            return
        if type(inner) is not cst.Call:
            return
        if model.call_name(inner) in _SOFTMAX:
            pass
        elif method_name(inner) == "softmax" and model.qualname(inner.func) is None \
                and model.kind(inner.func.value) != NDARRAY:
            pass
        else:
            return
        replacement = None
        if type(inner.func) is cst.Attribute and one_line(inner):
            replacement = inner.with_changes(func=inner.func.with_changes(attr=cst.Name("log_softmax")))
        self.report(model, node, replacement=replacement)
