import libcst as cst

from perflint.model.names import dotted
from perflint.model.program import FileModel
from perflint.model.values import MODULE
from perflint.rules.common import module_call, trains

from perflint.rule import Rule

_COMPILERS = {"torch.compile", "torch.jit.script", "torch.jit.trace", "torch._dynamo.optimize",
              "torch.export.export", "torch.compiler.compile"}


class ModuleNotCompiled(Rule):
    code = "PFL401"
    name = "module-not-compiled"
    summary = "a model built in this file runs in a training or inference loop and is never `torch.compile`d"
    message = "`{name}` runs in a loop op by op; `torch.compile({name})` would fuse its element-wise work"
    severity = "info"
    default = False
    proof_metric = "ops"
    why = """
In eager mode every op is a separate kernel launch with its own pass over memory: an activation, a
normalisation and a residual add after a matmul each read and write the whole activation. Compiled with
Inductor, chains of element-wise and reduction ops become one generated kernel, and the Python and
dispatcher overhead per op disappears; on a GPU CUDA graphs (`mode="reduce-overhead"`) remove the launch
cost as well.
"""
    example = """
model = Net()
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
"""
    instead = """
model = torch.compile(Net())
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
"""
    known_problems = """
Advice, off by default: compiling costs seconds to minutes up front, some models graph-break or do not
compile at all, and short scripts do not earn the cost back. It reports a module only when this file
creates it (`model = Net()`, `nn.Sequential(...)`) and calls it in a loop that trains (`.backward()` or
an optimizer step) or runs under `no_grad`; and it stays quiet for the whole file as soon as the file
calls `torch.compile`, `torch.jit.script`/`trace`, `torch.export` or any `.compile(...)` method (often
behind a command-line flag). The pair uses Inductor, which compiles C++ on its first run (about 10-15 s
with a cold cache, about 1 s warm): the eager backend does not fuse, so it would prove nothing.
"""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        self.compiles = False
        self.created: set[str] = set()
        self.calls: dict[str, cst.Call] = {}

    def visit_Assign(self, node: cst.Assign, model: FileModel) -> None:
        if isinstance(node.value, cst.Call) and model.kind(node.value) == MODULE:
            for t in node.targets:
                name = dotted(t.target)
                if name:
                    self.created.add(name)

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        qual = model.call_name(node)
        if qual in _COMPILERS or (isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile"
                                  and qual is None):
            self.compiles = True
            return
        name = dotted(node.func)
        if name is None or name in self.calls or name not in self.created or not model.in_loop:
            return
        if not model.known(name) or module_call(model, node) is None or not (model.in_no_grad or trains(model, model.loops[0])):
            return
        self.calls[name] = node

    def finish(self, model: FileModel) -> None:
        if not self.compiles:
            for name, call in self.calls.items():
                self.report(model, call, self.message.format(name=name))
