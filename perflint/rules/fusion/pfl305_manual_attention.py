import libcst as cst

from perflint.model.names import dotted, method_name
from perflint.tree import find_all

from perflint.rule import Rule

_SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
_MATMUL = {"torch.matmul", "torch.bmm"}
_PASS_THROUGH = {"masked_fill", "masked_fill_", "float", "half", "to", "type_as", "type", "contiguous", "clamp"}


def _matmul_operands(model, node):
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.MatrixMultiply:
        return node.left, node.right
    if type(node) is cst.Call:
        if model.call_name(node) in _MATMUL and len(node.args) == 2:
            return node.args[0].value, node.args[1].value
        if method_name(node) == "matmul" and model.qualname(node.func) is None and len(node.args) == 1:
            return node.func.value, node.args[0].value
    return None


def _strip(node):
    """`k.contiguous()`, `k.float()` -> `k`."""
    while type(node) is cst.Call and method_name(node) in ("contiguous", "float", "to", "type_as"):
        node = node.func.value
    return node


def _transposed(node) -> bool:
    """`k.transpose(-2, -1)`, `k.permute(...)`, `k.mT`, `k.T`, also followed by `.contiguous()`."""
    node = _strip(node)
    if type(node) is cst.Attribute:
        return node.attr.value in ("mT", "T")
    return type(node) is cst.Call and method_name(node) in ("transpose", "permute")


def _arg(arg: cst.Arg) -> int | None:
    v = arg.value
    if type(v) is cst.UnaryOperation and type(v.operator) is cst.Minus \
            and type(v.expression) is cst.Integer:
        return -int(v.expression.value)
    return int(v.value) if type(v) is cst.Integer else None


def _cosine(model, query) -> bool:
    """`F.normalize(q, dim=-1) @ ...` (or `q = F.normalize(q)` first): cosine attention, as cross-covariance
    (XCA) uses over channels, where the "sequence" is the channel dimension and flash kernels do not apply."""
    if type(query) is cst.Name:
        from perflint.model.values import Values

        query = Values.of(model).source(query)
    return type(query) is cst.Call and (model.qualname(query.func) or "").endswith("normalize")


def _headless(model, query) -> bool:
    """q taken from the last dimension (`q, k, v = qkv.unbind(-1)`): one number per token, no head dimension
    for SDPA to work over."""
    from perflint.model.values import Values

    source = Values.of(model).source(query, unpacked=True) if type(query) is cst.Name else None
    if type(source) is cst.Call and method_name(source) == "unbind" and source.args:
        value = source.args[0].value
        return type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus
    return False


def _one_query(model, query) -> bool:
    """q of one token per sequence (class attention: `self.q(x[:, 0])`, `.reshape(B, 1, heads, d)`): the
    scores are one vector per head, too little for a fused kernel to save anything."""
    from perflint.model.values import Values

    node, values = query, Values.of(model)
    for _ in range(4):  # through `q = q * self.scale` to where q is made
        if type(node) is not cst.Name:
            return False
        node = values.source(node)
        if node is None:
            return False
        for call in find_all(node, cst.Call):
            if method_name(call) in ("reshape", "view") and len(call.args) >= 3 and _arg(call.args[1]) == 1:
                return True
        for sub in find_all(node, cst.Subscript):
            if len(sub.slice) == 2 and type(sub.slice[1].slice) is cst.Index \
                    and type(sub.slice[1].slice.value) is cst.Integer:
                return True
        node = next((n for n in find_all(node, cst.Name) if n.value == query.value), None)
    return False


class ManualAttention(Rule):
    code = "PFL305"
    # Off by default: half its findings on unseen code are not worth the change (see known_problems).
    default = False
    call_names = frozenset({"matmul", "bmm"})
    name = "manual-attention"
    summary = "attention written by hand (`softmax(q @ k.transpose(-2, -1) * scale) @ v`): " \
              "use `F.scaled_dot_product_attention`"
    message = "hand-written attention: `F.scaled_dot_product_attention(q, k, v, attn_mask=..., dropout_p=...)` " \
              "does this in one fused kernel without materialising the score matrix"
    proof_metric = "ops"
    why = """
The hand-written form runs four to six kernels (transpose, matmul, scale, mask, softmax, dropout,
matmul) and writes the full (sequence x sequence) score and probability matrices to memory: memory
traffic and peak memory grow with the square of the sequence length. `F.scaled_dot_product_attention`
dispatches to FlashAttention / memory-efficient kernels on GPUs that compute the same result tile by
tile in one kernel, never storing the score matrix, and to a fused math kernel elsewhere.
"""
    example = """
attn = (q @ k.transpose(-2, -1)) * self.scale
attn = attn.softmax(dim=-1)
attn = self.attn_drop(attn)
x = attn @ v
"""
    instead = """
x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0)
"""
    known_problems = """
Follows the scores through local names in one function: a matmul with a transposed right operand
(`k.transpose(-2, -1)`, `.mT`, `.permute(...)`, or a name assigned from `k.transpose(-2, -1)`), then
scaling, masking (`masked_fill`, `+ mask`), dtype casts and single-argument module calls
(`self.rel_pos(attn)`, an additive bias: pass it as `attn_mask=`), then a softmax, optional dropout
(`self.attn_drop(attn)`), then a matmul; it is reported at that last matmul. Keys permuted into the
transposed layout by a general `permute` in an earlier statement are not recognised (levit,
bottleneck attention), nor softmax modules (`self.softmax(attn)`). Quiet when the
function already calls `scaled_dot_product_attention` (the hand-written branch is then a deliberate
fallback, as in timm's `if self.fused_attn: ... else: ...`), when it returns or stores the probabilities
(SDPA cannot return attention weights), and in compiled code (Inductor pattern-matches it). Variants
that SDPA cannot express (relative position bias added after the softmax, talking heads) are not matched.

Off by default. In the blind reviews of repositories it was not tuned on, 13 of its 22 findings were
judged right (59%). The others were attention with one query token (CaiT class attention, a pooling
layer with 8 learned queries, one decode step: a score tensor of one row per head, as bandwidth-bound
as the fused kernel; quiet since), classes that the project's configuration never builds, and a
windowed variant that a one-line swap does not fit. Select it (`--select PFL305`) on transformer code
whose attention over full sequences is written by hand.
"""

    def visit_Module(self, node, model) -> None:
        self.roles: list[dict[str, str]] = [{}]

    def visit_FunctionDef(self, node, model) -> None:
        self.roles.append({})

    def leave_FunctionDef(self, node, model) -> None:
        self.roles.pop()

    def visit_Assign(self, node: cst.Assign, model) -> None:
        role = self._role(node.value, model)
        for t in node.targets:
            if type(t.target) is cst.Name:
                if role is None:
                    self.roles[-1].pop(t.target.value, None)
                else:
                    self.roles[-1][t.target.value] = role

    def visit_BinaryOperation(self, node, model) -> None:
        self._check(node, model)

    def visit_Call(self, node, model) -> None:
        self._check(node, model)

    def _check(self, node, model) -> None:
        operands = _matmul_operands(model, node)
        if operands is None or model.in_compiled or self._role(operands[0], model) != "probs":
            return
        function = model.function
        if function is not None:
            if any(name.endswith("scaled_dot_product_attention") for name in model.calls_in(function)):
                return
            probs = {n for n, r in self.roles[-1].items() if r == "probs"}
            for stmt in find_all(function, (cst.Return, cst.Assign)):
                if type(stmt) is cst.Assign and not any(type(t.target) is cst.Attribute for t in stmt.targets):
                    continue
                value = stmt.value
                values = [e.value for e in value.elements] if type(value) is cst.Tuple else [value]
                if any(type(v) is cst.Name and v.value in probs for v in values):
                    return  # the probabilities are returned or stored: SDPA cannot give them
        self.report(model, node)

    def _role(self, node, model) -> str | None:
        if type(node) is cst.Name:
            return self.roles[-1].get(node.value)
        if _transposed(node) and type(node) is not cst.Call or type(node) is cst.Call \
                and method_name(node) == "transpose" and {_arg(a) for a in node.args} == {-1, -2}:
            return "keys"  # k.transpose(-2, -1) assigned to a name first
        operands = _matmul_operands(model, node)
        if operands is not None:
            right = _strip(operands[1])
            keys = _transposed(right) or type(right) is cst.Name and self.roles[-1].get(right.value) == "keys"
            if keys and (_cosine(model, operands[0]) or _headless(model, operands[0]) or _one_query(model, operands[0])):
                return None  # cosine (cross-covariance) attention, q/k without a head dimension, one query: not SDPA's
            return "scores" if keys else None
        if type(node) is cst.BinaryOperation:
            return "scores" if "scores" in (self._role(node.left, model), self._role(node.right, model)) else None
        if type(node) is cst.Call:
            if model.call_name(node) in _SOFTMAX and node.args:
                return "probs" if self._role(node.args[0].value, model) == "scores" else None
            method = method_name(node)
            if method == "softmax" and model.qualname(node.func) is None:
                return "probs" if self._role(node.func.value, model) == "scores" else None
            if method in _PASS_THROUGH and model.qualname(node.func) is None:
                return self._role(node.func.value, model)
            if len(node.args) == 1 and type(node.func) is cst.Attribute \
                    and (dotted(node.func) or "").startswith("self."):
                role = self._role(node.args[0].value, model)  # self.attn_drop(attn), self.rel_pos(attn)
                return role if role in ("probs", "scores") else None
        return None
