"""Benchmark: memory and time of `perflint trace` on a large trace, with the typed streaming reader
(msgspec) and with the dict readers (no msgspec), each in a fresh subprocess.

    python benchmarks/bench_trace_large.py [--copies 8]

Linux only (reads VmHWM). Builds a plain JSON trace of df_index_resolver's events repeated --copies times (8: 358 MiB, 987k kept
events) in a temporary folder, then prints per reader: load seconds, load + analysis seconds, and the
peak RSS growth over the process's size after imports, also as a fraction of the file's size.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "traces" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"

CHILD = r'''
import gc, json, sys, time
from perflint.trace import analyze, load_trace, metrics_of
from perflint.trace import msgspec_reader as typed
def peak_kib():  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across exec
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
if sys.argv[2] == "dict":
    typed._DECODER = None
gc.collect()
base = peak_kib()
start = time.perf_counter()
trace = load_trace(sys.argv[1])
loaded = time.perf_counter()
metrics_of(analyze(trace))
done = time.perf_counter()
print(json.dumps({"load_s": loaded - start, "total_s": done - start,
                  "rss_mib": (peak_kib() - base) / 1024,
                  "events": len(trace.host_ops) + len(trace.runtime) + len(trace.device)}))
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=8)
    args = parser.parse_args()
    with gzip.open(SOURCE) as f:
        doc = json.load(f)
    doc["traceEvents"] *= args.copies
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "large.json"
        path.write_text(json.dumps(doc))
        del doc
        size = path.stat().st_size / 2**20
        print(f"{path.name}: {size:.0f} MiB of JSON ({args.copies} x {SOURCE.name})")
        for reader in ("typed", "dict"):
            done = subprocess.run([sys.executable, "-c", CHILD, str(path), reader], capture_output=True,
                                  text=True, cwd=ROOT)
            if done.returncode != 0:
                raise SystemExit(f"{reader} failed:\n{done.stderr[-2000:]}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{reader:5} reader: load {r['load_s']:.2f} s, load + analysis {r['total_s']:.2f} s, "
                  f"{r['events']} kept events, peak RSS growth {r['rss_mib']:.0f} MiB "
                  f"({r['rss_mib'] / size:.2f}x the file)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
