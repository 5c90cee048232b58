from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class SynchronizeInLoop(SyncRule):
    code = "PFL109"
    # Off by default: below the precision bar on real code (see known_problems).
    default = False
    name = "synchronize-in-loop"
    summary = "`torch.cuda.synchronize()` or `empty_cache()` every iteration, outside timing code"
    message = "`{what}` every step stalls the host until the device drains; keep it out of training code"
    why = """
`torch.cuda.synchronize()` blocks the host until all queued device work is done, so the CPU can no longer
run ahead and queue the next kernels: the GPU idles during every launch gap. `empty_cache()` also
synchronises and returns cached blocks to the driver, which the next iteration must allocate again
with `cudaMalloc` (itself synchronising).
"""
    example = """
for x, y in loader:
    train_step(x, y)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
"""
    instead = """
for x, y in loader:
    train_step(x, y)
# synchronize only where a measurement needs it, e.g. right before reading a clock
"""
    known_problems = """
Off by default. On the accuracy corpus's judged findings (labelled and hold-out repositories, judged by hand
or in blind reviews) 18 of 24 were right (75%), below the 80% a default rule needs: an explicit
`synchronize()` is usually there on purpose: a workaround for a race, a CPU optimizer that needs the gradients
in host memory, a path only one parallelism setting takes. The labelled repositories have no sync instance it
alone finds (`.item()` and truth-value tests report them), so turning it off costs no measured recall. Select
it (`--select PFL109`) to see every such read.

Quiet when the loop or function also reads a clock (`time.perf_counter()`, `torch.cuda.Event`): there the
sync is what makes the timing right (see PFL901). Quiet in retry loops, whose body is a `try:` statement
(a batch-size search that frees the cache after an out-of-memory error). Such a synchronize still counts
as the step's first wait for the other sync rules.
""" + WHEN_REPORTED
