from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class HostCopyInLoop(SyncRule):
    code = "PFL103"
    # Off by default: below the precision bar on real code (see known_problems).
    default = False
    name = "host-copy-in-loop"
    summary = "`.cpu()`, `.numpy()` or `.to('cpu')` inside a loop is a blocking device-to-host copy per iteration"
    message = "`.{what}()` is a blocking device-to-host copy every step"
    why = """
A device-to-host copy into ordinary (pageable) memory blocks the host until the copy, and every kernel
queued before it, is done. Inside a loop this serialises CPU and GPU once per iteration.
"""
    example = """
for x in loader:
    out = model(x)
    outputs.append(out.cpu().numpy())
"""
    instead = """
outs = [model(x) for x in loader]          # stays on the device
outputs = torch.cat(outs).cpu().numpy()    # one copy
"""
    known_problems = """
Off by default. On the accuracy corpus's judged findings (labelled and hold-out repositories, judged by hand
or in blind reviews) 29 of 40 were right (72%), below the 80% a default rule needs: most copies to the host in
a loop are what the step exists to produce (predictions decoded, scored or saved), or come after a wait the
step has already paid. The labelled repositories have no sync instance it alone finds (`.item()` and truth-
value tests report them), so turning it off costs no measured recall. Select it (`--select PFL103`) to see
every such read.

Quiet for `.to(...)` that does not name the CPU, on modules (`model.cpu()`), on numpy values, and on
tensors already on the host. A bare `.numpy()` is quiet: it raises on a device tensor, so code that runs
calls it on a host tensor, where it is free; `.numpy(force=True)` is reported. Loops over a model's
tensors (`state_dict().items()`, `parameters()`) are not steps: saving a checkpoint needs the copy.
""" + WHEN_REPORTED
