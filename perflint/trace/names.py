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
from perflint.trace.model import DeviceOp, HostOp, RuntimeCall, Trace

COMPUTE, COMMUNICATION, MEMCPY, MEMSET = "compute", "communication", "memcpy", "memset"
CLASSES = (COMPUTE, COMMUNICATION, MEMCPY, MEMSET)

_COLLECTIVE = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
# Communication kernels by name: NCCL/RCCL/MSCCL/oneCCL, PyTorch symmetric-memory (multimem, one-shot and
# two-shot all-reduce), the custom all-reduce of vLLM/SGLang (cross_device_reduce_1stage/2stage, quick
# reduce) and TensorRT-LLM (oneShotAllReduceKernel, twoShot..., lamport), DeepEP's dispatch/combine.
_COMM_KERNEL = re.compile(
    r"^(?:void\s+)?(?:nccl|rccl|msccl|oneccl|ccl_)|mscclpp|symmetric_memory|multimem|"
    r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|one_?shot|two_?shot|lamport|"
    r"cross_device_reduce|custom_?all_?reduce|quick_?reduce|deep_ep::[\w:]*(?:dispatch|combine)", re.IGNORECASE)
# The collective a communication kernel runs, from its name.
_KIND_IN_NAME = [(re.compile(p, re.IGNORECASE), kind) for p, kind in [
    (r"reduce_?scatter", "ReduceScatter"), (r"all_?gather", "AllGather"), (r"all_?to_?all|dispatch|combine", "AllToAll"),
    (r"all_?reduce|cross_device_reduce|quick_?reduce|one_?shot|two_?shot|lamport", "AllReduce")]]
# Host ops that launch collectives: a kernel with an unrecognised name launched inside one is communication.
COLLECTIVE_OPS = re.compile(r"^(?:c10d::|c10d_functional::|_c10d_functional::|symm_mem::|record_param_comms$|"
                            r"nccl:|rccl:|gloo:|_C_custom_ar::|vllm::all_reduce|trtllm::allreduce|"
                            r"sgl_kernel::all_reduce)")
# Host events of the input pipeline: DataLoader iteration, worker fetches, collate, pinning.
LOADER = re.compile(r"DataLoader|dataloader|_next_data|collate|pin_memory", re.IGNORECASE)
# What a compute kernel does, from its name (first match wins): the roofline's kernel classes.
KERNEL_KINDS = ("gemm", "convolution", "attention", "normalization", "reduction", "elementwise", "embedding",
                "copy", "other")
_KIND_PATTERNS = [(re.compile(p, re.IGNORECASE), kind) for p, kind in [
    (r"flash|fmha|attention|attn|sdpa", "attention"),
    (r"conv|fprop|dgrad|wgrad|winograd|implicit_gemm|scudnn|cudnn::(?!bn_|ops::n)", "convolution"),
    (r"(?<!fb)gemm|gemv|Cijk_|cublas|cutlass|matmul|splitKreduce|wgmma|_mm_|_mm$|bmm", "gemm"),
    (r"norm|bn_fw|bn_bw|softmax", "normalization"),
    (r"reduce|scan|cumsum|argmax|argmin|sum_kernel|triton_red|triton_per", "reduction"),
    (r"elementwise|pointwise|triton_poi|unary|binary|fill_kernel|dropout", "elementwise"),
    (r"embedding|index|gather|scatter|lookup|permute|bucketize|unique|sort", "embedding"),
    (r"copy|transpose|nchwToNhwc|nhwcToNchw|cat_|CatArray|memcpy|layout", "copy"),
]]
_MEMCPY = re.compile(r"^Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?")
_FRAME = re.compile(r"^\s*(.+?\.py)\((\d+)\)")
_LIBRARY = ("/site-packages/", "/dist-packages/", "/torch/", "<built-in", "/lib/python")


@functools.lru_cache(maxsize=4096)
def class_of(name: str, kind: str) -> str:
    """By name alone; `device_columns` also makes communication of an unrecognised kernel launched inside
    a collective op."""
    if kind == "memcpy":
        return MEMCPY
    if kind == "memset":
        return MEMSET
    if name.startswith(("nccl", "rccl")) or _COMM_KERNEL.search(name):
        return COMMUNICATION
    return COMPUTE


@functools.lru_cache(maxsize=4096)
def kernel_kind(name: str) -> str:
    """gemm, convolution, attention, normalization, reduction, elementwise, embedding, copy or other."""
    for pattern, kind in _KIND_PATTERNS:
        if pattern.search(name):
            return kind
    return "other"


def collective_name(op: DeviceOp) -> str:
    """"allreduce", "all_to_all", ... from the kernel args when recorded, else from the kernel name."""
    if op.comm is not None and op.comm.collective:
        return op.comm.collective
    m = _COLLECTIVE.match(op.name)
    if m:
        return m.group(1)
    for pattern, kind in _KIND_IN_NAME:
        if pattern.search(op.name):
            return kind
    return op.name.split("(")[0]


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


def source_line(chain: list[HostOp]) -> str | None:
    """"file.py:line" of the user code around an event, from the host events enclosing it (outermost
    first): its Python frames (with_stack=True), else the legacy "Call stack" of the innermost op that has one."""
    frames = [h.name for h in reversed(chain) if h.kind == "python"]
    found = user_frame(frames) if frames else None
    if found:
        return found
    for h in reversed(chain):
        if h.stack:
            found = user_frame(h.stack.split(";"))
            if found:
                return found
    return None
