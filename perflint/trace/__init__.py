"""`perflint trace`: check recorded PyTorch profiler (Kineto) traces against perflint budgets.

    from perflint.trace import load_trace, metrics, analyze
    trace = load_trace("rank0.pt.trace.json.gz")
    metrics(trace)            # {"syncs": 12, "kernels": 8772, "queue_overlap": 0.61, ...}: budget metrics
    analyze(trace, "3:5")     # every figure (a `Figures`), for ProfilerStep#3..#5
    check(parse_budget({"max_syncs": 0}), metrics(trace), unavailable=unavailable(analyze(trace)))

Imports no torch: it reads files.
"""

from perflint.trace.analyze import Figures, analyze, metrics, metrics_of, unavailable
from perflint.trace.load import TraceError, load_trace
from perflint.trace.model import Trace
from perflint.trace.steps import StepError

__all__ = ["Figures", "StepError", "Trace", "TraceError", "analyze", "load_trace", "metrics", "metrics_of",
           "unavailable"]
