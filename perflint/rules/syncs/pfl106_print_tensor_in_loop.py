from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class PrintTensorInLoop(SyncRule):
    code = "PFL106"
    # Off by default: the tensors it prints are read on the host by design (see known_problems).
    default = False
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

Off by default. In the blind reviews of repositories it was not tuned on, 4 of its 16 findings were judged
right (25%): most prints of tensors in a loop are the output a prediction script exists to write (class
counts, top-5 probabilities per image), come after a sync the step has already paid (a `.tolist()` on
the line before), or sit in a branch that rarely runs (a warning, an evaluation every 500 steps, a
branch for PyTorch 0.3). The labelled repositories have no instance it alone finds. Select it
(`--select PFL106`) to find a per-step print in a training loop.
""" + WHEN_REPORTED
