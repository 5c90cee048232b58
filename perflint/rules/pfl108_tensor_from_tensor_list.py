import libcst as cst

from perflint.context import Context
from perflint.rule import Rule


class TensorFromTensorList(Rule):
    code = "PFL108"
    name = "tensor-from-tensor-list"
    summary = "`torch.tensor([t1, t2, ...])` of tensors reads each element on the host: one sync per element"
    message = "`torch.tensor` of a list of tensors syncs once per element; use `torch.stack`"
    proof_metric = "syncs"
    why = """
`torch.tensor` builds a new tensor from Python data, so each element that is a tensor is converted
with `.item()`: one device-to-host copy and sync per element, and the result loses autograd history.
`torch.stack` keeps everything on the device in one kernel.
"""
    example = """
losses = [criterion(model(x), y) for x, y in batches]
mean = torch.tensor(losses).mean()
"""
    instead = """
losses = [criterion(model(x), y) for x, y in batches]
mean = torch.stack(losses).mean()
"""
    known_problems = "Reports only lists whose elements it knows are tensors (or a comprehension of tensors)."
    valid = ("import torch\nt = torch.tensor([1.0, 2.0])\n", "import torch\nt = torch.tensor(values)\n")
    invalid = ("import torch\na = torch.ones(2)\nb = torch.ones(2)\nt = torch.tensor([a.sum(), b.sum()])  # expect: PFL108\n",
               "import torch\nt = torch.tensor([model(x) for x in xs])  # expect: PFL108\n")

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        if not node.args or ctx.call_name(node) not in ("torch.tensor", "torch.as_tensor", "torch.Tensor"):
            return
        data = node.args[0].value
        if isinstance(data, (cst.List, cst.Tuple)):
            tensors = any(ctx.is_tensor(e.value) for e in data.elements)
        elif isinstance(data, (cst.ListComp, cst.GeneratorExp)):
            tensors = ctx.is_tensor(data.elt)
        else:
            return
        if tensors:
            self.report(ctx, node)
