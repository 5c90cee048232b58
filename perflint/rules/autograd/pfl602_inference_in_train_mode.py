import libcst as cst

from perflint.model.program import FileModel
from perflint.rules.autograd.eval_loops import EvalLoopRule, switches_mode



class InferenceInTrainMode(EvalLoopRule):
    code = "PFL602"
    name = "inference-in-train-mode"
    summary = "an inference loop under `no_grad` runs a model that this file never puts in `.eval()` mode"
    message = "no `.eval()` in this file: dropout and batch norm run in training mode during this evaluation"
    severity = "warning"
    default = False
    proof_metric = "peak_memory"
    requires_no_grad = True
    why = """
In training mode dropout draws a random mask over every activation it touches (an extra tensor the size
of the activation, a random-number kernel and a multiply) and batch norm computes batch statistics and
updates its running averages in place. Evaluation wants neither: the work is wasted and the results are
wrong (random, batch-dependent predictions, and running statistics polluted by evaluation data).
"""
    example = """
@torch.no_grad()
def evaluate(model, loader):
    return [model(x).argmax(1) for x in loader]
"""
    instead = """
@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    return [model(x).argmax(1) for x in loader]
"""
    known_problems = """
Off by default: a file-local view cannot know the mode a model arrives in. It reports only evaluation
functions (named like `evaluate`, `validate`, `test`, `predict`, `infer`) that call a module in a loop
under `no_grad`/`inference_mode`, in files that never call `.eval()` or `.train(...)` anywhere, so a
caller in the same file that switches modes keeps it quiet; a caller in another file does not. Models
without dropout or batch norm behave the same in both modes (the finding is then harmless). The
reference pair counts the dropout masks' memory and returns predictions that a wide-margin classifier
gets right in either mode.
"""

    def keep(self, func: cst.FunctionDef, model: FileModel) -> bool:
        return not switches_mode(model)
