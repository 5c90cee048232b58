from perflint.rules.syncs.sites import WHEN_REPORTED, SyncRule


class SynchronizeInLoop(SyncRule):
    code = "PFL109"
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
Quiet when the loop or function also reads a clock (`time.perf_counter()`, `torch.cuda.Event`): there the
sync is what makes the timing right (see PFL901). Quiet in retry loops, whose body is a `try:` statement
(a batch-size search that frees the cache after an out-of-memory error). Such a synchronize still counts
as the step's first wait for the other sync rules.
""" + WHEN_REPORTED
