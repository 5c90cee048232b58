import libcst as cst

from perflint.model.names import dotted
from perflint.model.program import FileModel
from perflint.model.steps import Steps
from perflint.model.values import NDARRAY, NUMBER, ON_DEVICE, ON_HOST, TENSOR, Values, named_only
from perflint.rule import Rule


class HostIndexIntoDeviceTensor(Rule):
    code = "PFL206"
    # Off by default: below the precision bar on real code (see known_problems).
    default = False
    name = "host-index-into-device-tensor"
    summary = "a device tensor indexed every step with a NumPy array, a Python list or a host tensor"
    message = "indexing the device tensor `{tensor}` with {what} copies the index to the device, blocking, " \
              "every step; make the indices on the device"
    proof_metric = "ops"
    why = """
Advanced indexing needs its index on the same device as the tensor. An index held by NumPy (`mb_inds =
b_inds[start:end]` after `np.random.shuffle`), a Python list (`x[:, [-1], :]`), a `range` or a tensor
made on the host (`torch.arange(n)`) is turned into a CPU tensor and copied to the device on every
indexing, as a blocking copy from pageable memory: the host waits, and a minibatch loop that gathers ten
buffers with the same index pays it ten times. Indices made on the device (`torch.randperm(n,
device=device)`, `torch.arange(n, device=device)`) or a slice (`x[:, -1:, :]`) cost nothing.
"""
    example = """
b_inds = np.arange(batch_size)
for epoch in range(update_epochs):
    np.random.shuffle(b_inds)
    for start in range(0, batch_size, minibatch_size):
        mb_inds = b_inds[start:start + minibatch_size]
        loss = agent.loss(b_obs[mb_inds], b_actions[mb_inds])
"""
    instead = """
for epoch in range(update_epochs):
    b_inds = torch.randperm(batch_size, device=device)
    for start in range(0, batch_size, minibatch_size):
        mb_inds = b_inds[start:start + minibatch_size]
        loss = agent.loss(b_obs[mb_inds], b_actions[mb_inds])
"""
    known_problems = """
Off by default since blind review 49. Its findings on the corpus's hold-out repositories were right 36 of 60
times (60%) where judged, and in the blind reviews of fresh code since review 40, 8 of 16 (50%, counting
only findings the current rules still make): well under the 80% a default rule needs. The wrong ones are
mostly indexing the code never reaches in its default run (a `top_k` branch no caller enables, NMS's
auto-labelling under `--save-hybrid`), indices of a step that has already waited for the device, or tensors
that are on the host after all. Turning it off costs the host-made family most of its measured recall (80%
to 27% on the labelled corpus, where 32 of the 44 instances are cleanrl's minibatch gathers,
`b_obs[mb_inds]`, which it finds): select it (`--select PFL206` or `extend-select`) in RL and detection
code, where a NumPy or list index into a device tensor every minibatch is the common form.
Reported once per index, where it is made (or at the subscript, for a list written in place), and once
per tensor indexed alike in one function (YOLOv6's `coords[:, [0, 2]] -= pad[0]` then `coords[:, [0, 2]] /=
gain`: one index made on the device serves both), when the indexing runs every step and the tensor is on
the device (or is a tensor of unknown device in a project that runs on an accelerator, but not one known
to be a tensor only by its name: Yet-Another-EfficientDet's `invert_affine(metas, preds)` gets NumPy
arrays). Quiet for slices, integers and indices already on the device. It counts
for the host-made family of the accuracy benchmark: the index is a tensor made on the host and moved.
"""

    def finish(self, model: FileModel) -> None:
        values, steps = Values.of(model), Steps.of(model)
        done: set = set()
        for node in model.nodes(cst.Subscript):
            base = values.value(node.value)
            if base.kind != TENSOR or not (base.device == ON_DEVICE or base.device is None
                                           and model.facts.device_work and not named_only(base)):
                continue
            for element in node.slice:
                index = element.slice.value if type(element.slice) is cst.Index else None
                what = _host_index(model, values, index) if index is not None else None
                if what is None:
                    continue
                where = values.source(index) or index
                tensor = " ".join(model.module.code_for_node(node.value).split())[:40]
                # One report per index made, and per tensor indexed alike in one function (`x[:, [0, 2]] -=
                # pad` then `x[:, [0, 2]] /= gain`): one index tensor made on the device serves them all.
                alike = (model.site(node)[0].function, tensor, model.module.code_for_node(index))
                if where in done or alike in done:
                    continue
                step = steps.at(node)
                if not (step.hot or step.unless) or model.frame_of(node).compiled:
                    continue
                done.update((where, alike))
                self.report(model, where, self.message.format(tensor=tensor, what=what),
                            evidence=(("`{}` indexes a device tensor", node), *base.why[:1], *step.why[:2]),
                            step=step)


def _host_index(model: FileModel, values: Values, index: cst.BaseExpression) -> str | None:
    """What kind of host-side index an expression is (for the message), or None."""
    if type(index) is cst.List:
        return "a Python list"
    if type(index) is cst.Call and type(index.func) is cst.Name and index.func.value == "range":
        return "a `range`"
    if _one_element(values, index) or model.qualname(index) == "numpy.newaxis":  # None: a new axis
        return None  # `x[perm[i]]`: a 0-dim index is read as an integer (a select), nothing is copied
    v = values.value(index)
    if v.kind == NDARRAY:
        return f"`{dotted(index) or 'a NumPy array'}`, a NumPy array,"
    if v.kind == TENSOR and v.device == ON_HOST and v.origin is not None:
        return f"`{dotted(index) or 'an index'}`, a tensor made on the host,"
    return None


def _one_element(values: Values, index: cst.BaseExpression) -> bool:
    """One element of a host tensor or array, which indexing reads as an int: `perm[i]` with a number `i`,
    `i1, i2 = perm[:2]`, `for i in perm:`."""
    if type(index) is cst.Name:
        reaching = values.reaching_bindings(index) or []
        return bool(reaching) and all(
            (b.how == "for" and not b.path or b.how == "assign" and len(b.path) == 1)
            and type(b.value) not in (cst.Tuple, cst.List) and _host_array(values.value(b.value))
            for b in reaching)
    if not (type(index) is cst.Subscript and len(index.slice) == 1 and type(index.slice[0].slice) is cst.Index):
        return False
    inner = index.slice[0].slice.value
    return type(inner) is cst.Integer or values.value(inner).kind == NUMBER


def _host_array(v) -> bool:
    return v.kind == NDARRAY or v.kind == TENSOR and v.device == ON_HOST
