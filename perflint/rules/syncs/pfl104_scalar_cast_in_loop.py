from perflint.rules.syncs.sites import SyncRule


class ScalarCastInLoop(SyncRule):
    code = "PFL104"
    name = "scalar-cast-in-loop"
    summary = "`float(t)`, `int(t)` or `bool(t)` of a tensor inside a loop syncs every iteration"
    message = "`{what}()` of a device tensor waits for the device every step"
    why = """
Converting a tensor to a Python number is `.item()` in disguise: the value must come back to the host,
so the host waits for the device. `bool(t)` goes through `aten::is_nonzero`.
"""
    example = """
for x, y in loader:
    loss = criterion(model(x), y)
    running += float(loss)
"""
    instead = """
running = torch.zeros((), device=device)
for x, y in loader:
    loss = criterion(model(x), y)
    running += loss.detach()
"""
    known_problems = """
Reports only arguments it knows are tensors, to stay quiet on ordinary numbers.
Like every sync rule, it reports only where the wait is real and costs every step: the code runs on the
per-step path (a loop over a data loader or over training steps, a module's `forward`, or a function
this file calls from them; not a loop over epochs, not once every k steps under `if step % k == 0:`),
the value is on the device (followed back to `.to(device)`, `.cuda()`, `device=`, a model's output; a
tensor of unknown device counts only in a project that moves work to an accelerator), and it is the
first wait of its step (after another sync or a `synchronize()` with no device work queued in between,
the device is already idle). Quiet in test files and in compiled code (PFL402 covers graph breaks).
"""
