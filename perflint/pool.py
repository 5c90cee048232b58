"""Worker processes that survive a crash on one item.

libcst's native parser can kill its process (a stack overflow is a SIGSEGV, not an exception), and a
killed worker breaks a `concurrent.futures` pool: every pending result is lost and nobody knows which
file did it. Here each worker is handed one item at a time, so when one dies the parent knows the item
it was working on, records it as crashed, starts a new worker and goes on; a worker that takes longer
than a time limit on one item is stopped the same way. Linting always happens in workers, even with
`--jobs 1`, so the command itself survives any file.

Workers ignore SIGINT: on Ctrl-C only the parent stops (and kills them), without a traceback per worker.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import sys
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Sequence


def _context():
    # fork where it is safe (Linux): a worker starts in milliseconds with everything imported.
    return mp.get_context("fork") if sys.platform.startswith("linux") else mp.get_context()


def _serve(conn: Connection, work: Callable[[Any], Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send((True, work(item)))
        except Exception as e:  # a bug, not a crash: the item gets the message and the worker goes on
            conn.send((False, f"raised {type(e).__name__}: {e}"))


class _Worker:
    def __init__(self, ctx, work: Callable[[Any], Any]) -> None:
        self.ctx, self.work = ctx, work
        self.conn, child = ctx.Pipe()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # so the child starts ignoring it
        try:
            self.process = ctx.Process(target=_serve, args=(child, work), daemon=True)
            self.process.start()
        finally:
            signal.signal(signal.SIGINT, previous)
        child.close()
        self.index: int | None = None  # the item it is working on
        self.started = 0.0  # when it got that item

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()

    def replaced(self) -> "_Worker":
        self.stop()
        return _Worker(self.ctx, self.work)


def run(work: Callable[[Any], Any], items: Sequence[Any], jobs: int, failed: Callable[[int, str], Any],
        done: Callable[[], None] | None = None, timeout: float | None = None) -> list[Any]:
    """`[work(item) for item in items]` on `jobs` worker processes. An item whose worker dies, whose `work`
    raises, or that takes longer than `timeout` seconds gets `failed(index, reason)` as its result."""
    results: list[Any] = [None] * len(items)
    queue = deque(range(len(items)))
    remaining = len(items)
    workers: list[_Worker] = []

    def finish(w: _Worker, result: Any) -> None:
        nonlocal remaining
        results[w.index] = result
        w.index = None
        remaining -= 1
        if done is not None:
            done()

    try:
        ctx = _context()
        workers = [_Worker(ctx, work) for _ in range(min(jobs, len(items)))]
        while remaining:
            for i, w in enumerate(workers):
                if w.index is None and queue:
                    index = queue.popleft()
                    try:
                        w.conn.send(items[index])
                    except OSError:  # it died idle (out of memory, killed): the item was never seen
                        queue.appendleft(index)
                        workers[i] = w.replaced()
                        continue
                    w.index, w.started = index, time.monotonic()
            busy = [w.started for w in workers if w.index is not None]
            left = None if timeout is None or not busy else max(0.0, min(busy) + timeout - time.monotonic())
            ready = set(wait([w.conn for w in workers] + [w.process.sentinel for w in workers], left))
            now = time.monotonic()
            for i, w in enumerate(workers):
                if w.conn in ready or w.process.sentinel in ready:
                    try:
                        ok, value = w.conn.recv()
                    except (EOFError, OSError):
                        reason = _death(w.process)
                    else:
                        finish(w, value if ok else failed(w.index, value))
                        continue
                elif w.index is not None and timeout is not None and now - w.started >= timeout:
                    reason = f"took longer than {timeout:g} s"
                else:
                    continue
                if w.index is not None:
                    finish(w, failed(w.index, reason))
                workers[i] = w.replaced()
    finally:
        for w in workers:
            w.stop()
    return results


def _death(process) -> str:
    process.join(5)
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"
