import libcst as cst

from perflint.model.names import keyword
from perflint.model.program import FileModel

from perflint.rule import Rule

_OPTIMIZERS = {"SGD", "Adam", "AdamW", "Adamax", "Adadelta", "Adagrad", "ASGD", "NAdam", "RAdam", "RMSprop",
               "Rprop", "Adafactor"}


class OptimizerWithoutForeach(Rule):
    code = "PFL607"
    call_names = frozenset(_OPTIMIZERS)
    name = "optimizer-without-foreach"
    summary = "a torch.optim optimizer is built with `foreach=False`: one small kernel per parameter per update"
    message = "`foreach=False` updates parameters one tensor at a time; drop it (or use `fused=True` on a GPU)"
    severity = "warning"
    fix_safety = "unsafe"
    proof_metric = "ops"
    why = """
The for-loop implementation of an optimizer step launches a few small kernels for every parameter tensor
(for Adam about a dozen), so a model with hundreds of tensors launches thousands of kernels per step and
the GPU waits on the launch overhead. The `foreach` implementation, PyTorch's default on CUDA, groups all
parameters into a handful of multi-tensor kernels; `fused=True` does the whole update in one kernel per
parameter group.
"""
    example = """
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
"""
    instead = """
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)              # foreach on CUDA by default
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)  # on a GPU: one fused kernel
"""
    known_problems = """
Reports only an explicit `foreach=False` (a literal), and not beside a `fused=` that may be on: the fused
implementation then runs, and `foreach` has no effect (blind review 52 judged such a finding wrong). On the
CPU PyTorch's default is already the for-loop implementation, so leaving the argument out is not reported. The
reference pair passes `foreach=True` to show on the CPU what the CUDA default does (one `_foreach_*` op
instead of one op per parameter). The fix (dropping the argument) is unsafe: the foreach path keeps temporary
copies of all gradients, so peak memory grows by about one gradient's worth, which can matter for a model that
barely fits.
"""

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        qual = model.call_name(node)
        if qual is None or not qual.startswith("torch.optim.") or qual.rsplit(".", 1)[1] not in _OPTIMIZERS:
            return
        arg, fused = keyword(node, "foreach"), keyword(node, "fused")
        if fused is not None and not (type(fused.value) is cst.Name and fused.value.value in ("False", "None")):
            return  # `fused=True` (or a setting of it) takes over: foreach does not apply then (blind review 52)
        if arg is not None and type(arg.value) is cst.Name and arg.value.value == "False":
            kept = [a for a in node.args if a is not arg]
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            self.report(model, node, replacement=node.with_changes(args=kept))
