"""The Python calls the CPU profiler cannot see or cannot attribute, seen by a `TorchFunctionMode`.

The mode sees every torch call made from Python and acts only on the few that can sync or transfer
(`.item()`, `.tolist()`, `.cpu()`, `.to(dev)`, `if t:`, ...): it counts the ones the event table maps
to a metric at the Python level (`.tolist()` is invisible to the CPU profiler), names the caller's
source line, and wraps the call in a `pytest_perf::site#N` range so every sync op inside is charged to
that line. Ordinary ops pay no frame walk. Threads started while measuring get a mode of their own
(the mode stack is per thread), and `torch.cuda.synchronize` is wrapped (not a torch function).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable

import torch
from torch.autograd.profiler import record_function
from torch.overrides import TorchFunctionMode

from perflint.measures import events
from pytest_perf.attribution import Site, user_site
from pytest_perf.profiler import HOST, SITE
from pytest_perf.python_counts import PythonCounts

# Calls that can sync or transfer. Only these pay for a frame walk and a profiler range.
_WATCHED = frozenset({
    "item", "__bool__", "__float__", "__int__", "__index__", "__complex__", "__format__", "__repr__",
    "__str__", "tolist", "numpy", "cpu", "cuda", "to", "nonzero", "argwhere", "masked_select", "unique",
    "unique_consecutive", "repeat_interleave", "__getitem__", "__setitem__", "tensor", "index_put_",
    "masked_scatter", "equal", "allclose",
})
_INDEXING = frozenset({"__getitem__", "__setitem__"})
_DATA_LOADING = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "utils", "data") + os.sep


class FunctionMode:
    """The mode on the measuring thread and on threads started while it runs, and the synchronize
    wrapper; `running()` says whether a segment is being measured (threads can outlive it)."""

    def __init__(self, counts: PythonCounts, running: Callable[[], bool]):
        self.counts = counts
        self.running = running
        self._mode: _Watcher | None = None

    def start(self, undo: list[Callable[[], None]]) -> None:
        """Enter the mode; `undo` receives what restores the patched globals."""
        self._wrap_cuda_synchronize(undo)
        self._follow_new_threads(undo)
        self._mode = _Watcher(self)
        self._mode.__enter__()

    def stop(self) -> None:
        if self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(None, None, None)

    def watched(self, func: Callable, name: str, args: tuple, kwargs: dict) -> Any:
        if _host_bookkeeping(sys._getframe(2), args):
            with record_function(HOST):
                return func(*args, **kwargs)
        api = _api_name(func, name)
        if api == "Tensor.numpy" and kwargs.get("force"):  # numpy(force=True) copies to the host itself
            api, name = "Tensor.cpu", "cpu"
        site = user_site(api, depth=3)
        row = events.lookup(api, "python")
        if row is not None and row.metric is not None:
            self._count(name, row, site, args, kwargs)
        with record_function(SITE + str(self.counts.site_index(site))):
            return func(*args, **kwargs)

    def _count(self, name: str, row: events.EventMapping, site: Site, args: tuple, kwargs: dict) -> None:
        """Apply the table's python rows; `.to()` counts only when it names a device. `.cpu()` states a
        device-to-host copy whatever the machine, so it is a sync too; `.to(dev)` is a sync only when it
        really copies device -> host (on a CPU-only machine `.to(DEVICE)` reads as the host-to-device
        copy it is on a GPU)."""
        src = args[0] if args and isinstance(args[0], torch.Tensor) else None
        nbytes = src.numel() * src.element_size() if src is not None else 0
        to_host = name == "cpu"
        if name == "to":
            dev = _target_device(args, kwargs)
            if dev is None:
                return
            blocking = not kwargs.get("non_blocking", False) and not any(a is True for a in args[2:])
            to_host = dev.type == "cpu" and blocking and src is not None and src.device.type != "cpu"
        self.counts.count(row.metric, site, row.rule, nbytes)
        if to_host:  # a copy to the host is both a transfer and (when blocking) a sync
            other = events.SYNC if row.metric == events.TRANSFER else events.TRANSFER
            self.counts.count(other, site, row.rule, nbytes)

    def _follow_new_threads(self, undo: list[Callable[[], None]]) -> None:
        """Threads started while measuring run under a mode of their own, so their `.tolist()`,
        `.cpu()`, ... are counted and their lines named too."""
        original = threading.Thread.start
        owner = self

        def start(thread, *args, **kwargs):
            run = thread.run

            def run_watched():
                with _Watcher(owner):
                    return run()

            thread.run = run_watched
            return original(thread, *args, **kwargs)

        threading.Thread.start = start
        undo.append(lambda: setattr(threading.Thread, "start", original))

    def _wrap_cuda_synchronize(self, undo: list[Callable[[], None]]) -> None:
        original = torch.cuda.synchronize
        row = events.lookup("torch.cuda.synchronize", "python")

        def synchronize(*args, **kwargs):
            self.counts.count(row.metric, user_site("torch.cuda.synchronize"), row.rule)
            return original(*args, **kwargs)

        torch.cuda.synchronize = synchronize
        undo.append(lambda: setattr(torch.cuda, "synchronize", original))


class _Watcher(TorchFunctionMode):
    """Sees every torch call made from Python; does work only for the watched ones."""

    def __init__(self, owner: FunctionMode):
        super().__init__()
        self.owner = owner

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None)
        if (name not in _WATCHED or (name in _INDEXING and not _has_tensor_index(args[1]))
                or not self.owner.running()):  # a thread that outlived the measurement
            return func(*args, **kwargs)
        return self.owner.watched(func, name, args, kwargs)


def _api_name(func: Callable, name: str) -> str:
    qual = getattr(func, "__qualname__", name)
    if qual.startswith(("TensorBase.", "Tensor.")):
        return "Tensor." + name
    module = getattr(func, "__module__", None) or "torch"
    if qual.startswith("_VariableFunctionsClass.") or module in ("torch", "torch.functional"):
        return "torch." + name
    return f"{module}.{name}"


def _has_tensor_index(index: Any) -> bool:
    if isinstance(index, torch.Tensor):
        return True
    return isinstance(index, (tuple, list)) and any(isinstance(i, torch.Tensor) for i in index)


def _host_bookkeeping(caller, args: tuple) -> bool:
    """A call that torch.utils.data itself makes on a host tensor: the loader's base seed, the sampler's
    seed and `randperm(n).tolist()`, default_collate's `torch.tensor(...)`. On a CPU-only machine every
    tensor is a host tensor and a call counts as it would cost on the tensors of a GPU run; these
    tensors stay on the host in a GPU run too, so reading them waits for no device. Calls from the
    user's Dataset or collate_fn are the user's code and count as usual."""
    if not caller.f_code.co_filename.startswith(_DATA_LOADING):
        return False
    first = args[0] if args else None
    tensors = first if isinstance(first, (list, tuple)) else (first,)
    return all(t.device.type == "cpu" for t in tensors if isinstance(t, torch.Tensor))


def _target_device(args: tuple, kwargs: dict) -> torch.device | None:
    """The device a `.to(...)` call names, or None for a dtype-only conversion."""
    dev = kwargs.get("device")
    if dev is None:
        for a in args[1:]:
            if isinstance(a, torch.Tensor):
                return a.device
            if isinstance(a, (str, torch.device)) or (isinstance(a, int) and not isinstance(a, bool)):
                dev = a
                break
    if dev is None:
        return None
    try:
        return torch.device(dev)
    except (RuntimeError, TypeError):
        return None
