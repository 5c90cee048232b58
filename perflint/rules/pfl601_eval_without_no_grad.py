import libcst as cst

from perflint.context import Context
from perflint.rules._base import EvalLoopRule

_GRAD_SWITCHES = ("set_grad_enabled", "no_grad", "inference_mode", "requires_grad_", "enable_grad")


class EvalWithoutNoGrad(EvalLoopRule):
    code = "PFL601"
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
    valid = (
        "import torch\ndef evaluate(model, loader):\n    model.eval()\n    with torch.no_grad():\n"
        "        for x in loader:\n            model(x)\n",
        "import torch\n@torch.inference_mode()\ndef predict(model, xs):\n    return [model(x) for x in xs]\n",
        "def validate(model, loader, opt):\n    for x in loader:\n        model(x).sum().backward()\n",
        "import torch\ndef validate(model, loader):\n    for x in loader:\n        model(x)\n"
        "def main():\n    with torch.no_grad():\n        validate(net, loader)\n",
        "def test_forward(model):\n    for x in xs:\n        model(x)\n",
        "import torch\ndef evaluate(model, loader, train):\n    with torch.set_grad_enabled(train):\n"
        "        for x in loader:\n            model(x)\n",
    )
    invalid = (
        "def evaluate(model, loader):\n    model.eval()\n    out = []\n    for x, y in loader:\n"
        "        out.append(model(x))  # expect: PFL601\n    return out\n",
        "def run(net, loader):\n    net.eval()\n    for x in loader:\n        y = net(x)  # expect: PFL601\n",
    )

    def keep(self, func: cst.FunctionDef, ctx: Context) -> bool:
        calls = ctx.calls_in(func)
        if any(c.rsplit(".", 1)[-1] in _GRAD_SWITCHES for c in calls):
            return False
        return not self.no_grad_everywhere and func.name.value not in self.called_without_grad
