"""Benchmark: `perflint trace FILE` versus HTA 0.5.0, each as the user runs it: a whole process, imports
included, on the same file, alternating in one run.

    pip install 'torch-perflint[trace]'                                   # numpy, msgspec, orjson, isal
    python -m venv .hta-venv && .hta-venv/bin/pip install 'HolisticTraceAnalysis==0.5.0'   # benchmark only
    python benchmarks/bench_trace_vs_hta.py [TRACE] [--runs 5] [--hta-python .hta-venv/bin/python]

perflint: the `perflint` command next to this Python (`perflint trace FILE`: load, every figure, the
verdict, the roofline and the text report), as it runs by default (a second process reads the second half
of the file, see perflint/trace/forked.py) and with `--jobs 1` (one process). HTA: `python -c` importing
HTA, loading the folder that holds the file (`TraceAnalysis(trace_dir=...)`) and computing its temporal
breakdown, HTA's counterpart of our busy/idle figures. Default TRACE: shared/traces/hta/df_index_resolver/df_index_resolver.json.gz (216,092
events). Prints each command's median wall time (min-max) and CPU time (all its processes), the ratios,
and its peak memory: the most that all its processes held together (interpreter and imports included),
sampled every millisecond from /proc in one more, untimed, run (on Linux; elsewhere ru_maxrss, which
is the largest single process).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "traces" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"
HTA = """
import logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
TraceAnalysis(trace_dir=sys.argv[1]).get_temporal_breakdown(visualize=False)
"""


# Both tools run with their bytecode cached, as a pip install leaves them (pip compiles a wheel's modules):
# with PYTHONDONTWRITEBYTECODE set, an editable install would compile its modules from source on every run.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(command: list[str], sample: bool = False) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one command, measured from outside it; with
    `sample`, the RSS is the peak of its processes' sum, polled (which costs the command some time)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=ENV)
    peak = _tree_rss_peak(proc) if sample and sys.platform.startswith("linux") else 0
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode not in (0, 1):  # perflint trace exits 1 when a budget breaks; none is given here
        raise SystemExit(f"{' '.join(command[:3])} failed ({proc.returncode}):\n{err[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, max(peak, usage.ru_maxrss / 1024)


def _tree_rss_peak(proc: subprocess.Popen) -> float:
    """The largest sum of RSS (MiB) over the process and its descendants, polled until it exits."""
    page, peak = os.sysconf("SC_PAGE_SIZE"), 0.0
    while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:  # reaped by `run`
        total, todo = 0, [proc.pid]
        while todo:
            pid = todo.pop()
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * page
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    todo += map(int, f.read().split())
            except (OSError, ValueError):
                continue
        peak = max(peak, total / 2**20)
        time.sleep(0.001)
    return peak


def _default_hta_python() -> str:
    for candidate in (ROOT / ".hta-venv" / "bin" / "python", Path(sys.executable)):
        if candidate.exists():
            return str(candidate)
    return sys.executable


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", default=str(DEFAULT))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hta-python", default=_default_hta_python(),
                        help="a Python with HolisticTraceAnalysis==0.5.0 (default: .hta-venv/bin/python)")
    args = parser.parse_args()
    trace = Path(args.trace)
    perflint = shutil.which("perflint", path=str(Path(sys.executable).parent)) or shutil.which("perflint")
    if perflint is None:
        raise SystemExit("the perflint command is not installed: pip install -e '.[trace]'")
    if subprocess.run([args.hta_python, "-c", "import hta"], capture_output=True).returncode != 0:
        raise SystemExit(f"{args.hta_python} has no HTA: pip install 'HolisticTraceAnalysis==0.5.0' into it")
    with tempfile.TemporaryDirectory() as folder:  # HTA reads a folder of rank traces
        shutil.copy(trace, folder)
        commands = {"perflint": [perflint, "trace", str(trace)], "one": [perflint, "trace", "--jobs", "1", str(trace)],
                    "hta": [args.hta_python, "-c", HTA, folder]}
        peaks = {tool: run(command, sample=True)[2] for tool, command in commands.items()}  # also warms caches
        results: dict[str, list[tuple[float, float, float]]] = {tool: [] for tool in commands}
        for _ in range(args.runs):
            for tool, command in commands.items():
                results[tool].append(run(command))
    print(f"trace: {trace} ({trace.stat().st_size / 2**20:.1f} MiB gzipped); {args.runs} runs each, alternating; "
          f"whole processes, imports included")
    print(f"{'':44}{'median s':>10}{'min s':>8}{'max s':>8}{'median CPU s':>14}{'peak RSS MiB':>14}")
    labels = {"perflint": "perflint trace FILE", "one": "perflint trace --jobs 1 FILE",
              "hta": "HTA 0.5.0: import, load, temporal breakdown"}
    medians = {}
    for tool, rows in results.items():
        wall, cpu, _ = zip(*rows)
        medians[tool] = (statistics.median(wall), statistics.median(cpu))
        print(f"{labels[tool]:44}{medians[tool][0]:>10.3f}{min(wall):>8.3f}{max(wall):>8.3f}"
              f"{medians[tool][1]:>14.3f}{peaks[tool]:>14.0f}")
    for tool in ("perflint", "one"):
        print(f"speed-up of `{labels[tool]}` (HTA median / its median): "
              f"{medians['hta'][0] / medians[tool][0]:.1f}x wall, {medians['hta'][1] / medians[tool][1]:.1f}x CPU; "
              f"peak RSS {peaks[tool]:.0f} vs {peaks['hta']:.0f} MiB")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
