from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class TolistInLoop(SyncRule):
    code = "PFL102"
    name = "tolist-in-loop"
    summary = "`.tolist()` on a tensor inside a loop copies it to the host and syncs every iteration"
    message = "`.tolist()` copies the tensor to the host and waits for the device every step"
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
Quiet on NumPy arrays and on batches still on the host.
""" + WHEN_REPORTED
