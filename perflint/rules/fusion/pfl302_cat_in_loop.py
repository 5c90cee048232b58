import libcst as cst

from perflint.model.names import dotted
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
`self.buf = torch.cat((self.buf, x), dim=1)`), including inside `a if cond else b`.
"""

    def visit_Assign(self, node: cst.Assign, model) -> None:
        if not model.in_loop or len(node.targets) != 1:
            return
        name = dotted(node.targets[0].target)
        if name is None:
            return
        values = [node.value.body, node.value.orelse] if isinstance(node.value, cst.IfExp) else [node.value]
        for value in values:
            if isinstance(value, cst.Call) and model.call_name(value) in _CAT and value.args \
                    and isinstance(value.args[0].value, (cst.List, cst.Tuple)) \
                    and any(dotted(e.value) == name for e in value.args[0].value.elements) \
                    and not _read_elsewhere(model.loops[-1], node, name):
                self.report(model, value, self.message.format(name=name, func=dotted(value.func)))


def _read_elsewhere(loop: cst.CSTNode, assign: cst.Assign, name: str) -> bool:
    """Whether the loop uses `name` outside the statement that grows it."""
    node_type = cst.Attribute if "." in name else cst.Name
    inside = {id(n) for n in find_all(assign, node_type)}
    return any(dotted(n) == name and id(n) not in inside for n in find_all(loop, node_type))
