from perflint.rules.syncs.sites import SyncRule


class TensorAsCondition(SyncRule):
    code = "PFL105"
    name = "tensor-as-condition"
    summary = "a tensor used as a condition (`if t`, `while loss > eps`, `assert`) inside a loop syncs every iteration"
    message = "this condition reads a device tensor on the host: a sync every step"
    why = """
Python needs a real `True`/`False` to branch, so `if t:` calls `bool(t)`, which runs
`aten::is_nonzero > aten::item > aten::_local_scalar_dense`: a device-to-host copy and a wait for all
queued work. `while loss > eps:` pays it on every iteration of the loop it controls.
"""
    example = """
for x in loader:
    loss = step(x)
    if torch.isnan(loss):
        raise FloatingPointError
"""
    instead = """
bad = torch.zeros((), dtype=torch.bool, device=device)
for x in loader:
    loss = step(x)
    bad |= torch.isnan(loss)   # stays on the device
if bad:                        # one sync
    raise FloatingPointError
"""
    known_problems = """
Reports only conditions it knows are tensors, and only inside a loop (a step loop, or a loop of a per-step
function): a data-dependent branch in a `forward` is often on an optional input's path, which a static
reading cannot tell from the default one. `if t is None` and `if len(t)` are fine. A `while` condition
runs every iteration of its own loop.
Like every sync rule, it reports only where the wait is real and costs every step: the code runs on the
per-step path (a loop over a data loader or over training steps, a module's `forward`, or a function
this file calls from them; not a loop over epochs, not once every k steps under `if step % k == 0:`),
the value is on the device (followed back to `.to(device)`, `.cuda()`, `device=`, a model's output; a
tensor of unknown device counts only in a project that moves work to an accelerator), and it is the
first wait of its step (after another sync or a `synchronize()` with no device work queued in between,
the device is already idle). Quiet in test files and in compiled code (PFL402 covers graph breaks).
"""
