import libcst as cst

from perflint.rules._base import TensorMethodInHotLoop, not_per_batch


class TolistInLoop(TensorMethodInHotLoop):
    code = "PFL102"
    name = "tolist-in-loop"
    summary = "`.tolist()` on a tensor inside a loop copies it to the host and syncs every iteration"
    message = "`.{method}()` in a loop copies the tensor to the host and syncs every iteration"
    methods = frozenset({"tolist"})
    why = """
`.tolist()` needs every element on the host: a device-to-host copy that waits for all queued kernels,
then one Python object per element. On the CPU profiler it leaves almost no trace (no
`_local_scalar_dense`), so perflint's pytest plugin counts it at the Python level.
"""
    example = """
for batch in loader:
    preds = model(batch).argmax(-1)
    results.extend(preds.tolist())
"""
    instead = """
chunks = []
for batch in loader:
    chunks.append(model(batch).argmax(-1))
results = torch.cat(chunks).tolist()  # one copy at the end
"""
    known_problems = """
Quiet on numpy arrays it can see, outside loops, in `if step % k == 0:` blocks, and in loops that are
not steps over device data (`for epoch in ...`, a loop over `state_dict().items()` or `parameters()`,
or over data visibly built on the host, e.g. with `device="cpu"`). It cannot see where a loader's
tensors live: on CPU tensors (in tests, in data pipelines) `.tolist()` costs no sync.
"""
    valid = ("import numpy as np\nfor r in rows:\n    a = np.asarray(r)\n    out.append(a.tolist())\n",
             "ids = preds.tolist()\n",
             "import torch\ndpr = [x.tolist() for x in torch.linspace(0, 1, 12, device='cpu').split(depths)]\n")
    invalid = ("for b in loader:\n    out.extend(model(b).argmax(-1).tolist())  # expect: PFL102\n",)

    def applies(self, node: cst.Call, ctx) -> bool:
        return not not_per_batch(ctx.loops[-1])
