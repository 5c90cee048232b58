"""Read a PyTorch profiler / Kineto Chrome-trace file (plain or gzipped JSON) into a `Trace`.

With msgspec installed (the fast path) the file is read and inflated a few KB at a time and its events
decoded 64 KB of text at a time straight into typed structs of the few fields we read (`msgspec_reader`,
`_normalize_typed`): whatever the file's size, neither its text nor its events ever exist whole. A file
that does not fit that schema, or any file without msgspec, goes to the dict readers of `json_reader`
(orjson when installed): in memory, a few MB at a time, below `STREAM_THRESHOLD` of JSON text, streamed
event by event above it. Each event becomes a compact tuple, whatever the schema. Every failure becomes
one `TraceError` naming the file.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import io
import os
import re
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from perflint.trace import forked, msgspec_reader
from perflint.trace.model import CommInfo, DeviceOp, HostOp, Inputs, RuntimeCall, Trace, TraceError

try:  # optional speed-up (pip install torch-perflint[trace]): ISA-L inflates twice as fast as zlib
    from isal import isal_zlib as _isal
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    _isal = None
_CORRUPT_GZIP = (EOFError, zlib.error, gzip.BadGzipFile) + ((_isal.error,) if _isal is not None else ())

# Bytes of JSON text from which a second process reads half the file. Loading alone (min of 5, in one
# process), the split lost at 9.3 MB (nccl_data, 0.068 against 0.063 s) and won from 14.7 MB (ns_resolution,
# 0.092 against 0.106 s); as a whole `perflint trace`, where the imports overlap the child's half, it won at
# 9.3 MB too (0.351 against 0.383 s, median of 9).
SPLIT_MIN = 8 * 2**20
STREAM_THRESHOLD = 256 * 2**20  # bytes of JSON text above which the dict reader streams the file
TEXT_CHUNK = 64 << 10  # bytes of plain JSON read at a time by the typed reader
GZIP_CHUNK = 4 << 10  # bytes of gzip inflated at a time by the typed reader


# Both schemas: current Kineto categories and the 2021 legacy ones.
_HOST = {"cpu_op": "op", "Operator": "op", "user_annotation": "annotation", "python_function": "python",
         "Python": "python"}
_RUNTIME = {"cuda_runtime", "Runtime", "cuda_driver", "Driver"}
_DEVICE = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
           "gpu_memset": "memset", "Memset": "memset", "cuda_sync": "sync"}
_LEGACY = {"Operator", "Runtime", "Kernel", "Memcpy", "Memset"}
_KEPT = frozenset(_HOST) | _RUNTIME | frozenset(_DEVICE)
# category -> (0 host / 1 runtime / 2 device, kind, legacy schema): one lookup per event in the hot loop
_GROUPS = {**{c: (0, k, c in _LEGACY) for c, k in _HOST.items()}, **{c: (1, None, c in _LEGACY) for c in _RUNTIME},
           **{c: (2, k, c in _LEGACY) for c, k in _DEVICE.items()}}
_STREAM_TID = re.compile(r"(-?\d+)\s*$")


def load_trace(source: str | os.PathLike | Mapping | list, *, stream: bool | None = None,
               processes: int = 1, meanwhile: Callable[[], None] | None = None) -> Trace:
    """A `Trace` from a file path or an already parsed trace (dict with "traceEvents", or a list of events).

    With msgspec the file is read by the typed reader, streamed; with processes=2 (the command's choice),
    a forked child reads the second half of a text over SPLIT_MIN bytes, where `forked` allows, while this
    process calls `meanwhile` (if given) and reads the first half.
    Otherwise, or when the file does not fit the typed schema, by the dict readers: stream=None picks
    their event-by-event streaming for files whose JSON text exceeds STREAM_THRESHOLD; True/False force it."""
    if isinstance(source, (Mapping, list)):
        with gc_paused():
            return _from_document(source, "<trace>")
    path = str(source)
    try:
        with open(path, "rb") as f, gc_paused():
            gzipped = f.read(2) == b"\x1f\x8b"
            f.seek(0)
            trace = _from_typed(f, gzipped, path, processes > 1, meanwhile)
            if trace is not None:
                return trace
            if stream is None:
                stream = _text_size(f, gzipped) > STREAM_THRESHOLD
            f.seek(0)
            if stream:
                from perflint.trace import json_reader  # the fallback (json, orjson): loaded only when needed

                meta: dict[str, Any] = {}
                trace = _normalize(json_reader.stream_events(f, gzipped, path, meta), path)
                _apply_metadata(trace, meta)
                return trace
            raw = _gunzip(f.read()) if gzipped else f.read()
            return _from_bytes(raw, path)
    except _CORRUPT_GZIP as exc:
        raise TraceError(path, f"truncated or corrupt gzip ({exc})") from None
    except OSError as exc:
        raise TraceError(path, exc.strerror or str(exc)) from None


@contextlib.contextmanager
def gc_paused():
    """Building ~10^5 small objects (while loading or analysing) triggers many useless cyclic-GC passes,
    full ones included that walk the whole trace; none of these objects can be cyclic garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _gunzip(data: bytes) -> bytes:
    """gzip.decompress collects the output in blocks and joins them (twice the text at its peak, and
    twice the page faults); zlib (or isal) writes straight into a buffer of the size the trailer gives.
    Both check the CRC and size of the first gzip member and stop after it, so the result counts only
    when it matches the trailer's size and CRC (the last member's); several members (or a size over
    4 GiB) go to gzip.decompress."""
    size = int.from_bytes(data[-4:], "little") if len(data) >= 18 else 0
    if 0 < size <= 1032 * len(data):  # deflate cannot expand more: a corrupt trailer allocates nothing
        inflate = _isal or zlib
        # zlib copies its output unless it fills the buffer exactly; isal, given exactly the size,
        # grows the full buffer before it sees the end of the stream: one byte more spares that copy
        out = inflate.decompress(data, 31, size + (inflate is _isal))
        if len(out) == size and inflate.crc32(out) == int.from_bytes(data[-8:-4], "little"):
            return out
    return gzip.decompress(data)


def _text_size(f: io.BufferedReader, gzipped: bool) -> int:
    """Size of the JSON text; for gzip the trailer's ISIZE (exact below 4 GiB, a hint above)."""
    size = f.seek(0, io.SEEK_END)
    if gzipped and size >= 4:
        f.seek(-4, io.SEEK_END)
        return max(size, int.from_bytes(f.read(4), "little"))
    return size


def _from_typed(f: io.BufferedReader, gzipped: bool, path: str, fork: bool = False,
                meanwhile: Callable[[], None] | None = None) -> Trace | None:
    """The fast path (msgspec, `msgspec_reader.pieces`); None when msgspec is missing or the text does not fit
    the typed schema. With `fork`, a forked child reads the second half (`forked`, `_tail`, `_join`)."""
    meta: dict[str, Any] = {}
    split, child = None, None
    if fork and msgspec_reader.XEvent is not None and (size := _text_size(f, gzipped)) >= SPLIT_MIN \
            and forked.available():
        split = size // 2
        try:
            child = forked.Child(lambda: _tail(path, gzipped, split))
        except OSError:  # cannot fork: read it all here
            split = None
    try:
        if child and meanwhile:
            meanwhile()
        f.seek(0)
        pieces = msgspec_reader.pieces(_text_chunks(f, gzipped), meta, split)
        parts: list[tuple] = []
        trace = _normalize_typed(_until_split(pieces, child, parts) if child else pieces, path)
    except msgspec_reader.Misfit:
        return None
    finally:
        if child:
            child.stop()
    for part in parts:
        _join(trace, meta, *part)
    _apply_metadata(trace, meta)
    return trace


def _until_split(pieces: Iterator[list], child: forked.Child, parts: list[tuple]) -> Iterator[list]:
    """The head's pieces up to the split, where the child's part is added to `parts`. When the child failed,
    or the head never reached the split (a cut inside an event: the rest is read at once), this process
    reads all."""
    for events in pieces:
        if events is msgspec_reader.SPLIT:
            part = child.result()
            if part is not None:
                parts.append(part)
                return
            continue
        yield events


def _tail(path: str, gzipped: bool, split: int) -> tuple:
    """The child's share: what follows the split, normalized as the head is, as plain tuples (marshal's types)."""
    meta: dict[str, Any] = {}
    with open(path, "rb") as f:
        trace = _normalize_typed(msgspec_reader.pieces(_text_chunks(f, gzipped), meta, split, tail=True), path)
    host = [tuple(h) if h.inputs is None else (*h[:6], tuple(h.inputs)) for h in trace.host_ops]
    device = [tuple(d) if d.comm is None else (*d[:7], tuple(d.comm)) for d in trace.device]
    return (host, list(map(tuple, trace.runtime)), device, trace.problems, trace.peak_memory, trace.schema,
            meta)


def _join(trace: Trace, meta: dict[str, Any], host: list, runtime: list, device: list, problems: dict[str, int],
          peak: int | None, schema: str, tail_meta: dict[str, Any]) -> None:
    """The child's part (plain tuples) appended to the head's: as if one process had read the whole file."""
    new = tuple.__new__  # as in `_normalize_typed`
    trace.host_ops += [new(HostOp, h) if h[6] is None else new(HostOp, (*h[:6], new(Inputs, h[6]))) for h in host]
    trace.runtime += map(functools.partial(new, RuntimeCall), runtime)
    trace.device += [new(DeviceOp, d) if d[7] is None else new(DeviceOp, (*d[:7], new(CommInfo, d[7])))
                     for d in device]
    for problem, n in problems.items():
        trace.problems[problem] = trace.problems.get(problem, 0) + n
    if peak is not None and (trace.peak_memory is None or peak > trace.peak_memory):
        trace.peak_memory = peak
    if schema == "legacy":
        trace.schema = "legacy"
    meta.update(tail_meta)


def _text_chunks(f: io.BufferedReader, gzipped: bool) -> Iterator[bytes]:
    """The file's JSON text a few KB at a time: gzip is inflated as it is read, every member, each
    member's CRC checked by the inflater. Small chunks reuse the same memory; inflating the whole
    text at once cost a page fault per 4 KB of it."""
    if not gzipped:
        while block := f.read(TEXT_CHUNK):
            yield block
        return
    inflater = _isal or zlib
    member = inflater.decompressobj(31)
    while block := f.read(1 << 20):
        view = memoryview(block)
        for start in range(0, len(view), GZIP_CHUNK):  # 4 KB of gzip: ~50-100 KB of trace JSON
            data = view[start: start + GZIP_CHUNK]
            while data:
                if member.eof:  # another member follows (`cat a.gz b.gz`), or zero padding
                    if not bytes(data).strip(b"\0"):
                        break
                    member = inflater.decompressobj(31)
                text = member.decompress(data)
                if text:
                    yield text
                data = member.unused_data if member.eof else b""
    if not member.eof:
        raise EOFError("the file ends inside the gzip stream")


def _from_bytes(raw: bytes, path: str) -> Trace:
    """Piecewise when the text allows it (bounded memory), else the whole document at once."""
    from perflint.trace import json_reader  # the fallback (json, orjson): loaded only when needed

    if len(raw) > json_reader.PIECE:
        meta: dict[str, Any] = {}
        try:
            trace = _normalize(json_reader.piece_events(raw, meta), path)
        except json_reader.Layout:
            pass
        else:
            _apply_metadata(trace, meta)
            return trace
    return _from_document(json_reader.parse_whole(raw, path), path)


def _from_document(doc: Any, path: str) -> Trace:
    if isinstance(doc, list):
        events, meta = doc, {}
    elif isinstance(doc, Mapping) and isinstance(doc.get("traceEvents"), list):
        events, meta = doc["traceEvents"], doc
    else:
        raise TraceError(path, "not a PyTorch profiler trace (no traceEvents list)")
    trace = _normalize(events, path)
    _apply_metadata(trace, meta)
    return trace


def _apply_metadata(trace: Trace, meta: Mapping) -> None:
    info = meta.get("distributedInfo")
    if isinstance(info, Mapping):
        trace.rank = _int_or_none(info.get("rank"))
        trace.world_size = _int_or_none(info.get("world_size"))
    props = meta.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], Mapping):
        name = props[0].get("name")
        trace.device_name = name if isinstance(name, str) else None
        trace.device_properties = dict(props[0])


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _int_or(value: Any, default: int) -> int:
    found = _int_or_none(value)
    return default if found is None else found


def _number(value: Any) -> float | None:
    if type(value) is float or type(value) is int:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _stream_of(s: Any, tid: Any) -> int:
    """The stream of a device event: its `stream` argument, else (legacy) the tid "stream 7"."""
    if type(s) is int:
        return s
    if s is None:  # legacy: tid "stream 7"
        s = tid
    if isinstance(s, str):
        m = _STREAM_TID.search(s)
        return int(m.group(1)) if m else -1
    return int(s) if isinstance(s, (int, float)) else -1


def _comm_info(name: Any, in_nelems: Any, dtype: Any, group_size: Any) -> CommInfo | None:
    """From an NCCL kernel's "Collective name", "In msg nelems", "dtype" and "Group size" arguments."""
    if name is None:
        return None
    return CommInfo(str(name), _int_or_none(in_nelems) or 0, str(dtype), _int_or_none(group_size) or 0)


def _peak(peak: float | None, total: Any) -> float | None:
    total = _number(total)
    return total if total is not None and (peak is None or total > peak) else peak


def _normalize(events: Iterable[Any], path: str) -> Trace:
    """One pass over raw events: keep what the figures need as tuples, drop everything else. Malformed
    events of the kinds we keep are dropped or repaired and counted in `trace.problems`."""
    trace = Trace(path)
    host, runtime, device = trace.host_ops, trace.runtime, trace.device
    problems = trace.problems
    names: dict[str, str] = {}  # interning: a trace repeats a few thousand names 100k times
    legacy = False
    peak = None
    items = phased = 0
    for e in events:
        items += 1
        if type(e) is not dict:
            if isinstance(e, Mapping):
                e = dict(e)
            else:
                problems[NOT_AN_OBJECT] = problems.get(NOT_AN_OBJECT, 0) + 1
                continue
        ph = e.get("ph")
        if ph is None:
            problems[NO_PHASE] = problems.get(NO_PHASE, 0) + 1
            continue
        phased += 1
        if ph != "X":
            if (ph == "i" or ph == "I") and e.get("name") == "[memory]":
                args = e.get("args")
                if isinstance(args, Mapping) and args.get("Device Type") == 1:
                    peak = _peak(peak, args.get("Total Allocated"))
            continue
        cat = e.get("cat")
        if cat not in _KEPT:
            continue
        ts, dur, name, tid = e.get("ts"), e.get("dur"), e.get("name"), e.get("tid")
        if not (type(ts) in _NUMBER and type(dur) in _NUMBER and -_MAX_US < ts < _MAX_US and 0 <= dur < _MAX_US
                and type(name) is str and type(tid) in _TID):
            ts, dur = _repair(ts, dur, name, tid, problems)
            if ts is None:
                continue
        name = names.setdefault(name, name)
        args = e.get("args")
        if type(args) is not dict:
            args = {}
        if cat in _DEVICE:
            kind = _DEVICE[cat]
            corr = args.get("correlation", -1)
            if type(corr) is not int:
                corr = _int_or(corr, -1)
            nbytes = args.get("bytes", -1) if kind == "memcpy" or kind == "memset" else 0  # -1: not recorded
            comm = (_comm_info(args.get("Collective name"), args.get("In msg nelems"), args.get("dtype", ""),
                               args.get("Group size"))
                    if kind == "kernel" and name.startswith(("nccl", "rccl")) else None)
            device.append(DeviceOp(name, ts, dur, _stream_of(args.get("stream"), tid), corr, kind,
                                   nbytes if type(nbytes) is int else _int_or(nbytes, -1), comm))
        elif cat in _RUNTIME:
            corr = args.get("correlation", -1)
            if type(corr) is not int:
                corr = _int_or(corr, -1)
            runtime.append(RuntimeCall(name, ts, dur, tid, corr))
        else:
            stack = args.get("Call stack")
            kind = _HOST[cat]
            if kind == "op" and name.startswith("ProfilerStep"):  # legacy: steps are "Operator" events
                kind = "annotation"
            host.append(HostOp(name, ts, dur, tid, kind, stack if type(stack) is str else None,
                               _inputs(args.get("Input Dims"), args.get("Input type"), args.get("flops"),
                                       args.get("Concrete Inputs"))))
        if cat in _LEGACY:
            legacy = True
    if items and not phased:
        raise TraceError(path, "not a PyTorch profiler trace (no event has a 'ph' field)")
    return _finish(trace, peak, legacy)


# What is wrong with an event, as the warning names it; "(dropped)" or how it was read.
NOT_AN_OBJECT = "not a JSON object (dropped)"
NO_PHASE = "without a 'ph' (dropped)"
NO_TS = "without a numeric ts (dropped)"
NO_NAME = "without a string name (dropped)"
BAD_TID = "with a tid that is neither a number nor a string (dropped)"
BAD_DUR = "with a dur that is not a number, or longer than 3,000 years (dropped)"
NO_DUR = "without a dur (read as 0)"
NEGATIVE_DUR = "with a negative dur (read as 0)"
TEXT_NUMBER = "with a ts or dur written as a string (read as a number)"
_MAX_US = 10**17  # microseconds: about 3,000 years; beyond it a time is corrupt (and overflows sums). An int:
# Kineto writes int times, and comparing them with an int bound took the load loop from 55 to 49-52 ms on
# df_index_resolver (min of 9 runs of `_normalize_typed` on the decoded pieces)
_NUMBER = frozenset((int, float))
_TID = frozenset((int, str, float, type(None)))


def _repair(ts: Any, dur: Any, name: Any, tid: Any, problems: dict[str, int]) -> tuple[float | None, float]:
    """(ts, dur) of an event that failed the fast checks, or (None, 0) when it must be dropped; the
    problem found is counted. Both readers call this, so they drop and repair alike."""
    problem, text = None, type(ts) is str or type(dur) is str
    ts = _number(ts)
    number = _number(dur) if dur is not None else None
    if ts is None or not -_MAX_US < ts < _MAX_US:
        problem = NO_TS
    elif type(name) is not str:
        problem = NO_NAME
    elif not isinstance(tid, (int, str, float)) and tid is not None:
        problem = BAD_TID
    elif dur is not None and (number is None or not number < _MAX_US):  # NaN fails `<`
        problem = BAD_DUR
    if problem is not None:
        problems[problem] = problems.get(problem, 0) + 1
        return None, 0
    if dur is None or number < 0:
        problem, number = (NO_DUR if dur is None else NEGATIVE_DUR), 0
    elif text:
        problem = TEXT_NUMBER
    if problem is not None:
        problems[problem] = problems.get(problem, 0) + 1
    return ts, number


def _inputs(dims: Any, types: Any, flops: Any, concrete: Any) -> Inputs | None:
    """What record_shapes / with_flops wrote about an op's arguments, when it wrote anything."""
    if dims is None and flops is None:
        return None
    return Inputs(dims if type(dims) is list else None, types if type(types) is list else None,
                  _number(flops), concrete if type(concrete) is list else None)


def _finish(trace: Trace, peak: float | None, legacy: bool) -> Trace:
    trace.peak_memory = int(peak) if peak is not None else None
    trace.schema = "legacy" if legacy else "kineto"
    return trace


def _normalize_typed(pieces: Iterable[list], path: str) -> Trace:
    """`_normalize` for the structs of `msgspec_reader`, a list of them per piece: same result, but the types
    are already checked (ts and dur are numbers or None, name a string or None, correlation and bytes
    ints) and the struct's type is the phase, so each event costs a few attribute reads. Every struct has
    a "ph", so the "no event has a 'ph' field" error arises only in `_normalize`. Kept apart from
    `_normalize` because this loop is the hot one."""
    trace = Trace(path)
    add_host, add_runtime, add_device = trace.host_ops.append, trace.runtime.append, trace.device.append
    groups, tids, max_us, problems = _GROUPS, _TID, _MAX_US, trace.problems
    complete, instants, no_args = msgspec_reader.XEvent, msgspec_reader.INSTANTS, msgspec_reader.NO_ARGS
    new = tuple.__new__  # builds the NamedTuples without their Python-level __new__ (3x cheaper)
    # Per distinct name (a trace repeats a few thousand names 10^5 times): the one copy kept, and whether it
    # marks a step ("ProfilerStep#3") or a collective kernel ("ncclKernel_AllReduce..."), tested once.
    names: dict[str, tuple[str, bool, bool]] = {}
    legacy = False
    peak = None
    for events in pieces:
        for e in events:
            if type(e) is not complete:
                if type(e) in instants and e.name == "[memory]" and e.args is not None \
                        and e.args.device_type == 1:
                    total = e.args.total_allocated
                    if type(total) is int and (peak is None or total > peak):  # Kineto writes an int
                        peak = total
                    elif type(total) is not int:
                        peak = _peak(peak, total)
                continue
            group = groups.get(e.cat)
            if group is None:
                continue
            ts, dur, name, tid = e.ts, e.dur, e.name, e.tid
            if ts is None or dur is None or name is None or not (-max_us < ts < max_us and 0 <= dur < max_us) \
                    or (type(tid) is not int and type(tid) not in tids):  # msgspec typed ts, dur and name
                ts, dur = _repair(ts, dur, name, tid, problems)
                if ts is None:
                    continue
            known = names.get(name)
            if known is None:
                known = names[name] = (name, name.startswith("ProfilerStep"), name.startswith(("nccl", "rccl")))
            name, step, collective = known
            args = e.args or no_args
            where, kind, old = group
            if where == 0:  # host
                if step and kind == "op":
                    kind = "annotation"
                stack = args.stack
                add_host(new(HostOp, (name, ts, dur, tid, kind, stack if type(stack) is str else None,
                                      None if args.dims is None and args.flops is None else _inputs(
                                          args.dims, args.types, args.flops, args.concrete))))
            elif where == 1:  # runtime
                add_runtime(new(RuntimeCall, (name, ts, dur, tid, args.correlation)))
            else:
                stream = args.stream
                if type(stream) is not int:
                    stream = _stream_of(stream, tid)
                add_device(new(DeviceOp, (name, ts, dur, stream, args.correlation, kind,
                                          args.bytes if kind == "memcpy" or kind == "memset" else 0,
                                          _comm_info(args.collective, args.in_nelems, args.dtype, args.group_size)
                                          if collective and kind == "kernel" else None)))
            if old:
                legacy = True
    return _finish(trace, peak, legacy)


def is_trace_file(path: Path) -> bool:
    """Files a folder argument contributes: *.json and *.json.gz (Kineto names them *.pt.trace.json[.gz])."""
    name = path.name
    return path.is_file() and (name.endswith(".json") or name.endswith(".json.gz"))
