from perflint.rules.syncs.sites import SyncRule


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
Like every sync rule, it reports only where the wait is real and costs every step: the code runs on the
per-step path (a loop over a data loader or over training steps, a module's `forward`, or a function
this file calls from them; not a loop over epochs, not once every k steps under `if step % k == 0:`),
the value is on the device (followed back to `.to(device)`, `.cuda()`, `device=`, a model's output; a
tensor of unknown device counts only in a project that moves work to an accelerator), and it is the
first wait of its step (after another sync or a `synchronize()` with no device work queued in between,
the device is already idle). Quiet in test files and in compiled code (PFL402 covers graph breaks).
"""
