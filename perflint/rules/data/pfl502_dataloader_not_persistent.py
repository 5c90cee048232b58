import libcst as cst

from perflint.edits import with_keyword
from perflint.model.names import dotted, keyword
from perflint.model.program import FileModel
from perflint.rules.data.loaders import DataLoaderRule, loop_source, workers_arg




class DataLoaderNotPersistent(DataLoaderRule):
    code = "PFL502"
    default = False
    name = "dataloader-not-persistent"
    summary = "a `DataLoader` with worker processes is iterated epoch after epoch without `persistent_workers=True`"
    message = "every epoch starts and stops this DataLoader's {n} worker processes; pass `persistent_workers=True`"
    severity = "warning"
    fix_safety = "unsafe"
    proof_metric = "ops"
    why = """
Without `persistent_workers`, every `for batch in loader` creates a new iterator: it forks (or spawns)
`num_workers` processes, each re-imports or copies the dataset and runs `worker_init_fn`, and the first
batches of the epoch wait for that start-up while the accelerator idles; at the end of the epoch all
workers are shut down again. With `persistent_workers=True` the same workers serve every epoch and
start prefetching the next epoch immediately.
"""
    example = """
loader = DataLoader(dataset, batch_size=64, num_workers=8)
for epoch in range(epochs):
    for x, y in loader:
        train_step(x, y)
"""
    instead = """
loader = DataLoader(dataset, batch_size=64, num_workers=8, persistent_workers=True)
for epoch in range(epochs):
    for x, y in loader:
        train_step(x, y)
"""
    known_problems = """
Reported when the loader, bound to a name, is iterated in a loop nested in another loop or passed to a
call made inside a loop (an epoch loop calling `train(loader)`), and `num_workers` is present and not a
literal `0`. The fix is offered only for a literal `num_workers > 0` and is unsafe: persistent workers keep
their copy of the dataset, so changes the main process makes to the dataset between epochs (curriculum,
resampling, `dataset.set_epoch(...)`) no longer reach them; `sampler.set_epoch` still works. The measured
count is the main process's per-epoch iterator set-up (a fresh base seed is drawn for every new
iterator); the process start-ups themselves, the real cost, happen outside the profiler's view.
"""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        super().visit_Module(node, model)
        self.epoch_used: set[str] = set()

    def visit_For(self, node: cst.For, model: FileModel) -> None:
        name = loop_source(model, node.iter)
        if name is not None and model.in_loop:
            self.epoch_used.add(name)

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        super().visit_Call(node, model)
        if model.in_loop:
            for arg in node.args:
                name = dotted(arg.value)
                if name is not None:
                    self.epoch_used.add(name)

    def finish(self, model: FileModel) -> None:
        for call, name in self.loaders:
            arg = workers_arg(call)
            if name is None or name not in self.epoch_used or arg is None or keyword(call, "persistent_workers"):
                continue
            literal = type(arg.value) is cst.Integer
            if literal and arg.value.evaluated_value == 0:
                continue
            n = arg.value.value if literal else "`" + model.module.code_for_node(arg.value) + "`"
            replacement = None
            if literal:
                replacement = with_keyword(call, "persistent_workers", cst.Name("True"))
            self.report(model, call, self.message.format(n=n), replacement=replacement)
