from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class ScalarCastInLoop(SyncRule):
    code = "PFL104"
    # Off by default: below the precision bar on real code (see known_problems).
    default = False
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
Off by default. On the accuracy corpus's judged findings (labelled and hold-out repositories, judged by hand
or in blind reviews) 19 of 27 were right (70%), below the 80% a default rule needs: the values cast are often
already host data (a post-processing helper of another file returned NumPy), or read by design (a detection's
class to print or to write to a results file). The labelled repositories have no sync instance it alone finds
(`.item()` and truth-value tests report them), so turning it off costs no measured recall. Select it
(`--select PFL104`) to see every such read.

Reports only arguments it knows are tensors, to stay quiet on ordinary numbers.
""" + WHEN_REPORTED
