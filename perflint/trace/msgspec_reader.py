"""The fast reader: msgspec decodes the JSON text straight into small typed structs holding only the
fields `load` reads. Every other key (most of `args`, `pid`, `id`, ...) is skipped in C, never becoming a
Python object, which makes this about three times faster than parsing every event into dicts.

The types are those Kineto writes; an event that does not fit (a string timestamp, an `args` that is
not an object, a non-object event, a missing or unknown "ph", invalid UTF-8) makes `pieces` raise
`Misfit`, and the caller falls back to the general readers of `json_reader`, which accept anything.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Optional, Union

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
        dims: Any = msgspec.field(default=None, name="Input Dims")
        types: Any = msgspec.field(default=None, name="Input type")
        flops: Any = None
        concrete: Any = msgspec.field(default=None, name="Concrete Inputs")

    # One struct per phase ("ph" is the tag that picks it), so that flow ("s", "f") and metadata events,
    # a third of a trace, skip all their keys: complete events ("X") keep what `load` reads, instant ones
    # ("i", legacy "I") the name and the two arguments of a [memory] event, the others nothing. An event
    # without "ph" or with an unknown one does not fit: the general reader then reads the file.
    class XEvent(msgspec.Struct, tag_field="ph", tag="X", gc=False):
        cat: Optional[str] = None
        name: Optional[str] = None
        ts: Optional[Number] = None
        dur: Optional[Number] = None
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

    _DECODER = msgspec.json.Decoder(Document)
    _EVENTS = msgspec.json.Decoder(list[Event])
    _METADATA = msgspec.json.Decoder(Metadata)
    NO_ARGS = Args()
else:  # pragma: no cover
    _DECODER = _EVENTS = _METADATA = NO_ARGS = XEvent = INSTANTS = None

PIECE = 64 << 10  # bytes of JSON decoded at a time: one piece's structs fit in the CPU cache and in the
# memory the previous piece's structs freed (4 MB pieces page-faulted 5x more, 1.5x slower in a fresh process)
HEAD_LIMIT = 1 << 20  # the "traceEvents" key must appear within this many bytes
# After a cut inside an event the rest is decoded at once, as structs all alive together (about 1.6x its
# text): above this size the dict reader reads the file instead.
TYPED_LIMIT = 128 * 2**20
_OBJECT, _LIST = re.compile(rb"\s*\{"), re.compile(rb"\s*\[")
_EVENTS_KEY = re.compile(rb'\s*\{.*?"traceEvents"\s*:\s*\[', re.DOTALL)
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")


class Misfit(Exception):
    """The text does not fit the schema or does not cut cleanly between events."""


SPLIT: list = []  # yielded by `pieces(..., split=N)` after the piece that crosses offset N


def pieces(chunks: Iterable[bytes], meta: dict[str, Any], split: int | None = None,
           tail: bool = False) -> Iterator[list]:
    """The traceEvents array decoded PIECE bytes at a time, cut between two events, as the JSON text
    arrives in `chunks`: the whole text never exists at once, nor do the structs of more than one piece.
    `distributedInfo` and `deviceProperties` go to `meta`. After a cut that lands inside an event ("},{"
    within its args) the rest is decoded at once. Raises `Misfit`, possibly after yielding some pieces,
    when msgspec is not installed, the text does not fit the schema, or that rest exceeds TYPED_LIMIT.
    Errors of the chunks themselves (a corrupt gzip stream) propagate.

    Two readers of one text share it at the first cut at or past text offset `split` (the cuts depend on
    the text and `chunks` alone): the head reader yields `SPLIT` after the piece that ends there (and goes
    on if resumed); the `tail` reader decodes only what follows that cut (nothing if there is no such cut)."""
    if _DECODER is None:
        raise Misfit
    chunks = iter(chunks)
    try:
        buf, pos, listed = _head(chunks, meta)
        base = 0  # offset in the text of buf[0]
        skipping = tail
        for chunk in chunks:
            base += pos
            buf = buf[pos:] + chunk
            pos = 0
            while (cut := _BOUNDARY.search(buf, pos + PIECE)) is not None:
                crossed = split is not None and base + cut.start() >= split
                if skipping:
                    skipping = not crossed
                    pos = cut.end() - 1
                    continue
                try:
                    events = _EVENTS.decode(b"[" + buf[pos: cut.start() + 1] + b"]")
                except msgspec.DecodeError:  # cut inside an event, or past the array's end
                    yield _rest(buf[pos:], chunks, listed, meta)
                    return
                yield events
                pos = cut.end() - 1
                if crossed and not tail:
                    split = None
                    yield SPLIT
        if not skipping:
            yield _rest(buf[pos:], (), listed, meta)
    except (msgspec.DecodeError, ValueError, RecursionError):  # ValidationError is a DecodeError;
        raise Misfit from None  # invalid UTF-8 raises UnicodeDecodeError (a ValueError)


def _head(chunks: Iterator[bytes], meta: dict[str, Any]) -> tuple[bytes, int, bool]:
    """Reads up to the opening bracket of the events: (text so far, position after the bracket, whether
    the document is a bare list of events rather than {"traceEvents": [...], ...})."""
    buf = b""
    for chunk in chunks:
        buf += chunk
        listed = _LIST.match(buf)
        if listed:
            return buf, listed.end(), True
        if not _OBJECT.match(buf) and buf.strip():
            break
        m = _EVENTS_KEY.match(buf, 0, HEAD_LIMIT)
        if m:
            head = buf[: m.start() + m.group(0).rindex(b'"traceEvents"')].rstrip().rstrip(b",")
            _add_metadata(meta, _METADATA.decode(head + b"}"))
            return buf, m.end(), False
        if len(buf) > HEAD_LIMIT:
            break
    raise Misfit


def _rest(text: bytes, more: Iterable[bytes], listed: bool, meta: dict[str, Any]) -> list:
    """The events in `text` and the chunks still to come, to the end of the array, decoded at once as a
    document of their own (with the keys after the array). Raises Misfit above TYPED_LIMIT bytes."""
    parts, size = [text], len(text)
    for chunk in more:
        size += len(chunk)
        if size > TYPED_LIMIT:
            raise Misfit
        parts.append(chunk)
    text = b"".join(parts)
    if listed:
        return _EVENTS.decode(b"[" + text)
    doc = _DECODER.decode(b'{"traceEvents":[' + text)
    _add_metadata(meta, doc)
    return doc.traceEvents


def _add_metadata(meta: dict[str, Any], doc: Any) -> None:
    for key in ("distributedInfo", "deviceProperties"):
        value = getattr(doc, key)
        if value is not None:
            meta[key] = value
