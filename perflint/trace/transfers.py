"""Host<->device copies: count and bytes by direction and by host memory kind (pageable vs pinned)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from perflint.trace.model import Trace
from perflint.trace.names import copy_kind

HOST_DEVICE = ("HtoD", "DtoH")


@dataclass
class TransferRow:
    """Host/device copies of one direction and host memory kind."""

    direction: str
    host_memory: str
    count: int
    bytes: int | None  # None when some copy's size is not recorded (e.g. ROCm traces)
    time_us: float


@dataclass
class TransferFigures:
    """Host/device copies: counts, bytes and the pageable ones."""

    rows: list[TransferRow]
    transfers: int  # host<->device copies (HtoD + DtoH); DtoD/PtoP are device-side and not counted
    transfer_bytes: int | None
    pageable: int  # host<->device copies from/to pageable memory: they cannot overlap with compute


def transfer_figures(trace: Trace) -> TransferFigures:
    acc: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, 0.0])
    for op in trace.device:
        if op.kind == "memcpy":
            kind = copy_kind(op.name)
            row = acc[kind]
            row[0] += 1
            row[1] = None if row[1] is None or op.bytes < 0 else row[1] + op.bytes
            row[2] += op.dur
    rows = [TransferRow(d, m, c, b, t) for (d, m), (c, b, t) in sorted(acc.items())]
    host = [r for r in rows if r.direction in HOST_DEVICE]
    sizes = [r.bytes for r in host]
    return TransferFigures(rows, sum(r.count for r in host), None if None in sizes else sum(sizes),
                           sum(r.count for r in host if r.host_memory == "pageable"))
