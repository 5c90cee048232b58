from perflint.rules.syncs.sites import SyncRule


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
Like every sync rule, it reports only where the wait is real and costs every step: the code runs on the
per-step path (a loop over a data loader or over training steps, a module's `forward`, or a function
this file calls from them; not a loop over epochs, not once every k steps under `if step % k == 0:`),
the value is on the device (followed back to `.to(device)`, `.cuda()`, `device=`, a model's output; a
tensor of unknown device counts only in a project that moves work to an accelerator), and it is the
first wait of its step (after another sync or a `synchronize()` with no device work queued in between,
the device is already idle). Quiet in test files and in compiled code (PFL402 covers graph breaks).
"""
