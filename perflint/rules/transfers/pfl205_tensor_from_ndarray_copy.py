import libcst as cst

from perflint.model.names import positional
from perflint.model.values import NDARRAY, Values

from perflint.rule import Rule


class TensorFromNdarrayCopy(Rule):
    code = "PFL205"
    default = False
    name = "tensor-from-ndarray-copy"
    summary = "`torch.tensor(ndarray)` copies the array; `torch.from_numpy` / `torch.as_tensor` share its memory"
    message = "`torch.tensor()` of a numpy array allocates and copies it; `torch.from_numpy(a)` (or " \
              "`torch.as_tensor(a)`) shares the array's memory"
    fix_safety = "unsafe"
    proof_metric = "peak_memory"
    why = """
`torch.tensor(a)` always allocates a new tensor and copies the array into it (memory bandwidth and a
second buffer as large as the array). `torch.from_numpy(a)` and `torch.as_tensor(a)` wrap the array's
own buffer: no allocation, no copy, whatever its size. In a data pipeline (`__getitem__`, collate) that
copy is paid for every sample.
"""
    example = """
def __getitem__(self, i):
    img = np.asarray(Image.open(self.paths[i]))
    return torch.tensor(img)
"""
    instead = """
def __getitem__(self, i):
    img = np.asarray(Image.open(self.paths[i]))
    return torch.from_numpy(img)   # or torch.as_tensor(img)
"""
    known_problems = """
The fix rewrites `torch.tensor(a)` to `torch.as_tensor(a)` (which, unlike `from_numpy`, also accepts
whatever else `torch.tensor` did, should the kind inference be wrong). It is unsafe: the tensor then
shares memory with the array, so a later in-place change to either is
seen by the other, and `from_numpy` warns on a read-only array (`np.asarray(PIL image)` is read-only; use
`as_tensor` there, or keep the copy when the array is reused as a buffer). The fix is offered only where
the array is the call's alone: made in the call, or a name made in the same loop iteration and not read
again. Reports only arguments it
knows are numpy arrays (the result of a `np.` call, directly or through a local name); quiet when any
other argument is passed (`dtype=`, `device=`, `requires_grad=`, `pin_memory=`: a conversion, a device
copy, pinned memory or a leaf that needs its own storage makes the copy necessary anyway) and at module
level (runs once).
"""

    def finish(self, model) -> None:
        values = Values.of(model)
        for node in model.calls:
            frame = model.frame_of(node)
            if frame.function is None or model.qualname(node.func) != "torch.tensor":
                continue
            arg = positional(node, 0)
            if arg is None or values.value(arg.value).kind != NDARRAY or len(node.args) != 1:
                continue  # with dtype=, device=, requires_grad=, pin_memory= a copy is needed anyway
            replacement = None
            if type(node.func) is cst.Attribute and _unshared(model, values, node, arg.value):
                replacement = node.with_changes(func=node.func.with_changes(attr=cst.Name("as_tensor")))
            self.report(model, node, replacement=replacement)


def _unshared(model, values: Values, call: cst.Call, array: cst.CSTNode) -> bool:
    """Whether the array is the call's alone, so sharing its memory changes nothing: made right there
    (`torch.tensor(np.stack(xs))`), or a name made in the same loop iteration and never read again."""
    if type(array) is cst.Call:
        return True
    if type(array) is not cst.Name or values.source(array) is None:
        return False
    frame, order = model.site(call)
    source_frame = model.frame_of(values.source(array))
    if source_frame.loop is not frame.loop:
        return False  # a buffer filled again each iteration would change the tensors made from it
    scope = frame.scope
    return not any(n.value == array.value and n is not array and model.site(n)[1] > order
                   and model.site(n)[0].scope is scope for n in model.nodes(cst.Name))
