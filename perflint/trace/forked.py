"""One piece of work run in a forked child process while the parent does another: how `perflint trace`
reads the second half of a large trace on a second core. The result comes back through a pipe, in
marshal's format (plain tuples, lists, dicts, str and numbers: several times faster than pickle).

Only where it is safe and worth it: Linux (macOS's system libraries are not fork-safe; Windows has no
fork), more than one usable CPU, and no other thread in the parent (forking a threaded process can
deadlock the child). Anything that goes wrong in the child (an exception, a kill, Ctrl-C) makes
`result()` None, and the parent does the work itself.
"""

from __future__ import annotations

import marshal
import os
import signal
import sys
import threading
from typing import Any, Callable


def available() -> bool:
    return sys.platform.startswith("linux") and threading.active_count() == 1 and len(os.sched_getaffinity(0)) > 1


class Child:
    """`work()` running in a child process from construction until `result()` or `stop()`. Raises OSError
    when the process cannot fork."""

    def __init__(self, work: Callable[[], Any]):
        sys.stdout.flush()  # the child leaves by os._exit: it must not inherit (and lose) buffered output
        sys.stderr.flush()
        read, write = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:  # no memory or process slot left: the caller does the work itself
            os.close(read)
            os.close(write)
            raise
        if self.pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(read)
                signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it at once; the parent reports
                data = marshal.dumps(work())
                with os.fdopen(write, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        self._read = read
        self._done = False
        self._result: Any = None

    def result(self) -> Any:
        """What `work()` returned, or None when the child failed; waits for it the first time."""
        if not self._done:
            chunks = []
            with os.fdopen(self._read, "rb") as pipe:
                while chunk := pipe.read(1 << 20):
                    chunks.append(chunk)
            _, status = os.waitpid(self.pid, 0)
            self._done = True
            if os.waitstatus_to_exitcode(status) == 0:
                try:
                    self._result = marshal.loads(b"".join(chunks))
                except Exception:  # noqa: BLE001 - a truncated pipe: the parent does the work instead
                    self._result = None
        return self._result

    def stop(self) -> None:
        """Ends the child if it is still running (the parent no longer needs it, or is failing)."""
        if not self._done:
            self._done = True
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            os.close(self._read)
