"""Benchmark: `perflint trace`'s load + full analysis versus HTA 0.5.0's TraceAnalysis load, same file,
same run, each measurement in a fresh subprocess (alternating, so machine load hits both alike).

    pip install 'torch-perflint[trace]'           # numpy, msgspec (typed fast reader), orjson, isal
    pip install 'HolisticTraceAnalysis==0.5.0'   # benchmark only: pulls in pandas, jupyterlab, ...
    python benchmarks/bench_trace_vs_hta.py [TRACE] [--runs 5]

Default TRACE: shared/traces/hta/df_index_resolver/df_index_resolver.json.gz (216,092 events).
Prints the median wall time of each, the ratio, and two peak-memory figures per tool:
ru_maxrss growth of the process (and of its children, HTA may parse in a worker pool) over the
baseline after imports, and the tracemalloc peak of the work (a separate run: tracing slows it down).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "traces" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"

# Each child prints one JSON line: {"seconds": ..., "rss_mib": ..., "children_rss_mib": ..., "traced_mib": ...}
CHILD = r'''
import gc, json, logging, resource, sys, time, tracemalloc
tool, path, traced = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
logging.disable(logging.CRITICAL)
if tool == "ours":
    from perflint.trace import analyze, load_trace, metrics_of
    def work():
        return metrics_of(analyze(load_trace(path)))
else:
    import warnings
    warnings.filterwarnings("ignore")
    from hta.trace_analysis import TraceAnalysis
    def work():
        return TraceAnalysis(trace_dir=path)
gc.collect()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if traced:
    tracemalloc.start()
def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
cpu0, start = cpu(), time.perf_counter()
result = work()
seconds, cpu_seconds = time.perf_counter() - start, cpu() - cpu0
peak = tracemalloc.get_traced_memory()[1] if traced else 0
usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "rss_mib": (usage - base) / 1024,
                  "children_rss_mib": children / 1024, "traced_mib": peak / 2**20}))
'''


def run(tool: str, target: str, traced: bool = False) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, tool, target, "1" if traced else "0"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{tool} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _parser_name() -> str:
    """The reader perflint uses: msgspec's typed decoder, else orjson, else json; and the gzip inflater."""
    from perflint.trace import json_reader as jsontext, load, msgspec_reader as typed

    inflater = "isal" if load._isal is not None else "zlib"
    if typed._DECODER is not None:
        import msgspec
        return f"msgspec {msgspec.__version__} (typed), {inflater}"
    if jsontext._orjson is not None:
        return f"orjson (msgspec not installed), {inflater}"
    return f"json (neither msgspec nor orjson installed), {inflater}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(DEFAULT))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    trace = Path(args.trace)
    try:
        import hta  # noqa: F401
    except ImportError:
        raise SystemExit("HTA is not installed: pip install 'HolisticTraceAnalysis==0.5.0'")
    with tempfile.TemporaryDirectory() as folder:  # HTA reads a folder of rank traces
        shutil.copy(trace, folder)
        targets = {"ours": str(trace), "hta": folder}
        times: dict[str, list[float]] = {"ours": [], "hta": []}
        cpu: dict[str, list[float]] = {"ours": [], "hta": []}
        for _ in range(args.runs):
            for tool in ("ours", "hta"):
                done = run(tool, targets[tool])
                times[tool].append(done["seconds"])
                cpu[tool].append(done["cpu_seconds"])
        rss = {tool: run(tool, targets[tool]) for tool in ("ours", "hta")}
        traced = {tool: run(tool, targets[tool], traced=True) for tool in ("ours", "hta")}
    parser_name = _parser_name()
    print(f"trace: {trace} ({trace.stat().st_size / 2**20:.1f} MiB gzipped); perflint parser: {parser_name}; "
          f"{args.runs} runs each, alternating")
    print(f"{'':34}{'median s':>10}{'min s':>8}{'max s':>8}{'median CPU s':>14}{'peak RSS growth MiB':>22}"
          f"{'tracemalloc peak MiB':>22}")
    for tool, label in (("ours", "perflint trace: load + analysis"), ("hta", "HTA 0.5.0 TraceAnalysis load")):
        t = times[tool]
        r = max(rss[tool]["rss_mib"], rss[tool]["children_rss_mib"])
        print(f"{label:34}{statistics.median(t):>10.3f}{min(t):>8.3f}{max(t):>8.3f}"
              f"{statistics.median(cpu[tool]):>14.3f}{r:>22.0f}{traced[tool]['traced_mib']:>22.0f}")
    ratio = statistics.median(times["hta"]) / statistics.median(times["ours"])
    cpu_ratio = statistics.median(cpu["hta"]) / statistics.median(cpu["ours"])
    print(f"speed-up (HTA median / perflint median): {ratio:.1f}x wall, {cpu_ratio:.1f}x CPU")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
