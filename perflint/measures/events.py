"""The one table that maps profiler events to metrics, and metrics to the perflint rule that names them.

Both halves of the product read it: the pytest plugin (CPU profiler events and Python-level calls seen
by a TorchFunctionMode) and `perflint trace` (Kineto GPU traces). A GPU-only measure has a CPU
counterpart here: on a CPU-only machine `aten::_local_scalar_dense` is the op that, on a GPU, copies a
scalar back and blocks on `cudaStreamSynchronize`. The README's "Event mapping" table is generated from
`EVENTS`, so the documentation cannot drift from the code.
"""

from __future__ import annotations

from typing import NamedTuple



class EventMapping(NamedTuple):
    """A profiler event name, the metric it counts toward and the rule that explains it."""

    name: str  # exact event name; a trailing "*" matches a prefix
    source: str  # "cpu_op", "python", "gpu_runtime", "gpu_kernel" or "gpu_memcpy"
    metric: str | None  # the metric it counts toward, or None when it only names the rule
    rule: str | None  # the perflint rule code that describes the cause
    note: str = ""


SYNC = "syncs"
TRANSFER = "transfers"
COLLECTIVES = "collectives"
# A collective backend's own events: `gloo:all_reduce` on its worker thread, `nccl:...` annotations. The
# same collective as its `c10d::` op on the calling thread, so counted only where no c10d op was seen.
COLLECTIVE_BACKENDS = ("gloo:", "nccl:", "mpi:", "ucc:")

EVENTS: tuple[EventMapping, ...] = (
    # CPU profiler: aten ops that force a device-to-host sync when their input lives on a GPU.
    EventMapping("aten::_local_scalar_dense", "cpu_op", SYNC, "PFL101",
                 "copies one scalar to the host: on a GPU a cudaMemcpyAsync DtoH + cudaStreamSynchronize"),
    EventMapping("aten::item", "cpu_op", None, "PFL101", "`.item()`; the sync is its _local_scalar_dense child"),
    EventMapping("aten::is_nonzero", "cpu_op", None, "PFL105",
                 "`if t:`, `bool(t)`, `while loss > eps`; the sync is its _local_scalar_dense child"),
    EventMapping("aten::nonzero", "cpu_op", SYNC, "PFL107", "output size depends on data: the host waits for the count"),
    EventMapping("aten::masked_select", "cpu_op", SYNC, "PFL107", "data-dependent output size"),
    EventMapping("aten::_unique2", "cpu_op", SYNC, "PFL107", "torch.unique: data-dependent output size"),
    EventMapping("aten::unique_dim", "cpu_op", SYNC, "PFL107", "torch.unique(dim=...): data-dependent output size"),
    EventMapping("aten::unique_consecutive", "cpu_op", SYNC, "PFL107", "data-dependent output size"),
    EventMapping("aten::repeat_interleave", "cpu_op", SYNC, "PFL107",
                 "with tensor repeats and no output_size the host must read the total"),
    EventMapping("c10d::*", "cpu_op", COLLECTIVES, None,
                 "a collective call on the calling thread; its gloo:/nccl: worker event is not counted again"),
    # Python-level calls that the CPU profiler cannot see (no aten op, or a no-op on a CPU tensor).
    EventMapping("Tensor.tolist", "python", SYNC, "PFL102", "copies the whole tensor to the host"),
    EventMapping("Tensor.cpu", "python", SYNC, "PFL103", "a device-to-host copy that blocks; a no-op on a CPU tensor"),
    EventMapping("Tensor.numpy", "python", None, "PFL103",
                 "raises on a device tensor, so the copy is the `.cpu()` before it; `numpy(force=True)` "
                 "copies itself and counts as `Tensor.cpu`"),
    EventMapping("Tensor.to", "python", TRANSFER, "PFL201",
                 "counted as a transfer when it names a device; to the CPU it is also a sync"),
    EventMapping("Tensor.cuda", "python", TRANSFER, "PFL201", "host-to-device copy"),
    EventMapping("torch.cuda.synchronize", "python", SYNC, "PFL109", "waits for all queued device work"),
    # Python-level calls that only name the rule: the sync is the aten op they run (counted above), and
    # the call names the cause better than the op (`if loss < eps` is PFL105, not PFL101).
    EventMapping("Tensor.item", "python", None, "PFL101", "`.item()`"),
    EventMapping("Tensor.__bool__", "python", None, "PFL105", "`if t:`, `while t > eps:`, `bool(t)`"),
    EventMapping("Tensor.__float__", "python", None, "PFL104", "`float(t)`"),
    EventMapping("Tensor.__int__", "python", None, "PFL104", "`int(t)`"),
    EventMapping("Tensor.__index__", "python", None, "PFL104", "a tensor used as an index or range bound"),
    EventMapping("Tensor.__format__", "python", None, "PFL106", "f-string or format() of a tensor"),
    EventMapping("Tensor.__repr__", "python", None, "PFL106", "print/repr of a tensor"),
    EventMapping("Tensor.__str__", "python", None, "PFL106", "str() of a tensor"),
    EventMapping("torch.tensor", "python", None, "PFL108", "torch.tensor(list of tensors) reads every element"),
    # Kineto GPU traces.
    EventMapping("cudaStreamSynchronize", "gpu_runtime", SYNC, "PFL101", "host blocks until the stream drains"),
    EventMapping("cudaDeviceSynchronize", "gpu_runtime", SYNC, "PFL109", "host blocks until the device drains"),
    EventMapping("cudaEventSynchronize", "gpu_runtime", SYNC, "PFL109", "host blocks on an event"),
    EventMapping("cudaMemcpy", "gpu_runtime", SYNC, "PFL103", "synchronous copy"),
    EventMapping("hipStreamSynchronize", "gpu_runtime", SYNC, "PFL101", "ROCm name of cudaStreamSynchronize"),
    EventMapping("hipDeviceSynchronize", "gpu_runtime", SYNC, "PFL109", "ROCm name of cudaDeviceSynchronize"),
    EventMapping("hipEventSynchronize", "gpu_runtime", SYNC, "PFL109", "ROCm name of cudaEventSynchronize"),
    EventMapping("hipMemcpy", "gpu_runtime", SYNC, "PFL103", "synchronous copy"),
    EventMapping("hipMemcpyWithStream", "gpu_runtime", SYNC, "PFL103", "synchronous copy on a stream"),
    EventMapping("Memcpy HtoD*", "gpu_memcpy", TRANSFER, "PFL201", "host-to-device copy"),
    EventMapping("Memcpy DtoH*", "gpu_memcpy", TRANSFER, "PFL103", "device-to-host copy"),
    EventMapping("*", "gpu_kernel", "kernels", None, "every kernel event counts; on the CPU, ops count instead"),
)

_EXACT = {(e.source, e.name): e for e in EVENTS if not e.name.endswith("*")}
_PREFIX = [e for e in EVENTS if e.name.endswith("*")]


def lookup(name: str, source: str) -> EventMapping | None:
    """The mapping for an event name from a given source, or None when it is not in the table."""
    hit = _EXACT.get((source, name))
    if hit is not None:
        return hit
    for e in _PREFIX:
        if e.source == source and name.startswith(e.name[:-1]):
            return e
    return None


def markdown_table() -> str:
    rows = ["| event | seen by | metric | rule | meaning |", "|---|---|---|---|---|"]
    for e in EVENTS:
        rows.append(f"| `{e.name}` | {e.source} | {e.metric or '-'} | {e.rule or '-'} | {e.note} |")
    return "\n".join(rows)
