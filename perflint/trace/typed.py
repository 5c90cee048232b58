"""The fast reader: msgspec decodes the JSON text straight into small typed structs holding only the
fields `load` reads. Every other key (most of `args`, `pid`, `id`, ...) is skipped in C, never becoming a
Python object, which makes this about three times faster than parsing every event into dicts.

The types are those Kineto writes; an event that does not fit (a string timestamp, an `args` that is
not an object, a non-object event, a missing or unknown "ph", invalid UTF-8) makes `pieces` raise
`Misfit` and `decode` return None, and the caller falls back to the general readers of `jsontext`,
which accept anything.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Optional, Union

try:  # optional speed-up: pip install torch-perflint[trace]
    import msgspec
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    msgspec = None

Number = Union[int, float]


if msgspec is not None:  # gc=False: the structs hold no containers, the cyclic GC need not track them

    class Args(msgspec.Struct, gc=False):
        correlation: int = -1
        stream: Union[int, str, None] = None
        bytes: int = -1
        collective: Any = msgspec.field(default=None, name="Collective name")
        in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
        dtype: Any = ""
        group_size: Any = msgspec.field(default=None, name="Group size")
        stack: Any = msgspec.field(default=None, name="Call stack")

    # One struct per phase ("ph" is the tag that picks it), so that flow ("s", "f") and metadata events,
    # a third of a trace, skip all their keys: complete events ("X") keep what `load` reads, instant ones
    # ("i", legacy "I") the name and the two arguments of a [memory] event, the others nothing. An event
    # without "ph" or with an unknown one does not fit: the general reader then reads the file.
    class XEvent(msgspec.Struct, tag_field="ph", tag="X", gc=False):
        cat: Optional[str] = None
        name: Optional[str] = None
        ts: Optional[Number] = None
        dur: Optional[Number] = 0
        tid: Any = None
        args: Optional[Args] = None

    class MemoryArgs(msgspec.Struct, gc=False):
        device_type: Any = msgspec.field(default=None, name="Device Type")
        total_allocated: Any = msgspec.field(default=None, name="Total Allocated")

    class Instant(msgspec.Struct, tag_field="ph", tag="i", gc=False):
        name: Any = None
        args: Optional[MemoryArgs] = None

    class LegacyInstant(Instant, tag="I"):
        pass

    INSTANTS = (Instant, LegacyInstant)
    _OTHERS = tuple(msgspec.defstruct("Phase" + ph, [], tag_field="ph", tag=ph, gc=False)
                    for ph in "BECbnestfSTpFPNODMVvRc()")  # all of the Chrome trace event format
    Event = Union[(XEvent, *INSTANTS, *_OTHERS)]

    class Document(msgspec.Struct):
        traceEvents: list[Event]
        distributedInfo: Any = None
        deviceProperties: Any = None

    class Metadata(msgspec.Struct):
        distributedInfo: Any = None
        deviceProperties: Any = None

    _DECODER = msgspec.json.Decoder(Union[Document, list[Event]])
    _EVENTS = msgspec.json.Decoder(list[Event])
    _METADATA = msgspec.json.Decoder(Metadata)
    NO_ARGS = Args()
else:  # pragma: no cover
    _DECODER = _EVENTS = _METADATA = NO_ARGS = XEvent = INSTANTS = None

PIECE = 128 << 10  # bytes of JSON decoded at a time: the structs of one piece fit in the CPU cache and in
# memory freed by the previous piece (4 MB pieces page-faulted 5x more, 1.5x slower in a fresh process)
# Decoding text whole holds every event's struct at once, about 1.6x the text (plus the text): above this
# size that would need more than the dict reader needs at load.STREAM_THRESHOLD (text + compact trace).
TYPED_LIMIT = 128 * 2**20
_EVENTS_KEY = re.compile(rb'^\s*\{.*?"traceEvents"\s*:\s*\[', re.DOTALL)
_LIST = re.compile(rb"^\s*\[")
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")


class Misfit(Exception):
    """The text does not fit the schema or does not cut cleanly between events."""


def decode(raw: bytes) -> tuple[list, dict[str, Any]] | None:
    """(events, metadata) of a whole JSON document, or None when msgspec is not installed or the text
    does not fit the schema (the general readers then handle it, errors included)."""
    if _DECODER is None:
        return None
    try:
        doc = _DECODER.decode(raw)
    except (msgspec.DecodeError, ValueError, RecursionError):  # ValidationError is a DecodeError;
        # invalid UTF-8 raises UnicodeDecodeError (a ValueError)
        return None
    if isinstance(doc, list):
        return doc, {}
    return doc.traceEvents, {"distributedInfo": doc.distributedInfo, "deviceProperties": doc.deviceProperties}


def pieces(raw: bytes, meta: dict[str, Any]) -> Iterator[list]:
    """The traceEvents array decoded PIECE bytes at a time, cut between two events, so that the structs of
    one piece exist at a time (less memory, and the same memory reused: a third of the whole-document
    decode's time went to page faults); `distributedInfo` and `deviceProperties` go to `meta`. After a
    cut that lands inside an event ("},{" within its args), the rest is decoded at once. Raises `Misfit`,
    possibly after yielding some pieces, when msgspec is not installed, the text does not fit the
    schema, or that rest exceeds TYPED_LIMIT."""
    if _DECODER is None:
        raise Misfit
    try:
        m = _EVENTS_KEY.match(raw, 0, 1 << 20)
        listed = m is None  # a bare list of events rather than {"traceEvents": [...], ...}
        if listed:
            m = _LIST.match(raw)
            if m is None:
                raise Misfit
        else:
            head = raw[: m.start() + m.group(0).rindex(b'"traceEvents"')].rstrip().rstrip(b",")
            _add_metadata(meta, _METADATA.decode(head + b"}"))
        pos = m.end()
        while True:
            cut = _BOUNDARY.search(raw, pos + PIECE)
            if cut is None:
                break
            try:
                events = _EVENTS.decode(b"[" + raw[pos: cut.start() + 1] + b"]")
            except msgspec.DecodeError:  # cut inside an event, or past the array's end: the rest at once
                break
            yield events
            pos = cut.end() - 1
        yield _rest(raw, pos, listed, meta)
    except (msgspec.DecodeError, ValueError, RecursionError):
        raise Misfit from None


def _rest(raw: bytes, pos: int, listed: bool, meta: dict[str, Any]) -> list:
    """The events from `pos` to the end of the array, decoded as a document of their own (with the keys
    after the array). Raises Misfit when that is too much text to hold as structs all at once."""
    if len(raw) - pos > TYPED_LIMIT:
        raise Misfit
    if listed:
        return _EVENTS.decode(b"[" + raw[pos:])
    doc = _DECODER.decode(b'{"traceEvents":[' + raw[pos:])
    _add_metadata(meta, doc)
    return doc.traceEvents


def _add_metadata(meta: dict[str, Any], doc: Any) -> None:
    for key in ("distributedInfo", "deviceProperties"):
        value = getattr(doc, key)
        if value is not None:
            meta[key] = value
