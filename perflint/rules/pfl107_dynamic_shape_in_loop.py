import libcst as cst

from perflint.context import Context, keyword, may_be_tensor, positional
from perflint.rule import Rule

_OPS = {"nonzero", "unique", "unique_consecutive", "masked_select", "argwhere", "repeat_interleave"}


class DynamicShapeInLoop(Rule):
    code = "PFL107"
    name = "dynamic-shape-in-loop"
    summary = "`nonzero`, boolean-mask indexing, `masked_select` or `unique` inside a loop sync to learn the output size"
    message = "`{op}` has a data-dependent output size: the host waits for the device every iteration"
    proof_metric = "syncs"
    why = """
The size of the result depends on the data, so the host cannot allocate the output or launch the next
kernel until the device has counted the elements and sent the count back: a hidden sync. The profiler
shows `aten::nonzero` (boolean indexing and `masked_select` run it internally).
"""
    example = """
for x in loader:
    pos = x[x > 0]
    total += pos.sum()
"""
    instead = """
for x in loader:
    total += torch.where(x > 0, x, 0).sum()   # same shape as x, no sync
"""
    known_problems = """
Boolean indexing is recognised when the index is a comparison of a tensor (`x[x > 0]`). Passing
`output_size=` to `repeat_interleave`, or `size=` to `nonzero_static`, avoids the sync and stays quiet.
Assigning a value that is not known to be a tensor through a mask (`x[x > 0] = 0`) is quiet: on CUDA
PyTorch keeps the scalar on the host and runs `masked_fill_`, with no size to learn (on the CPU the
recorder still sees a host read of the scalar).
"""
    valid = ("import torch\nfor x in xs:\n    y = torch.where(x > 0, x, 0)\n",
             "import torch\nidx = torch.nonzero(mask)\n",
             "import torch\nfor r in rs:\n    y = torch.repeat_interleave(x, r, output_size=8)\n",
             "import torch\nfor i in range(3):\n    x = torch.randn(4)\n    x[x > 0] = 0.0\n")
    invalid = ("import torch\nfor x in xs:\n    idx = torch.nonzero(x)  # expect: PFL107\n",
               "import torch\nfor i in range(3):\n    x = torch.randn(4)\n    p = x[x > 0]  # expect: PFL107\n",
               "for x in loader:\n    u = x.unique()  # expect: PFL107\n")

    def visit_Module(self, node: cst.Module, ctx: Context) -> None:
        self.scalar_fills: set[cst.Subscript] = set()

    def visit_Assign(self, node: cst.Assign, ctx: Context) -> None:
        if not ctx.is_tensor(node.value):  # `x[mask] = 0` is a masked_fill_: no size to learn
            self.scalar_fills.update(t.target for t in node.targets if isinstance(t.target, cst.Subscript))

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        if not ctx.in_hot_loop or ctx.in_compiled:
            return
        qual = ctx.call_name(node)
        if qual is not None and qual.startswith("torch.") and qual[6:] in _OPS:
            op = qual[6:]
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in _OPS \
                and qual is None and may_be_tensor(ctx, node.func.value):
            op = node.func.attr.value
        elif qual == "torch.where" and len(node.args) == 1:
            op = "torch.where(cond)"
        else:
            return
        if op == "repeat_interleave" and (keyword(node, "output_size") or positional(node, 3)):
            return
        self.report(ctx, node, self.message.format(op=op))

    def visit_Subscript(self, node: cst.Subscript, ctx: Context) -> None:
        if not ctx.in_hot_loop or ctx.in_compiled or len(node.slice) != 1 or node in self.scalar_fills:
            return
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Comparison) \
                and ctx.is_tensor(index.value) and ctx.is_tensor(node.value):
            self.report(ctx, node, self.message.format(op="boolean-mask indexing"))
