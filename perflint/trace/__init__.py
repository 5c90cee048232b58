"""`perflint trace`: check recorded PyTorch profiler (Kineto) traces against perflint budgets.

    from perflint.trace import load_trace, metrics, analyze
    trace = load_trace("rank0.pt.trace.json.gz")
    metrics(trace)            # {"syncs": 12, "kernels": 8772, "queue_overlap": 0.61, ...}: budget metrics
    analyze(trace, "3:5")     # every figure (a `Figures`), for ProfilerStep#3..#5
    check(parse_budget({"max_syncs": 0}), metrics(trace), unavailable=unavailable(analyze(trace)))

Imports no torch: it reads files.
"""

import importlib

# Where each public name lives. Imported on first use (PEP 562), so that `perflint trace` can start
# reading a file (perflint.trace.load) before it imports numpy and the analysis.
_HOMES = {"Figures": "figures", "analyze": "figures", "metrics": "figures", "metrics_of": "figures",
          "unavailable": "figures", "TraceError": "load", "load_trace": "load", "Trace": "model",
          "StepError": "steps"}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"perflint.trace.{home}"), name)
