from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


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
""" + WHEN_REPORTED
