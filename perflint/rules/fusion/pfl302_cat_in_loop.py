import libcst as cst

from perflint.model import torchapi as api
from perflint.model.names import dotted
from perflint.model.steps import Steps
from perflint.tree import find_all

from perflint.rule import Rule

_CAT = {"torch.cat", "torch.concat", "torch.concatenate", "torch.hstack", "torch.vstack", "torch.row_stack",
        "torch.column_stack", "torch.dstack"}


class CatInLoop(Rule):
    code = "PFL302"
    name = "cat-in-loop"
    summary = "`t = torch.cat([t, x])` in a loop grows a tensor by copying it every iteration (quadratic)"
    message = "`{name} = {func}([{name}, ...])` copies all of `{name}` every iteration; append the pieces " \
              "to a list and call `{func}` once after the loop"
    proof_metric = "ops"
    # Off by default: on real code the tensors it finds grow to a few hundred rows (see known_problems).
    default = False
    why = """
`torch.cat` cannot grow a tensor in place: every call allocates a new tensor and copies everything
accumulated so far plus the new piece. After N iterations that is N allocations, N kernels and
O(N^2) bytes copied (N^2/2 times the piece size). Collecting the pieces in a Python list and
concatenating once allocates once and copies each byte once.
"""
    example = """
feats = torch.empty(0, 512)
for x in loader:
    feats = torch.cat([feats, model(x)])
"""
    instead = """
chunks = []
for x in loader:
    chunks.append(model(x))
feats = torch.cat(chunks)
"""
    known_problems = """
Quiet when the growing tensor is also read elsewhere in the loop (autoregressive decoding,
`idx = torch.cat([idx, next_token], 1)` feeding `model(idx)`): the loop needs the whole tensor every step,
so a list does not help there (preallocate the full buffer and write into slices instead). Matches only a
literal list or tuple holding the assigned name itself (`t = torch.cat([t, x])`,
`self.buf = torch.cat((self.buf, x), dim=1)`), including inside `a if cond else b`. Quiet in a loop of a few
iterations and for a grid of sample images assembled to be saved (`save_image(img_samples)`): a picture
of a few rows, drawn now and then, not data that grows with the run.

Off by default. The copy is quadratic, but on real code the tensors it grows stay small: in the blind
reviews of repositories it was not tuned on, none of its 5 findings was judged worth fixing (per-class
detections of a few hundred boxes in a loop dominated by NMS, a handful of sample rows), and the labelled
repositories have none. Select it (`--select PFL302`) where a loop really accumulates data that grows with
the run (features of a whole dataset).
"""

    def visit_Module(self, node: cst.Module, model) -> None:
        self._grown: list[tuple[cst.Call, str]] = []

    def finish(self, model) -> None:
        steps = Steps.of(model)
        for value, name in self._grown:
            frame = model.frame_of(value)
            loop = frame.loop
            if loop is not None and steps.loop_kind(loop).kind in ("small", "cold") or _saved(model, frame, name):
                continue  # a few rows, or a grid of sample images assembled to be saved
            self.report(model, value, self.message.format(name=name, func=dotted(value.func)))

    def visit_Assign(self, node: cst.Assign, model) -> None:
        if not model.in_loop or len(node.targets) != 1:
            return
        name = dotted(node.targets[0].target)
        if name is None:
            return
        values = [node.value.body, node.value.orelse] if type(node.value) is cst.IfExp else [node.value]
        for value in values:
            if type(value) is cst.Call and model.call_name(value) in _CAT and value.args \
                    and type(value.args[0].value) in (cst.List, cst.Tuple) \
                    and any(dotted(e.value) == name for e in value.args[0].value.elements) \
                    and not _read_elsewhere(model.loops[-1], node, name):
                self._grown.append((value, name))


def _saved(model, frame, name: str) -> bool:
    """Whether the grown tensor goes to an image file or a grid (`save_image(img_samples, ...)`): a picture of a
    few samples, drawn now and then, not data that grows with the run."""
    calls = frame.function.calls if frame.function is not None else model.calls
    for call in calls:
        if (dotted(call.func) or "").rsplit(".", 1)[-1] in api.IMAGE_OUTPUTS and any(
                dotted(n) == name for a in call.args for n in find_all(a.value, (cst.Name, cst.Attribute))):
            return True
    return False


def _read_elsewhere(loop: cst.CSTNode, assign: cst.Assign, name: str) -> bool:
    """Whether the loop uses `name` outside the statement that grows it."""
    node_type = cst.Attribute if "." in name else cst.Name
    inside = {id(n) for n in find_all(assign, node_type)}
    return any(dotted(n) == name and id(n) not in inside for n in find_all(loop, node_type))
