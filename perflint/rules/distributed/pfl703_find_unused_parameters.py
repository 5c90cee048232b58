import libcst as cst

from perflint.model.names import keyword
from perflint.model.program import FileModel
from perflint.rules.distributed.ddp import is_ddp

from perflint.rule import Rule


class FindUnusedParameters(Rule):
    code = "PFL703"
    # Off by default since blind review 24: 6 of 11 right in the reviews. The flag is often needed (prompts
    # or heads picked at random each step), or costs nothing (an evaluator's DDP with no backward), or the
    # wrap runs only in a multi-GPU mode that is not the default; the source rarely tells which.
    default = False
    call_names = frozenset({"DistributedDataParallel"})
    name = "find-unused-parameters"
    summary = "`DistributedDataParallel(..., find_unused_parameters=True)` walks the autograd graph and all-reduces a usage map every step"
    message = ("`find_unused_parameters=True` costs a graph traversal and an extra all-reduce every step; drop it if "
               "every parameter gets a gradient, or use `static_graph=True` if the unused set never changes")
    fix_safety = "unsafe"
    proof_metric = "collectives"
    why = """
With `find_unused_parameters=True`, DDP walks the autograd graph from the outputs after every forward
to mark the parameters that will not get a gradient, and all-reduces a per-parameter usage bitmap
after every backward, so that all ranks agree which gradients to wait for. Both happen on every
iteration, even when every parameter is used; PyTorch itself warns at run time when the flag finds
nothing ("This flag results in an extra traversal of the autograd graph every iteration"). Measured by
its reference pair (one gloo rank, a 2-layer MLP, 8 steps): 16 `c10d::allreduce_` instead of 8,
8 `search_unused_parameters` traversals, and 33 host reads of a scalar (`_local_scalar_dense`) instead
of 1; `collectives` 19 -> 13 counting DDP's construction broadcasts.
"""
    example = """
model = DistributedDataParallel(model, device_ids=[rank], find_unused_parameters=True)
"""
    instead = """
model = DistributedDataParallel(model, device_ids=[rank])                     # every parameter is used
model = DistributedDataParallel(model, device_ids=[rank], static_graph=True)  # the same ones are unused every step
"""
    known_problems = """
It cannot tell whether the model really leaves parameters unused (a branch not taken, a frozen head
that still requires grad): then DDP without the flag raises "Expected to have finished reduction in
the prior iteration", and the fix is `static_graph=True` when the unused set is the same every step,
or removing or freezing (`requires_grad_(False)`) those parameters. The fix it offers (`False`) is
therefore unsafe.
"""

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        if not is_ddp(model, node):
            return
        arg = keyword(node, "find_unused_parameters")
        if arg is not None and type(arg.value) is cst.Name and arg.value.value == "True":
            self.report(model, arg, replacement=cst.Name("False"), fix_node=arg.value)
