"""JSON text -> trace events, three ways: the whole document at once (small files), the traceEvents
array a few MB at a time (bounded memory, orjson speed), or streamed event by event from a file
(memory independent of the file size). Errors become `TraceError` naming the file."""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from typing import Any, Iterator

from perflint.trace.model import TraceError

try:  # optional speed-up: pip install torch-perflint[trace]
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    _orjson = None

_CHUNK = 1 << 20  # characters read at a time when streaming


def parse_whole(raw: bytes, path: str) -> Any:
    """The whole document (orjson when installed); undecodable UTF-8 is replaced, not fatal."""
    if not raw.strip():
        raise TraceError(path, "empty file")
    try:
        return loads(raw)
    except ValueError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:  # bad bytes in a frame name: keep the trace, replace the bytes
            try:
                return json.loads(raw.decode("utf-8", "replace"))
            except ValueError as exc2:
                exc = exc2
        raise TraceError(path, f"not valid JSON ({_first_line(exc)})") from None
    except RecursionError:
        raise TraceError(path, "not valid JSON (nested too deeply)") from None


def loads(raw: bytes) -> Any:
    return _orjson.loads(raw) if _orjson is not None else json.loads(raw)


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


_EVENTS_KEY = re.compile(rb'^\s*\{.*?"traceEvents"\s*:\s*\[', re.DOTALL)
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
PIECE = 2 << 20  # bytes of JSON parsed at a time


class Layout(Exception):
    """The text does not split where expected; parse the document whole instead."""


def piece_events(raw: bytes, meta: dict[str, Any]) -> Iterator[Any]:
    """The traceEvents array parsed a few MB at a time, cut between two events, so that one piece at a
    time exists as Python dicts; the other top-level keys go to `meta`. Raises `Layout` (possibly after
    yielding some events) when the text does not cut cleanly: the caller then parses it whole."""
    m = _EVENTS_KEY.match(raw, 0, 1 << 20)
    if m is None:
        raise Layout
    head = raw[: m.start() + m.group(0).rindex(b'"traceEvents"')].rstrip().rstrip(b",")
    try:
        meta.update(loads(head + b"}"))
        pos = m.end()
        while True:
            cut = _BOUNDARY.search(raw, pos + PIECE)
            if cut is None:
                break
            yield from loads(b"[" + raw[pos: cut.start() + 1] + b"]")
            pos = cut.end() - 1
        rest = raw[pos:].decode("utf-8", "replace")
        last, end = _DECODER.raw_decode(rest, _WS.match(rest).end())
        yield last
        cur = _Cursor(io.StringIO(rest[end:]), "")
        while cur.expect(",]") == ",":
            yield cur.value()
        tail = (cur.buf[cur.pos:] + cur.text.read()).strip()
        if tail != "}":
            meta.update(json.loads("{" + tail.lstrip(",")))
    except (ValueError, TraceError):
        raise Layout from None


# --- streaming: the top-level object is walked key by key, the traceEvents array element by element,
# each element decoded by the C json decoder. Memory stays at one chunk plus the compact trace.

_WS = re.compile(r"[\s]*")
_DECODER = json.JSONDecoder()


class _Cursor:
    def __init__(self, text: io.TextIOBase, path: str):
        self.text, self.path = text, path
        self.buf, self.pos, self.eof = "", 0, False

    def _fill(self) -> None:
        try:
            chunk = self.text.read(_CHUNK)
        except (EOFError, OSError, zlib.error) as exc:
            raise TraceError(self.path, f"truncated or corrupt gzip ({exc})") from None
        if not chunk:
            self.eof = True
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0

    def peek(self) -> str:
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if self.eof:
                return ""
            self._fill()

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            found = repr(c) if c else "end of file"
            raise TraceError(self.path, f"not valid JSON (expected {chars!r}, found {found})")
        self.pos += 1
        return c

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
                if end < len(self.buf) or self.eof:
                    self.pos = end
                    return value
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise TraceError(self.path, f"not valid JSON ({_first_line(exc)})") from None
            self._fill()

    def array(self) -> Iterator[Any]:
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield self.value()
            if self.expect(",]") == "]":
                return


def stream_events(raw: io.BufferedReader, gzipped: bool, path: str, meta: dict[str, Any]) -> Iterator[Any]:
    """The events of a (gzipped) JSON file, decoded one at a time; other top-level keys go to `meta`."""
    binary = gzip.GzipFile(fileobj=raw) if gzipped else raw
    cur = _Cursor(io.TextIOWrapper(binary, encoding="utf-8", errors="replace"), path)
    first = cur.peek()
    if first == "[":
        yield from cur.array()
        return
    if first != "{":
        raise TraceError(path, "not valid JSON" if first not in "\"0123456789-tfn" else
                         "not a PyTorch profiler trace (no traceEvents list)")
    cur.expect("{")
    found = False
    if cur.peek() != "}":
        while True:
            key = cur.value()
            cur.expect(":")
            if key == "traceEvents" and cur.peek() == "[":
                found = True
                yield from cur.array()
            else:
                meta[key] = cur.value()
            if cur.expect(",}") == "}":
                break
    if not found:
        raise TraceError(path, "not a PyTorch profiler trace (no traceEvents list)")
