"""`@pytest.mark.perf_budget(world_size=N)`: run a test body on N ranks of a real torch.distributed job.

Spawning a rank costs seconds (a Python process, torch, pytest's collection), so ranks are pooled: the
first world_size=N test starts N worker processes (`python -m pytest_perf.distributed`), each a pytest
session that collects the same files and then waits for orders. Per test the controller picks a free
loopback port and sends the node id; every worker sets up a process group (gloo on the CPU, NCCL with
GPUs), runs the test item through pytest's normal protocol (fixtures, the perf_budget measurement with
collective figures, the budget check on that rank) and writes its outcome as JSON. The controller waits
for all of them with a timeout: a rank that fails lets the others finish for a short grace period; a
rank that does not finish gets the whole pool killed (each worker is its own process group) and named.

Under torchrun (TORCHELASTIC_RUN_ID and RANK set) every pytest process already is a rank: marked tests
run in-process on the job's process group, which is created once from the env:// variables.

Data flows one way: controller -> (node id, port) -> workers -> per-rank JSON -> `combine()` -> the
test's outcome and its report entry.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping

ENV_RANK, ENV_WORLD = "PYTEST_PERF_RANK", "PYTEST_PERF_WORLD_SIZE"
START_TIMEOUT_S = 180.0  # a worker's start: interpreter, torch, collection
DEFAULT_TIMEOUT_S = 120.0  # one test on all ranks
GRACE_S = 5.0  # after one rank failed, how long the others may still finish


@dataclass(frozen=True)
class RankInfo:
    """What the `perf_rank` fixture gives a test body."""

    rank: int
    world_size: int
    local_rank: int
    device: str  # "cpu" or "cuda:<local rank>"
    backend: str  # "gloo" or "nccl"


def under_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ and "RANK" in os.environ and ENV_RANK not in os.environ


def rank_info() -> RankInfo | None:
    """This process's rank: a pool worker's, torchrun's, or None in the controller."""
    if ENV_RANK in os.environ:
        rank, world, local = int(os.environ[ENV_RANK]), int(os.environ[ENV_WORLD]), int(os.environ[ENV_RANK])
    elif under_torchrun():
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", rank))
    else:
        return None
    import torch

    if torch.cuda.is_available():  # pragma: no cover - untested: no GPU on the CI that built this
        return RankInfo(rank, world, local, f"cuda:{local}", "nccl")
    return RankInfo(rank, world, local, "cpu", "gloo")


def init_group(info: RankInfo, port: int | None, timeout_s: float) -> None:
    """The process group of one test (pool: a fresh loopback port each time) or of the torchrun job."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return
    if info.device.startswith("cuda"):  # pragma: no cover - needs GPUs
        torch.cuda.set_device(info.local_rank)
    method = f"tcp://127.0.0.1:{port}" if port is not None else "env://"
    dist.init_process_group(info.backend, init_method=method, rank=info.rank, world_size=info.world_size,
                            timeout=timedelta(seconds=timeout_s))


def destroy_group() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the controller's side ---------------------------------------------------------------------------
class RankPool:
    """N worker processes that run test items on request; see the module docstring."""

    def __init__(self, world_size: int, pytest_args: list[str], cwd: str):
        self.world_size = world_size
        self.pytest_args = pytest_args
        self.cwd = cwd
        self.dir = tempfile.mkdtemp(prefix=f"pytest_perf_ranks{world_size}_")
        self.procs: list[subprocess.Popen] = []
        self._seq = 0

    @property
    def alive(self) -> bool:
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    def start(self) -> None:
        for rank in range(self.world_size):
            env = {**os.environ, ENV_RANK: str(rank), ENV_WORLD: str(self.world_size)}
            env.pop("PYTEST_XDIST_WORKER", None)
            log = open(os.path.join(self.dir, f"rank{rank}.log"), "wb")
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "pytest_perf.distributed", self.dir, *self.pytest_args],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.cwd,
                start_new_session=True))  # its own process group: killed with everything it started
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        ready = [os.path.join(self.dir, f"rank{r}.ready") for r in range(self.world_size)]
        while not all(os.path.exists(p) for p in ready):
            if time.monotonic() > deadline or not self.alive:
                tails = self._log_tails(range(self.world_size))
                self.kill()
                raise RuntimeError(f"the {self.world_size} rank workers did not start:\n{tails}")
            time.sleep(0.05)

    def run(self, nodeid: str, timeout_s: float) -> tuple[dict[int, dict], list[int]]:
        """Run one test on every rank: (results by rank, ranks that did not finish). Kills the pool when
        a rank did not finish."""
        self._seq += 1
        out = os.path.join(self.dir, f"test{self._seq}")
        os.makedirs(out)
        order = json.dumps({"nodeid": nodeid, "port": free_port(), "out": out, "timeout": timeout_s}) + "\n"
        for p in self.procs:
            p.stdin.write(order.encode())
            p.stdin.flush()
        results: dict[int, dict] = {}
        deadline = time.monotonic() + timeout_s
        while len(results) < self.world_size and time.monotonic() < deadline:
            for rank in range(self.world_size):
                path = os.path.join(out, f"rank{rank}.json")
                if rank not in results and os.path.exists(path):
                    with open(path, encoding="utf-8") as f:
                        results[rank] = json.load(f)
                    if results[rank]["outcome"] == "failed":
                        deadline = min(deadline, time.monotonic() + GRACE_S)
            if not self.alive:  # a rank died (os._exit, a crash): the others cannot finish
                deadline = min(deadline, time.monotonic() + 0.5)
            time.sleep(0.02)
        missing = [r for r in range(self.world_size) if r not in results]
        if missing:
            for r in missing:
                results[r] = {"rank": r, "outcome": "unfinished", "log": self._log_tails([r])}
            self.kill()
        return results, missing

    def _log_tails(self, ranks, chars: int = 2000) -> str:
        parts = []
        for r in ranks:
            try:
                with open(os.path.join(self.dir, f"rank{r}.log"), "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                text = ""
            lines = [ln for ln in text.splitlines() if not ln.startswith("USDT:")]
            parts.append(f"--- rank {r} output (last lines) ---\n" + "\n".join(lines)[-chars:])
        return "\n".join(parts)

    def kill(self) -> None:
        """End every worker and whatever it started (its process group), reap them, remove the files."""
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a process that survives SIGKILL
                pass
            if p.stdin:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        self.procs = []
        shutil.rmtree(self.dir, ignore_errors=True)  # logs were read into the messages already

    def close(self) -> None:
        """Ask the workers to finish their sessions; kill what is left after a few seconds."""
        for p in self.procs:
            try:
                p.stdin.write(b'{"quit": true}\n')
                p.stdin.flush()
            except OSError:
                pass
        deadline = time.monotonic() + 10
        while self.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        self.kill()


def worker_args(config) -> list[str]:
    """pytest arguments for a worker: the same rootdir, ini file and budget options; the collected
    files are named per pool (`files`)."""
    args = ["-q", f"--rootdir={config.rootpath}"]
    if config.pluginmanager.hasplugin("xdist"):
        args += ["-n", "0"]  # a worker is one rank: no xdist workers of its own, whatever addopts says
    if config.inipath:
        args += ["-c", str(config.inipath)]
    for opt, flag in (("perf_budget", "--perf-budget"), ("perf_fail_on_increase", "--perf-fail-on-increase")):
        if config.getoption(opt):
            args.append(flag)
    if config.getoption("perf_baseline"):
        args.append(f"--perf-baseline={config.getoption('perf_baseline')}")
    return args


# -- the worker's side -------------------------------------------------------------------------------
class _Worker:
    """pytest plugin of a pool worker: collect, say ready, then run the items the controller names."""

    def __init__(self, directory: str):
        self.dir = directory
        self.info = rank_info()
        self.orders = os.fdopen(os.dup(0), "r", encoding="utf-8")  # pytest swaps sys.stdin out

    def pytest_collection_finish(self, session) -> None:
        open(os.path.join(self.dir, f"rank{self.info.rank}.ready"), "w").close()

    def pytest_runtestloop(self, session) -> bool:
        from _pytest.runner import runtestprotocol

        items = {item.nodeid: item for item in session.items}
        for line in self.orders:
            order = json.loads(line)
            if order.get("quit"):
                break
            item = items.get(order["nodeid"])
            result: dict[str, Any] = {"rank": self.info.rank, "outcome": "passed"}
            if item is None:
                result.update(outcome="failed", when="collect",
                              longrepr=f"rank {self.info.rank} did not collect {order['nodeid']}")
            else:
                try:
                    init_group(self.info, order["port"], order["timeout"])
                    reports = runtestprotocol(item, nextitem=None, log=False)
                finally:
                    destroy_group()
                result.update(_outcome(reports))
            path = os.path.join(order["out"], f"rank{self.info.rank}.json")
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(result, f)
            os.replace(path + ".tmp", path)
        return True


def _outcome(reports) -> dict:
    out: dict[str, Any] = {"outcome": "passed"}
    for rep in reports:
        if rep.when == "call" and getattr(rep, "perf", None):
            out["entry"] = rep.perf
        if rep.failed and out["outcome"] != "failed":
            out.update(outcome="failed", when=rep.when, longrepr=rep.longreprtext)
        elif rep.skipped and rep.when in ("setup", "call") and out["outcome"] == "passed":
            out.update(outcome="skipped", longrepr=str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple)
                       else rep.longreprtext)
    return out


# -- per-rank figures and the combined outcome --------------------------------------------------------
def rank_figures(result, scaling: Mapping[str, float] | None) -> dict:
    """The distributed figures of one rank's Result, JSON-able; with a scaling model, its prediction."""
    figures = {"collectives_by_kind": dict(result.comm_counts), "comm_bytes_by_kind": dict(result.comm_kind_bytes),
               "wall_s": result.wall_ns / 1e9, "flops": result.flops}
    if scaling:
        figures["prediction"] = predicted(result, scaling).to_dict()
    return figures


def predicted(result, scaling: Mapping[str, float]):
    """The scaling model (perflint.scaling) applied to what one rank measured: its FLOPs, its collectives
    by kind and size, its comm/compute overlap."""
    from perflint.scaling import KINDS, predict

    colls = {k: (n, result.comm_kind_bytes[k]) for k, n in result.comm_counts.items() if k in KINDS}
    overlap = result.metrics.get("comm_overlap") or 0.0
    return predict(result.flops or 0, colls, int(scaling["world_size"]), scaling["link_gbps"],
                   scaling["device_tflops"], overlap, scaling.get("latency_us", 5.0))


def combine(nodeid: str, results: Mapping[int, dict], missing: list[int],
            timeout_s: float) -> tuple[dict | None, str | None, bool]:
    """(report entry over all ranks, failure message, skipped) from the per-rank results."""
    problems = []
    if missing:
        problems.append(f"ranks {', '.join(map(str, missing))} of {len(results)} did not finish within "
                        f"{timeout_s:g} s (every rank was killed)")
    for r in sorted(results):
        res = results[r]
        if res["outcome"] == "failed":
            problems.append(f"rank {r} failed ({res.get('when', 'call')}):\n{res.get('longrepr', '')}")
        elif res["outcome"] == "unfinished":
            problems.append(res.get("log", ""))
    skipped = not problems and all(res["outcome"] == "skipped" for res in results.values())
    entries = {r: res["entry"] for r, res in results.items() if res.get("entry")}
    entry = None
    if entries:
        first = entries[min(entries)]
        walls = [e.get("distributed", {}).get("wall_s") for e in entries.values()]
        walls = [w for w in walls if w]
        entry = {**first, "nodeid": nodeid,
                 "verdicts": [{**v, "metric": f"{v['metric']} [rank {r}]"}
                              for r in sorted(entries) for v in entries[r]["verdicts"]],
                 "ranks": {str(r): {"metrics": e["metrics"], **e.get("distributed", {})}
                           for r, e in sorted(entries.items())},
                 "step_time_spread": (max(walls) / min(walls) - 1) if len(walls) > 1 else None}
    return entry, "\n".join(problems) or None, skipped


def add_scaling_verdict(entry: dict, single: Mapping, budget) -> tuple[dict, str | None]:
    """min_scaling_efficiency: one rank's wall time over the slowest rank's at world_size (weak scaling:
    every rank does the one rank's work). Only when asked: it reruns the test and times are noisy."""
    from perflint.measures.budgets import MEASURED_SCALING, SCALING_KEYS, Verdict
    from pytest_perf import report

    key, metric, limit = MEASURED_SCALING, SCALING_KEYS[MEASURED_SCALING].metric, budget.limits[MEASURED_SCALING]
    one = (single.get("entry") or {}).get("distributed", {}).get("wall_s")
    walls = [r.get("wall_s") for r in entry.get("ranks", {}).values() if r.get("wall_s")]
    if not one or not walls or single.get("outcome") != "passed":
        v = Verdict(key, metric, None, limit, "skip",
                    f"the 1-rank run did not pass ({single.get('outcome', 'missing')})")
    else:
        eff = one / max(walls)
        v = Verdict(key, metric, eff, limit, "fail" if eff < limit else "pass")
    text = v.describe() + (f" (1 rank {one:.3f} s, slowest of {len(walls)} ranks {max(walls):.3f} s)"
                           if v.measured is not None else "")
    entry = {**entry, metric: v.measured,
             "verdicts": [*entry["verdicts"], report.verdict_entry(v, text, None)]}
    return entry, report.failure_message([(v, text)] if v.status == "fail" else [])


def main(argv: list[str]) -> int:
    """A pool worker: `python -m pytest_perf.distributed <dir> <pytest args>`."""
    import pytest

    return int(pytest.main(argv[1:], plugins=[_Worker(argv[0])]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


@contextmanager
def single_rank_group(backend: str = "gloo"):
    """A one-rank process group for the duration of the block, so DDP code runs in one process (the
    rules' reference pairs use it). An existing group is reused and left alone."""
    import torch.distributed as dist

    if dist.is_initialized():
        yield
        return
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        try:
            dist.distributed_c10d._get_default_group().shutdown()
        finally:
            dist.destroy_process_group()
        # Known torch issue (docs/distributed.md): when DDP's reducer later releases the group,
        # ProcessGroupGloo's destructor can deadlock joining a worker that needs the GIL. The shutdown
        # above does not prevent it; keeping the DDP module alive does (tests/pairs.py).
