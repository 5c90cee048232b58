"""The compact, schema-independent form of one trace that every figure is computed from.

Loading turns each Chrome-trace event dict into a small tuple and drops the dict, so a trace costs
a fraction of its JSON size in memory and the analysis never sees schema differences (legacy
`Operator`/`Runtime`/`Kernel` categories, HIP names, string tids, missing fields).
Times are microseconds (float), as in the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


class TraceError(Exception):
    """A file that cannot be read as a PyTorch profiler trace (missing, truncated, not JSON, not a trace)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class HostOp(NamedTuple):
    """A CPU-side span: an aten op ("op"), a record_function / ProfilerStep ("annotation") or a
    Python frame ("python")."""

    name: str
    ts: float
    dur: float
    tid: object
    kind: str
    stack: str | None = None  # legacy "Call stack" argument, when recorded with with_stack=True
    inputs: "Inputs | None" = None  # argument shapes and types, when recorded with record_shapes=True


class Inputs(NamedTuple):
    """An op's arguments as record_shapes / with_flops write them: enough to count its FLOPs and bytes."""

    dims: list | None  # "Input Dims": one shape (a list of ints) per argument, [] for scalars and None
    types: list | None  # "Input type": "float", "c10::Half", "Scalar", ... (newer traces only)
    flops: float | None  # "flops": what the profiler counted itself (with_flops=True)
    concrete: list | None  # "Concrete Inputs": scalar arguments as text ("[2, 2]" strides, "True"); newer traces


class RuntimeCall(NamedTuple):
    """A CUDA/HIP runtime or driver API call on a CPU thread; `correlation` links it to device work."""

    name: str
    ts: float
    dur: float
    tid: object
    correlation: int


class DeviceOp(NamedTuple):
    """Work or a wait recorded on the device: kind is "kernel", "memcpy", "memset" or "sync"
    (a `cuda_sync` record of the device side of a host synchronisation)."""

    name: str
    ts: float
    dur: float
    stream: int
    correlation: int
    kind: str
    bytes: int = 0  # copies and memsets; -1 when the trace does not record it
    comm: "CommInfo | None" = None


class CommInfo(NamedTuple):
    """What NCCL kernels carry in their args (newer Kineto): enough to size a collective."""

    collective: str
    in_nelems: int
    dtype: str
    group_size: int


@dataclass
class Trace:
    """One rank's trace: its events by kind plus the metadata the report names."""

    path: str
    rank: int | None = None
    world_size: int | None = None
    host_ops: list[HostOp] = field(default_factory=list)
    runtime: list[RuntimeCall] = field(default_factory=list)
    device: list[DeviceOp] = field(default_factory=list)
    peak_memory: int | None = None  # max "Total Allocated" of a GPU [memory] event
    device_name: str | None = None
    schema: str = "kineto"  # or "legacy"
    device_properties: dict | None = None  # the first entry of deviceProperties (name, memory, SMs, ...)
    problems: dict[str, int] = field(default_factory=dict)  # malformed events: what was wrong -> how many
    cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # derived indexes

    @property
    def label(self) -> str:
        return self.path if self.rank is None else f"{self.path} (rank {self.rank})"

    @property
    def has_device(self) -> bool:
        return bool(self.device)
