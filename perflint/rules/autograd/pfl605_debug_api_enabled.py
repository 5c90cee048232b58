import libcst as cst

from perflint.model.names import keyword, positional
from perflint.model.program import FileModel
from perflint.model.steps import on_cuda_path
from perflint.rules.common import trains

from perflint.rule import Rule

_ANOMALY = {"torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"}
_ANOMALY_CTX = {"torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly"}
_IN_TRAINING = {"torch.autograd.profiler.emit_nvtx", "torch.autograd.gradcheck", "torch.autograd.gradgradcheck",
                "torch.autograd.gradcheck.gradcheck", "torch.autograd.gradcheck.gradgradcheck"}
# Not `torch.cuda.nvtx.range_push`: one marker per call, nearly free, and no check in backward (blind review
# 43 judged three such findings wrong, in apex's ImageNet example behind `--prof`).


def _behind_a_flag(model: FileModel) -> bool:
    """Inside an `if`: switched on under a condition the user sets or meets (`if cfg.detect_anomaly:`, an
    environment variable such as ai-toolkit's `DEBUG_TOOLKIT`, MambaVision's debug pass after a non-finite
    loss, blind reviews 51 and 54), not for every run; the branch every CUDA run takes (`if
    torch.cuda.is_available():`, `on_cuda_path`) is no such condition."""
    for frame in model.frame.chain():
        node = frame.node
        if type(node) is cst.If and not on_cuda_path(frame):
            return True
    return False


class DebugApiEnabled(Rule):
    code = "PFL605"
    call_names = frozenset(q.rsplit(".", 1)[1] for q in _ANOMALY | _ANOMALY_CTX | _IN_TRAINING)
    name = "debug-api-enabled"
    summary = "autograd anomaly detection (or another debugging API) is switched on in code that trains"
    message = "`{func}` slows every backward pass (extra checks and stack capture); enable it only while debugging"
    severity = "warning"
    proof_metric = "syncs"
    why = """
Anomaly detection records the Python stack of every forward op and, in backward, checks every gradient
that each autograd node returns for NaN: an `isnan().any()` reduction plus a device-to-host read
(`.item()`) per node, so the GPU stalls once per backward node and the host does extra work for every
op. `gradcheck` runs the function many times in float64 with finite differences; `emit_nvtx` pushes an
NVTX range around every op. All are debugging tools with a large, constant cost.
"""
    example = """
torch.autograd.set_detect_anomaly(True)
for x, y in loader:
    loss_fn(model(x), y).backward()
    optimizer.step()
"""
    instead = """
torch.autograd.set_detect_anomaly(args.debug)  # off unless asked for
for x, y in loader:
    loss_fn(model(x), y).backward()
    optimizer.step()
"""
    known_problems = """
`set_detect_anomaly(...)` and `detect_anomaly()` are reported wherever they are switched on with a
literal (they are global switches); a variable argument (`set_detect_anomaly(args.debug)`) or any of these
APIs inside an `if` (a setting, `if cfg.detect_anomaly: ...`; an environment variable; a debug pass after a
non-finite loss) is quiet: the user asks for it, and not on every run.
NVTX markers (`torch.cuda.nvtx.range_push`) are not reported: they cost one marker each, not a check per op.
`emit_nvtx()`, `gradcheck` and `gradgradcheck` are reported only in a function or loop that also trains
(`.backward()` or an optimizer step): in tests and profiling scripts they are the point.
"""

    def visit_Call(self, node: cst.Call, model: FileModel) -> None:
        qual = model.call_name(node)
        if qual is None:
            return
        if _behind_a_flag(model):
            return  # `if cfg.detect_anomaly: set_detect_anomaly(True)`, `if args.prof: emit_nvtx()`: on request
        if qual in _ANOMALY:
            arg = positional(node, 0) or keyword(node, "mode")
            if arg is None or not (type(arg.value) is cst.Name and arg.value.value == "True"):
                return
        elif qual in _ANOMALY_CTX:
            pass
        elif qual in _IN_TRAINING:
            scope = model.function or (model.loops[0] if model.loops else None)
            if scope is None or not trains(model, scope):
                return
        else:
            return
        self.report(model, node, self.message.format(func=qual.rsplit(".", 1)[1]))
