import libcst as cst

from perflint.model.program import FileModel

from perflint.rule import Rule

_JIT = {"torch.jit.script", "torch.jit.trace", "torch.jit.trace_module", "torch.jit.script_method"}


class TorchScript(Rule):
    code = "PFL405"
    default = False
    name = "torchscript"
    summary = "`torch.jit.script` / `torch.jit.trace`: TorchScript is deprecated in favour of `torch.compile`"
    message = "`{func}` is deprecated and does not fuse on the CPU by default; use `torch.compile` " \
              "(or `torch.export` to save a graph)"
    severity = "info"
    proof_metric = "ops"
    why = """
TorchScript is in maintenance mode (PyTorch 2.x warns "Please switch to `torch.compile` or
`torch.export`"). Its interpreter still dispatches every aten op one at a time, and its fusers are off
for the CPU by default, so a scripted model runs the same kernels as eager plus interpreter overhead.
`torch.compile` with Inductor generates fused kernels: element-wise chains and normalisations become one
kernel with one pass over memory, and only the matrix multiplies remain library calls.
"""
    example = """
model = torch.jit.script(model)
with torch.no_grad():
    out = [model(x) for x in batches]
"""
    instead = """
model = torch.compile(model)
with torch.no_grad():
    out = [model(x) for x in batches]
"""
    known_problems = """
Reported wherever TorchScript is used, including export scripts that need a `.pt` file for C++
(libtorch) deployment, where `torch.export` is the replacement but not a drop-in one; that is why it is
information, not a warning. Quiet in `test_*` functions, which check that a model still scripts. The
pair uses Inductor, which compiles C++ on the first run (about 10-15 s with a cold cache, about 1 s
warm).
"""

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        qual = model.call_name(node)
        if qual in _JIT and not (model.function is not None and model.function.name.value.startswith("test_")):
            self.report(model, node, self.message.format(func=qual))

    def visit_Decorator(self, node: cst.Decorator, model: FileModel) -> None:
        if type(node.decorator) is not cst.Call:
            qual = model.qualname(node.decorator)
            if qual in _JIT:
                self.report(model, node.decorator, self.message.format(func=qual))
