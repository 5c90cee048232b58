from perflint.rules._base import TensorMethodInHotLoop


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
    known_problems = "Quiet on numpy arrays it can see, outside loops and in `if step % k == 0:` blocks."
    valid = ("import numpy as np\nfor r in rows:\n    a = np.asarray(r)\n    out.append(a.tolist())\n",
             "ids = preds.tolist()\n")
    invalid = ("for b in loader:\n    out.extend(model(b).argmax(-1).tolist())  # expect: PFL102\n",)
