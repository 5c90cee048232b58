from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


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
""" + WHEN_REPORTED
