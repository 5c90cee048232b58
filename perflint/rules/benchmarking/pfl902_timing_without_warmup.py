import libcst as cst

from perflint.model.program import FileModel
from perflint.rules.benchmarking.timed_regions import TimedRegion, TimedRegionRule



class TimingWithoutWarmup(TimedRegionRule):
    code = "PFL902"
    in_tests = True
    default = False
    name = "timing-without-warmup"
    summary = "a timed region runs torch work that the function never ran before: the first call's one-time costs are timed"
    message = ("the timed region starts with the first call of this work: run it once or a few times before "
               "starting the clock, or use `torch.utils.benchmark.Timer`")
    severity = "info"
    needs_cuda = False
    proof_metric = ""
    proof_note = "a correctness rule: the fixed timing runs warm-up iterations first, so it does more work, not less; it makes the number true."
    why = """
The first call of a model or op pays one-time costs that later calls do not: CUDA context and cuBLAS /
cuDNN handle creation, cuDNN autotuning with `cudnn.benchmark`, the caching allocator's first
`cudaMalloc`s, lazy module initialisation, oneDNN primitive creation on the CPU, and, under
`torch.compile`, the compilation itself (seconds). A timing that includes the first call reports these
as if every call paid them. `torch.utils.benchmark.Timer` runs warm-up calls and picks the number of
repeats for you.

This rule is about a correct measurement, not a faster program: the fixed version runs more work (the
warm-up), so its reference pair has no count that improves (`proof_metric` is empty).
"""
    example = """
t0 = time.perf_counter()
for _ in range(10):
    y = model(x)
torch.cuda.synchronize()
print((time.perf_counter() - t0) / 10)
"""
    instead = """
for _ in range(3):
    model(x)                        # warm-up: not timed
torch.cuda.synchronize()
t0 = time.perf_counter()
...

# or: torch.utils.benchmark.Timer("model(x)", globals={"model": model, "x": x}).blocked_autorange()
"""
    known_problems = """
A region (between two clock reads at the same loop depth, see PFL901) is reported at its first read
when it runs torch work, is not itself inside a loop (per-iteration timings in a training loop are
logging), runs no loop over data (total run time), calls nothing that the function called before the
region, does not train (a training step's time is a log line, and the first step is one of many),
and the function mentions no name containing "warm" (`warmup_iters`, `for _ in range(warmup)`). Work
hidden in functions of your own is not seen; nor is a warm-up in another function.
"""

    def closed(self, end: cst.Call, region: TimedRegion, model: FileModel) -> cst.CSTNode | None:
        if region.loops or region.trains or region.work & region.before or _mentions_warm_up(model):
            return None
        return region.start


def _mentions_warm_up(model: FileModel) -> bool:
    """Whether the function around the current node mentions a warm-up (`warmup_iters`, `_warm_up()`)."""
    scope = model.function or model.module
    key = ("mentions-warm-up", scope)
    found = model._memo.get(key)
    if found is None:
        found = model._memo[key] = "warm" in model.module.code_for_node(scope).lower()
    return found
