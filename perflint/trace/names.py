"""What an event *is*, by name: kernel classes, launch calls, blocking calls, copy directions.

Names come from both CUDA and ROCm traces; the sync calls themselves are listed once, in
`perflint.measures.events.EVENTS` (source "gpu_runtime"), and looked up from there.
"""

from __future__ import annotations

import functools
import operator
import re
from typing import NamedTuple

from perflint.measures.events import SYNC, lookup
from perflint.trace.model import DeviceOp, RuntimeCall, Trace

COMPUTE, COMMUNICATION, MEMCPY, MEMSET = "compute", "communication", "memcpy", "memset"
CLASSES = (COMPUTE, COMMUNICATION, MEMCPY, MEMSET)

_COLLECTIVE = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
_MEMCPY = re.compile(r"^Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?")
_FRAME = re.compile(r"^\s*(.+?\.py)\((\d+)\)")
_LIBRARY = ("/site-packages/", "/dist-packages/", "/torch/", "<built-in", "/lib/python")


def kernel_class(op: DeviceOp) -> str:
    """compute, communication (NCCL/RCCL kernels), memcpy or memset."""
    return class_of(op.name, op.kind)


@functools.lru_cache(maxsize=4096)
def class_of(name: str, kind: str) -> str:
    if kind == "memcpy":
        return MEMCPY
    if kind == "memset":
        return MEMSET
    if name.startswith(("nccl", "rccl")):
        return COMMUNICATION
    return COMPUTE


def collective_name(op: DeviceOp) -> str:
    """"allreduce", "all_to_all", ... from the kernel args when recorded, else from the kernel name."""
    if op.comm is not None and op.comm.collective:
        return op.comm.collective
    m = _COLLECTIVE.match(op.name)
    return m.group(1) if m else op.name.split("(")[0]


@functools.lru_cache(maxsize=4096)
def is_launch(name: str) -> bool:
    """A runtime/driver call that enqueues device work (kernel launch, async copy or memset)."""
    return ("Launch" in name or "Memcpy" in name or "Memset" in name) and not name.startswith("cudaGetDevice")


def launch_calls(trace: Trace) -> list[RuntimeCall]:
    """The trace's launch calls in file order, found once per trace: each distinct name is tested once,
    then the calls are filtered by set membership."""
    found = trace.cache.get("launch_calls")
    if found is None:
        names = {name for name in set(map(_NAME, trace.runtime)) if is_launch(name)}
        found = trace.cache["launch_calls"] = [c for c in trace.runtime if c.name in names]
    return found


_NAME = operator.itemgetter(0)


def host_names(trace: Trace) -> set[str]:
    """The distinct names of the host events: questions about names are asked of these, once each."""
    found = trace.cache.get("host_names")
    if found is None:
        found = trace.cache["host_names"] = set(map(_NAME, trace.host_ops))
    return found


@functools.lru_cache(maxsize=4096)
def is_sync_call(name: str) -> bool:
    """A host call that blocks until device work is done (cuda*/hip*Synchronize, synchronous memcpy)."""
    m = lookup(name, "gpu_runtime")
    return m is not None and m.metric == SYNC


def sync_rule(name: str) -> str | None:
    m = lookup(name, "gpu_runtime")
    return m.rule if m is not None else None


class CopyKind(NamedTuple):
    direction: str  # HtoD, DtoH, DtoD, HtoH, PtoP or "?"
    host_memory: str  # "pinned", "pageable" or "-" (device-only or not recorded)


@functools.lru_cache(maxsize=4096)
def copy_kind(name: str) -> CopyKind:
    """From "Memcpy DtoH (Device -> Pageable)"; older traces omit the memory kinds."""
    m = _MEMCPY.match(name)
    if not m:
        return CopyKind("?", "-")
    kinds = {k.lower() for k in (m.group(2), m.group(3)) if k}
    host = "pageable" if "pageable" in kinds else "pinned" if "pinned" in kinds else "-"
    return CopyKind(m.group(1), host)


def user_frame(frames: list[str]) -> str | None:
    """"file.py:line" of the innermost frame outside torch and installed libraries."""
    for frame in frames:
        m = _FRAME.match(frame)
        if m and not any(lib in m.group(1) for lib in _LIBRARY):
            return f"{m.group(1)}:{m.group(2)}"
    return None
