import libcst as cst

from perflint.edits import with_keyword
from perflint.model.names import keyword, one_line
from perflint.rules.transfers.moves import device_move

from perflint.rule import Rule

# Factories that take `device=` and would otherwise allocate on the CPU.
FACTORIES = frozenset(f"torch.{n}" for n in (
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "range", "linspace",
    "logspace", "eye", "tensor", "as_tensor", "empty_strided", "tril_indices", "triu_indices", "normal",
    "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"))
# Device generators differ from the CPU one: with `device=` a seeded run draws different numbers.
RANDOM = frozenset(f"torch.{n}" for n in ("rand", "randn", "randint", "randperm", "normal"))


class CpuTensorThenMoved(Rule):
    code = "PFL201"
    name = "cpu-tensor-then-moved"
    summary = "a tensor created on the CPU and moved at once (`torch.zeros(n).to(dev)`): create it on the device"
    message = "`{factory}(...).{method}(...)` allocates on the CPU, then copies to the device; pass `device=` instead"
    fix_safety = "safe"
    proof_metric = "transfers"
    why = """
`torch.zeros(n).to(device)` allocates and fills the tensor in host memory, then allocates it again on the
device and copies it over PCIe (`aten::to > aten::_to_copy > aten::copy_`, on a GPU a `cudaMemcpyAsync`
`Memcpy HtoD (Pageable -> Device)` that blocks the host until the staging copy is done). `device=` makes
the factory write the values straight into device memory with one small kernel: no host allocation, no
copy, no host wait. In a loop or a `forward` the copy is paid on every step.
"""
    example = """
def forward(self, x):
    mask = torch.ones(x.shape[0], x.shape[1]).to(x.device)
    pos = torch.arange(x.shape[1]).cuda()
"""
    instead = """
def forward(self, x):
    mask = torch.ones(x.shape[0], x.shape[1], device=x.device)
    pos = torch.arange(x.shape[1], device="cuda")
"""
    known_problems = """
Reports only a factory call
(`torch.zeros/ones/empty/full/rand*/arange/linspace/eye/tensor/as_tensor...`) directly followed by
`.to(<device>)` or `.cuda()`, in a loop or a `forward` method (code that runs once, such as `__init__`,
pays the copy once: quiet). `.to(x)` and `.to(<name>)` where the name does not look like a device
(`device`, `dev`, `self.device`, `x.device`, `args.gpu`, `local_rank`, a string or `torch.device(...)`)
stay quiet, because `.to(torch.float16)` is a dtype conversion. The fix (add `device=`) is offered only
for the plain forms `.to(dev)`, `.to(device=dev)` and `.cuda()` of a factory call written on one line;
with extra arguments (`dtype=`, `non_blocking=`) the finding has no fix, nor for random factories
(`rand`, `randn`, `randint`, `randperm`, `normal`): the device's generator draws other numbers than the
CPU's for the same seed, so the rewrite would change a seeded run's values. `torch.tensor(data).to(dev)`
where `data` already lives on the device would not copy: that is rare and the fixed code is still right.
"""

    def visit_Call(self, node: cst.Call, model) -> None:
        inner = node.func.value if isinstance(node.func, cst.Attribute) else None
        if not isinstance(inner, cst.Call) or not (model.in_hot_loop or model.in_forward):
            return
        factory = model.call_name(inner)
        if factory not in FACTORIES or keyword(inner, "device") is not None:
            return
        move = device_move(model, node)
        if move is None or move.device == "cpu" or node.func.attr.value == "cpu":
            return
        replacement = None
        if move.plain and one_line(inner) and factory not in RANDOM:
            device = move.expr if move.expr is not None else cst.SimpleString('"cuda"')
            replacement = with_keyword(inner, "device", device)
        self.report(model, node, self.message.format(factory=factory, method=node.func.attr.value),
                    replacement=replacement)
