import libcst as cst

from perflint.model.names import dotted, keyword
from perflint.model.program import FileModel
from perflint.model.values import LOADER
from perflint.rules.data.loaders import DataLoaderRule, loop_source
from perflint.rules.transfers.moves import device_move
from perflint.tree import find_all



class DataLoaderNoPinMemory(DataLoaderRule):
    code = "PFL503"
    name = "dataloader-no-pin-memory"
    summary = "batches from a `DataLoader` without `pin_memory=True` are copied to the GPU in the loop"
    message = "batches from this DataLoader go to the GPU from pageable memory; pass `pin_memory=True` " \
              "(and copy with `non_blocking=True`)"
    severity = "warning"
    default = False
    gpu_only = True
    fix_safety = "safe"
    proof_metric = "transfers"
    why = """
A host-to-device copy from ordinary (pageable) memory is staged by the driver through a pinned bounce
buffer and is synchronous with respect to the host: `Memcpy HtoD (Pageable -> Device)` in a trace, with
the CPU blocked for the whole copy. With `pin_memory=True` the loader's pin thread places each batch in
page-locked memory, the DMA engine reads it directly at full bus speed, and `.to(device,
non_blocking=True)` returns at once so the copy overlaps with compute. In the ResNet-50 training trace
of ../shared/traces/kineto_tb_plugin/resnet50_num_workers_0 (V100, loader without pinning), each
step's 19,267,584-byte input batch is a `Memcpy HtoD (Pageable -> Device)` at 9.9 GB/s, and the
`cudaMemcpyAsync` that issues it holds the CPU for 1.9-2.0 ms, then a `cudaStreamSynchronize` follows.
"""
    example = """
loader = DataLoader(dataset, batch_size=256, num_workers=8)
for x, y in loader:
    x, y = x.cuda(), y.cuda()
"""
    instead = """
loader = DataLoader(dataset, batch_size=256, num_workers=8, pin_memory=True)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
"""
    known_problems = """
Off by default and GPU-only: on a CPU-only machine `pin_memory=True` is ignored with a warning. Reported
for a `DataLoader(...)` without `pin_memory` (or with a literal `False`) when this file moves the batches
of a loop over a data loader to a non-CPU device (`.cuda()`, `.to(device)`); the loop is matched by the
loader's name, or, when the loader is built in one function and iterated in another, by any loop over a
data loader in the file. Pinning costs host memory and a copy per batch in the pin thread; for tiny
batches it can be a wash.
"""

    def visit_Module(self, node: cst.Module, model: FileModel) -> None:
        super().visit_Module(node, model)
        self.moved: set[str | None] = set()  # loaders whose batches go to a device (None: some loader)
        self._loops: list[tuple[cst.For, str, set[str]]] = []
        self.iterated: set[str] = set()

    def visit_For(self, node: cst.For, model: FileModel) -> None:
        name = loop_source(model, node.iter)
        if name is None:
            return
        self.iterated.add(name)
        if model.kind(cst.parse_expression(name)) == LOADER or "loader" in name.lower():
            self._loops.append((node, name, {n.value for n in find_all(node.target, cst.Name)}))

    def leave_For(self, node: cst.For, model: FileModel) -> None:
        if self._loops and self._loops[-1][0] is node:
            self._loops.pop()

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        super().visit_Call(node, model)
        if not self._loops or type(node.func) is not cst.Attribute:
            return
        move = device_move(model, node)
        if move is None or move.device == "cpu" or dotted(node.func) and dotted(node.func).endswith(".cpu"):
            return
        receiver = dotted(node.func.value)
        for _, name, targets in self._loops:
            if receiver is not None and receiver.split(".")[0] in targets:
                self.moved.add(name)
                self.moved.add(None)

    def finish(self, model: FileModel) -> None:
        for call, name in self.loaders:
            arg = keyword(call, "pin_memory")
            if arg is not None and not (type(arg.value) is cst.Name and arg.value.value == "False"):
                continue
            if name in self.moved or (None in self.moved and name not in self.iterated):
                self.report(model, call, replacement=self._fixed(call, arg))

    @staticmethod
    def _fixed(call: cst.Call, arg: cst.Arg | None) -> cst.Call:
        true = cst.Name("True")
        if arg is not None:
            return call.with_changes(args=[a.with_changes(value=true) if a is arg else a for a in call.args])
        args = list(call.args)
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        args.append(cst.Arg(keyword=cst.Name("pin_memory"), value=true,
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace(""))))
        return call.with_changes(args=args)
