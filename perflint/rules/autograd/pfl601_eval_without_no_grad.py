import libcst as cst

from perflint.model.program import FileModel
from perflint.rules.autograd.eval_loops import EvalLoopRule


_GRAD_SWITCHES = ("set_grad_enabled", "no_grad", "inference_mode", "requires_grad_", "enable_grad")


class EvalWithoutNoGrad(EvalLoopRule):
    code = "PFL601"
    default = False  # 1 of 4 findings right on real code: one-off predictions and plotting helpers
    name = "eval-without-no-grad"
    summary = "an evaluation loop calls the model without `torch.no_grad()` / `torch.inference_mode()`"
    message = "this evaluation loop records the autograd graph it never uses; wrap it in `torch.inference_mode()`"
    severity = "warning"
    proof_metric = "peak_memory"
    requires_no_grad = False
    why = """
With autograd on, every op in the forward pass records a graph node and keeps the tensors its backward
would need (activations, masks, indices) alive until the output is dropped: evaluation then holds the
activation memory of training (which limits the batch size it can use) and pays the bookkeeping on every
op. `torch.inference_mode()` (or `torch.no_grad()`) frees each intermediate as soon as the next layer
has read it.
"""
    example = """
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum()
    return correct
"""
    instead = """
@torch.inference_mode()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum()
    return correct
"""
    known_problems = """
Looks only at loops in functions named like evaluation (`evaluate`, `validate`, `val_epoch`, `test`,
`predict`, `infer`...) or that call `.eval()`, and only at calls of modules (a name bound to a module or
named like `model`/`net`; losses and metrics are left out). Quiet when the function trains (`.backward()`,
an optimizer step), mentions `set_grad_enabled`, `no_grad`, `inference_mode`, `enable_grad` or
`requires_grad_` (the switch may be conditional), is named `test_*` (a unit test), or is called under
`no_grad` somewhere in the same file; and when the file turns grad off globally in `main`. It cannot see a
caller in another file that already disabled grad.
"""

    def keep(self, func: cst.FunctionDef, model: FileModel) -> bool:
        calls = model.calls_in(func)
        if any(c.rsplit(".", 1)[-1] in _GRAD_SWITCHES for c in calls):
            return False
        return not self.no_grad_everywhere and func.name.value not in self.called_without_grad
