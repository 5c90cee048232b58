from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


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
""" + WHEN_REPORTED
