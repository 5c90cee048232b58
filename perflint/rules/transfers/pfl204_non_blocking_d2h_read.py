import libcst as cst

from perflint.model.names import dotted, method_name
from perflint.model.values import ON_HOST, Values
from perflint.rules.transfers.moves import device_move
from perflint.tree import find_all

from perflint.rule import Rule

_READERS = {"print", "float", "int", "bool", "str", "repr", "list", "tuple", "format"}
_HOST_SYNCS = {"synchronize", "item", "tolist"}  # a blocking read of anything on the stream waits for it


def non_blocking_to_host(model, node) -> bool:
    if type(node) is not cst.Call:
        return False
    move = device_move(model, node)
    if move is None or move.device != "cpu" or not move.non_blocking:
        return False
    # A host tensor's `.to("cpu", non_blocking=True)` copies nothing (CogVideo's `torch.from_numpy(frame)...`).
    return type(node.func) is not cst.Attribute or Values.of(model).value(node.func.value).device != ON_HOST


class NonBlockingD2HRead(Rule):
    code = "PFL204"
    name = "non-blocking-d2h-read"
    summary = "the result of a non-blocking device-to-host copy is read before any synchronization"
    message = "`{name}` comes from a non-blocking copy to the host and is read here before any " \
              "synchronize: it may still hold stale or partial data"
    severity = "error"
    gpu_only = True
    proof_note = ("a correctness rule: the fixed code synchronizes before the read, so it does one sync more, "
                  "not less; it makes the data read true. On the CPU both versions read complete data.")
    why = """
`x.to("cpu", non_blocking=True)` (or `x.cpu(non_blocking=True)`) only *queues* the copy and returns at
once with a host tensor whose memory the copy engine fills later. Reading it (`.numpy()`, `.item()`,
`print`, indexing) before `torch.cuda.synchronize()`, `event.synchronize()` or `stream.synchronize()` reads
whatever is in that memory at the moment: garbage, zeros or a half-copied buffer, with no error. This is
a correctness bug, not a slowdown; the fix adds the one sync that a blocking copy would have done
(a blocking read is `cudaMemcpyAsync` + `Memcpy DtoH (Device -> Pageable)` + `cudaStreamSynchronize`, as
in ../shared/traces/hta/critical_path/cuda_event_sync), or syncs once after queuing several copies.
"""
    example = """
logits_host = logits.to("cpu", non_blocking=True)
preds = logits_host.argmax(-1).numpy()
"""
    instead = """
logits_host = logits.to("cpu", non_blocking=True)
done = torch.cuda.Event()
done.record()
...                        # other host work overlaps with the copy
done.synchronize()         # or torch.cuda.synchronize()
preds = logits_host.argmax(-1).numpy()
"""
    known_problems = """
Follows names within one block of statements (and the direct form `x.cpu(non_blocking=True).numpy()`):
a copy in one function read in another is not seen. Any `synchronize()` call, `.item()` or `.tolist()`
in between counts as a sync (a blocking read on the same stream waits for the copy too), even when it
is on another stream: the rule prefers missing a bug to a false alarm. A read is a method call on the
value, indexing it, or passing it to `print`/`float`/`int`/`str`/numpy; storing it in a list or
returning it is not a read. On a CPU tensor `non_blocking` does nothing, so the code is only wrong on a GPU;
a tensor the program model knows is on the host (`torch.from_numpy(frame).to("cpu", non_blocking=True)`,
CogVideo's frame loader) is not reported.
"""

    def visit_Call(self, node: cst.Call, model) -> None:
        if type(node.func) is cst.Attribute and non_blocking_to_host(model, node.func.value):
            self.report(model, node, "the result of a non-blocking copy to the host is read at once, before "
                                   "the copy has finished: use a blocking copy or synchronize first")

    def leave_Module(self, node: cst.Module, model) -> None:
        self._scan(node.body, model)

    def leave_IndentedBlock(self, node: cst.IndentedBlock, model) -> None:
        self._scan(node.body, model)

    def _scan(self, body, model) -> None:
        pending: set[str] = set()
        for stmt in body:
            if pending:
                if _syncs(stmt, pending):
                    pending.clear()
                else:
                    for name, read in _reads(stmt, pending):
                        self.report(model, read, self.message.format(name=name))
                        pending.discard(name)
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                if type(small) is cst.Assign:
                    names = {dotted(t.target) for t in small.targets} - {None}
                    if non_blocking_to_host(model, small.value):
                        pending |= names
                    else:
                        pending -= names


def _syncs(stmt, pending: set[str]) -> bool:
    for call in find_all(stmt, cst.Call):
        if type(call.func) is cst.Attribute and dotted(call.func.value) in pending:
            continue  # a read of the copy itself, not a sync before it
        if method_name(call) in _HOST_SYNCS:
            return True
        if method_name(call) == "cpu" and not any(
                a.keyword is not None and a.keyword.value == "non_blocking" for a in call.args):
            return True
        if method_name(call) == "to" and _blocking_to_host(call):
            return True  # `.to("cpu", non_blocking=False)` waits for the stream, the earlier copy with it
    return False


def _blocking_to_host(call: cst.Call) -> bool:
    nb = next((a for a in call.args if a.keyword is not None and a.keyword.value == "non_blocking"), None)
    if nb is not None and not (type(nb.value) is cst.Name and nb.value.value == "False"):
        return False
    target = call.args[0].value if call.args and call.args[0].keyword is None else None
    text = cst.Module([]).code_for_node(target) if target is not None else ""
    return "'cpu'" in text or '"cpu"' in text


# Methods that read no element: metadata, and `pin_memory()` of a non-blocking copy to the host, which is in
# pinned memory already and comes back as is (xtuner's optimizer state buffers, blind review 53).
_NO_READ = {"pin_memory", "size", "dim", "numel", "is_pinned", "data_ptr", "element_size", "stride",
            "is_contiguous", "storage_offset", "get_device", "record_stream"}


def _reads(stmt, pending: set[str]):
    for node in find_all(stmt, (cst.Call, cst.Subscript, cst.FormattedStringExpression)):
        if type(node) is cst.Subscript:
            name = dotted(node.value)
            if name in pending:
                yield name, node
        elif type(node) is cst.FormattedStringExpression:
            name = dotted(node.expression)
            if name in pending:
                yield name, node
        elif type(node.func) is cst.Attribute and dotted(node.func.value) in pending \
                and node.func.attr.value not in _NO_READ:
            yield dotted(node.func.value), node
        else:
            fname = dotted(node.func) or ""
            if fname in _READERS or fname.split(".")[0] in ("np", "numpy"):
                for arg in node.args:
                    if dotted(arg.value) in pending:
                        yield dotted(arg.value), node
