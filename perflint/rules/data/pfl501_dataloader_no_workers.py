import libcst as cst

from perflint.model.program import FileModel
from perflint.rules.common import trains
from perflint.rules.data.loaders import DataLoaderRule, workers_arg



class DataLoaderNoWorkers(DataLoaderRule):
    code = "PFL501"
    name = "dataloader-no-workers"
    summary = "a `DataLoader` in a training script loads batches in the training process (no `num_workers`)"
    message = "this DataLoader loads and collates every batch in the training process, between steps; " \
              "set `num_workers` (e.g. 4-8 per GPU)"
    severity = "info"
    default = False
    proof_metric = "ops"
    why = """
With `num_workers=0` the training process itself reads, decodes, augments and collates each batch,
while the GPU waits: loading and compute take turns instead of overlapping. Worker processes prepare the
next batches in parallel (up to `prefetch_factor` per worker) while the main process runs the step, so
the step only takes a finished batch off a queue. In the ResNet-50 training trace of
../shared/traces/kineto_tb_plugin/resnet50_num_workers_0 (V100, `num_workers=0`),
`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` takes 63-73 ms of every 164-181 ms
`ProfilerStep`: about 40% of each step, with the GPU waiting.
"""
    example = """
loader = DataLoader(dataset, batch_size=64, shuffle=True)
for x, y in loader:
    train_step(x, y)
"""
    instead = """
loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=8, persistent_workers=True)
for x, y in loader:
    train_step(x, y)
"""
    known_problems = """
Off by default: for tensors already in memory (a `TensorDataset`) loading in the main process is often
faster than sending batches between processes, and workers cost start-up time and memory. Reported only
in files that train (`.backward()` or an optimizer step somewhere), for a missing or literal `0`
`num_workers`. The measured count is the ops the training process dispatches itself: with workers the
indexing and collation (`aten::stack`) happen in the worker processes, which the profiler of the main
process does not see.
"""

    def finish(self, model: FileModel) -> None:
        if not self.loaders or not trains(model, model.module):
            return
        for call, _ in self.loaders:
            arg = workers_arg(call)
            if arg is None or type(arg.value) is cst.Integer and arg.value.evaluated_value == 0:
                self.report(model, call)
