import libcst as cst

from perflint.model.names import keyword, positional
from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.model.values import Values

from perflint.rule import Rule
from perflint.rules.common import WholeFile
from perflint.rules.distributed.ddp import is_ddp

_DATA_PARALLEL = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel",
                  "torch.nn.parallel.data_parallel.DataParallel", "torch.nn.parallel.data_parallel.data_parallel"}


class DataParallel(Rule):
    code = "PFL701"
    # Off by default: with one GPU, DataParallel costs nothing (see known_problems).
    default = False
    name = "data-parallel"
    summary = "`nn.DataParallel` is slower than `DistributedDataParallel`, even on one machine"
    message = ("`{func}` replicates the model and scatters the batch from one GPU every step; "
               "use DistributedDataParallel")
    gpu_only = True
    proof_metric = ""
    proof_note = ("DataParallel's cost is per-step replicate/scatter/gather copies between GPUs; with no GPU it "
                  "just calls the module, so no CPU count differs.")
    why = """
`DataParallel` runs one process and one Python thread per GPU. On every forward it copies the
parameters from the first GPU to every other GPU (`replicate`), splits the batch from the first GPU
(`scatter`), gathers the outputs back onto it and reduces the gradients there: device-to-device copies
that grow with the model, a first GPU that holds more memory and does more work than the others, and
threads that share one GIL. `DistributedDataParallel` runs one process per GPU, keeps a replica on
each, and overlaps a bucketed all-reduce of the gradients with the backward pass. The PyTorch
documentation recommends it "even if there is only a single node"; `DataParallel` is not deprecated,
but slower.
"""
    example = """
model = nn.DataParallel(model).cuda()
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
"""
    instead = """
# torchrun --nproc_per_node=NGPU train.py
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = DistributedDataParallel(model.cuda(local_rank), device_ids=[local_rank])
# and a DistributedSampler for the loader
"""
    known_problems = """
It cannot see how many GPUs the program uses: with one GPU, or none, `DataParallel` just calls the
module and costs nothing (its reference pair runs that way on the CPU, so the count is not compared).
Quiet where the file also builds `DistributedDataParallel`, itself or through a helper of its own
(`smart_DDP(model)`): DataParallel is then the fallback of a run without a process group. Quiet for a
single device (`device_ids=[0]`, also as a parameter's default), and in files that never call
`.backward()`: for evaluation or inference on several GPUs the alternative is
one process per GPU, not DDP's gradient sync, and the replication costs little. The
cost of the per-step copies is measured on machines with several GPUs; perflint's own pairs run on
one device, so the rule's effect is documented rather than re-measured.

Off by default. In the blind reviews of repositories it was not tuned on, 3 of its 16 findings were
judged right (19%): the scripts' default run uses one GPU (`--gpu_ids 0`, a `--use_multi_gpu` flag off by
default), where DataParallel calls the module directly, or they offer DistributedDataParallel as the
intended multi-GPU launch and keep DataParallel as a fallback. Select it (`--select PFL701`) for code that
trains on several GPUs in one process.
"""

    def finish(self, model: FileModel) -> None:
        if WholeFile.of(model).backward is None:
            return  # evaluation or inference only: DataParallel's replication costs little there, DDP is no fix
        if any(is_ddp(model, call) or _ddp_helper(model, call) for call in model.calls):
            return  # the program offers DDP: DataParallel is its fallback for a run without a process group
        steps = Steps.of(model)
        for call in model.calls:
            qual = model.call_name(call)
            if qual in _DATA_PARALLEL and not _one_device(model, call) \
                    and not steps.never_taken(model.site(call)[0]):  # not `--use_multi_gpu`, not a CPU fallback
                self.report(model, call, self.message.format(func=qual.rsplit(".", 1)[1]))


def _ddp_helper(model: FileModel, call: cst.Call) -> bool:
    """`smart_DDP(model)`, `wrap_ddp(model)`: the project's own function that wraps a model in DDP, imported
    from one of its modules or defined here."""
    qual = model.qualname(call.func) or ""
    if not qual and type(call.func) is cst.Name and any(f.name == call.func.value for f in model.functions):
        qual = call.func.value
    return "ddp" in qual.rsplit(".", 1)[-1].lower() and not qual.startswith("torch.")


def _one_device(model: FileModel, call: cst.Call) -> bool:
    """`DataParallel(model, device_ids=[0])`, or `device_ids=gpu_ids` of a parameter whose default is
    `[0]`: one device, nothing replicated or scattered."""
    arg = keyword(call, "device_ids") or positional(call, 1)
    if arg is None:
        return False
    value = arg.value
    reaching = Values.of(model).reaching_bindings(value) or []
    if len(reaching) == 1 and reaching[0].how == "param" and reaching[0].target.default is not None:
        value = reaching[0].target.default  # `def initialize(self, gpu_ids=[0])`: its default
    return type(value) in (cst.List, cst.Tuple) and len(value.elements) == 1
