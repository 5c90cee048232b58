from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class DynamicShapeInLoop(SyncRule):
    code = "PFL107"
    # Off by default: most data-dependent shapes are needed by design (see known_problems).
    default = False
    name = "dynamic-shape-in-loop"
    summary = "`nonzero`, boolean-mask indexing, `masked_select` or `unique` inside a loop sync to learn the output size"
    message = "`{what}` has a data-dependent output size: the host waits for the device every step"
    why = """
The size of the result depends on the data, so the host cannot allocate the output or launch the next
kernel until the device has counted the elements and sent the count back: a hidden sync. The profiler
shows `aten::nonzero` (boolean indexing and `masked_select` run it internally).
"""
    example = """
for x in loader:
    pos = x[x > 0]
    total += pos.sum()
"""
    instead = """
for x in loader:
    total += torch.where(x > 0, x, 0).sum()   # same shape as x, no sync
"""
    known_problems = """
Boolean indexing is recognised when the index is a comparison of a tensor (`x[x > 0]`). Passing
`output_size=` to `repeat_interleave`, or `size=` to `nonzero_static`, avoids the sync and stays quiet.
Assigning a value that is not known to be a tensor through a mask (`x[x > 0] = 0`) is quiet: on CUDA
PyTorch keeps the scalar on the host and runs `masked_fill_`, with no size to learn (on the CPU the
recorder still sees a host read of the scalar).

Off by default. In the blind reviews of repositories it was not tuned on, 14 of its 35 findings were
judged right (40%): most data-dependent sizes are the algorithm itself (non-maximum suppression, the
instances a detector keeps, the pixels a loss samples), with no fix at that line short of a redesign
around fixed-size masks, and others follow a sync the step has already paid or sit behind an option
that is off by default. The labelled repositories have no instance it alone finds. Select it
(`--select PFL107`) to look for syncs in a training step whose shapes could be fixed.
""" + WHEN_REPORTED
