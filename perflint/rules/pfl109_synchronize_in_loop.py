import libcst as cst

from perflint.context import Context
from perflint.rule import Rule

_WAITS = {"torch.cuda.synchronize", "torch.cuda.empty_cache", "torch.cuda.current_stream().synchronize"}
_CLOCKS = {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.perf_counter_ns",
           "time.time_ns", "torch.cuda.Event"}


class SynchronizeInLoop(Rule):
    code = "PFL109"
    name = "synchronize-in-loop"
    summary = "`torch.cuda.synchronize()` or `empty_cache()` every iteration, outside timing code"
    message = "`{func}` every iteration stalls the CPU until the GPU drains; drop it outside timing code"
    proof_metric = "syncs"
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
Quiet when the loop or function also reads a clock (`time.perf_counter()`, `torch.cuda.Event`): there
the sync is what makes the timing right (see PFL901). Quiet in retry loops, whose body is a
`try:` statement (a batch-size search that frees the cache after an out-of-memory error).
"""
    valid = ("import time, torch\nfor i in range(3):\n    t0 = time.perf_counter()\n    f()\n"
             "    torch.cuda.synchronize()\n    print(time.perf_counter() - t0)\n",
             "import torch\ntorch.cuda.synchronize()\n",
             "import torch\nwhile bs:\n    try:\n        torch.cuda.empty_cache()\n        run(bs)\n"
             "        break\n    except RuntimeError:\n        bs //= 2\n")
    invalid = ("import torch\nfor x in loader:\n    step(x)\n    torch.cuda.synchronize()  # expect: PFL109\n",)

    def visit_Call(self, node: cst.Call, ctx: Context) -> None:
        qual = ctx.call_name(node)
        if qual not in _WAITS or not ctx.in_hot_loop:
            return
        loop = ctx.loops[-1]
        body = getattr(getattr(loop, "body", None), "body", ())
        if any(isinstance(statement, cst.Try) for statement in body):
            return  # a retry loop (batch-size search after an out-of-memory error), not a hot loop
        scope = ctx.function or ctx.loops[0]
        if ctx.calls_in(scope) & _CLOCKS:
            return
        self.report(ctx, node, self.message.format(func=qual))
