from perflint.rules.syncs.sites import SyncRule


class PrintTensorInLoop(SyncRule):
    code = "PFL106"
    name = "print-tensor-in-loop"
    summary = "printing or formatting a tensor inside a loop copies it to the host and syncs every iteration"
    message = "printing or formatting a device tensor copies it to the host and waits for the device every step"
    why = """
`print(t)`, `f"{t}"`, `str(t)` and `"...".format(t)` need the tensor's values on the host, so each one
is a device-to-host copy plus a wait for all queued kernels; every element is then formatted in Python.
"""
    example = """
for step, (x, y) in enumerate(loader):
    loss = train_step(x, y)
    print(f"step {step} loss {loss}")
"""
    instead = """
for step, (x, y) in enumerate(loader):
    loss = train_step(x, y)
    if step % 100 == 0:              # log every k steps
        print(f"step {step} loss {loss.item():.4f}")
"""
    known_problems = """
Covers `print(t)`, `str(t)`, `repr(t)`, `"...".format(t)` and f-strings of tensors.
Like every sync rule, it reports only where the wait is real and costs every step: the code runs on the
per-step path (a loop over a data loader or over training steps, a module's `forward`, or a function
this file calls from them; not a loop over epochs, not once every k steps under `if step % k == 0:`),
the value is on the device (followed back to `.to(device)`, `.cuda()`, `device=`, a model's output; a
tensor of unknown device counts only in a project that moves work to an accelerator), and it is the
first wait of its step (after another sync or a `synchronize()` with no device work queued in between,
the device is already idle). Quiet in test files and in compiled code (PFL402 covers graph breaks).
"""
