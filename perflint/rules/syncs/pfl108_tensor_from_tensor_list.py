from perflint.rules.syncs.sites import SyncRule


class TensorFromTensorList(SyncRule):
    code = "PFL108"
    name = "tensor-from-tensor-list"
    summary = "`torch.tensor([t1, t2, ...])` of tensors reads each element on the host: one sync per element"
    message = "`{what}` of a list of device tensors reads each one on the host; use `torch.stack`"
    why = """
`torch.tensor` builds a new tensor from Python data, so each element that is a tensor is converted
with `.item()`: one device-to-host copy and sync per element, and the result loses autograd history.
`torch.stack` keeps everything on the device in one kernel.
"""
    example = """
losses = [criterion(model(x), y) for x, y in batches]
mean = torch.tensor(losses).mean()
"""
    instead = """
losses = [criterion(model(x), y) for x, y in batches]
mean = torch.stack(losses).mean()
"""
    known_problems = """
Reports only lists whose elements it knows are tensors (or a comprehension of tensors).
Like every sync rule, it reports only where the wait is real and costs every step: the code runs on the
per-step path (a loop over a data loader or over training steps, a module's `forward`, or a function
this file calls from them; not a loop over epochs, not once every k steps under `if step % k == 0:`),
the value is on the device (followed back to `.to(device)`, `.cuda()`, `device=`, a model's output; a
tensor of unknown device counts only in a project that moves work to an accelerator), and it is the
first wait of its step (after another sync or a `synchronize()` with no device work queued in between,
the device is already idle). Quiet in test files and in compiled code (PFL402 covers graph breaks).
"""
