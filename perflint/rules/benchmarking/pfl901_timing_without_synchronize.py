import libcst as cst

from perflint.model.names import keyword, positional
from perflint.model.program import FileModel
from perflint.rules.benchmarking.timed_regions import TIMEIT, TimedRegion, TimedRegionRule, syncs_host, torch_work




class TimingWithoutSynchronize(TimedRegionRule):
    code = "PFL901"
    in_tests = True
    default = False
    name = "timing-without-synchronize"
    summary = "a clock is read after CUDA work without `torch.cuda.synchronize()`: the time measures the launches, not the work"
    message = ("this clock read does not wait for the GPU: call `torch.cuda.synchronize()` before it, or time "
               "with `torch.utils.benchmark.Timer` or CUDA events")
    gpu_only = True
    proof_metric = ""
    proof_note = "a correctness rule: the fixed timing adds a synchronize, so it does more work, not less; it makes the number true."
    why = """
CUDA calls return as soon as the kernel is queued; the GPU runs it later. A host clock read right after
GPU work therefore measures how long Python took to queue the kernels (often microseconds), not how
long they ran, and the missing time shows up in whatever code next waits for the device. The
measurement is only right when the host waits before it reads the clock: `torch.cuda.synchronize()`,
or anything that copies a result to the host (`.item()`, `.cpu()`), or CUDA events
(`start.record(); ...; end.record(); torch.cuda.synchronize(); start.elapsed_time(end)`), or
`torch.utils.benchmark.Timer`, which synchronises for you.

This rule is about a correct measurement, not a faster program: the fixed version makes one more sync
per timed region. Its reference pair therefore has no count that improves (`proof_metric` is empty)
and, being GPU-only, is compared only for its result.
"""
    example = """
t0 = time.perf_counter()
for _ in range(100):
    y = model(x)
elapsed = time.perf_counter() - t0     # measures kernel launches only
"""
    instead = """
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(100):
    y = model(x)
torch.cuda.synchronize()                # wait for the queued work
elapsed = time.perf_counter() - t0

# or: torch.utils.benchmark.Timer("model(x)", globals={"model": model, "x": x}).blocked_autorange()
"""
    known_problems = """
Follows each function in source order: a region is the code between two reads of `time.time()`,
`time.perf_counter()`, `time.monotonic()` (or `timeit.default_timer`), both at the same loop depth; it
is reported when the region runs visible torch work (a model call, a torch op, `.backward()`, an
optimizer step) and nothing in it waits for the device (`synchronize()`, `.item()`, `.cpu()`,
`.tolist()`, `.numpy()`, `elapsed_time`). Quiet when the work is hidden in a function of your own
(`train(model)`), or when such a function is called after the work (`evaluate(model)` may end in
`.item()`), when the region spans a whole loop over data (total run time, where the unsynced
tail is negligible), and in files that never mention CUDA (CPU work is synchronous). A sync anywhere
in the region counts, even if more work follows it. `timeit.timeit(lambda: ...)` is checked when the
lambda runs torch work.
"""

    def on_call(self, node: cst.Call, model: FileModel, qual: str | None) -> None:
        super().on_call(node, model, qual)
        if qual in TIMEIT:
            arg = keyword(node, "stmt") or positional(node, 0)
            body = arg.value.body if arg is not None and type(arg.value) is cst.Lambda else None
            if type(body) is cst.Call and torch_work(model, body, model.call_name(body)) is not None \
                    and not syncs_host(model, body, model.call_name(body)):
                self.pending.append(node)

    def closed(self, end: cst.Call, region: TimedRegion, model: FileModel) -> cst.CSTNode | None:
        return None if region.synced or region.opaque else end
