"""Reading a torch.profiler trace's events a piece at a time (load/kineto.py makes the tables).

With msgspec installed, ``traceEvents`` is decoded in pieces of about 8 MB straight into typed
:class:`Event` structs: the fields the loader reads and nothing else (an event's other keys and
``args``' other keys are skipped by the parser, never made into dicts or strings). Only one piece's
events live at a time, and the file is read in blocks, not whole: the peak memory is the tables
the loader builds, not the file nor Python's per-event dicts. The document around the events (the
header: ``deviceProperties``, ``distributedInfo``, versions) is decoded as it is.

How a piece is cut: at a ``}`` followed by ``,`` or ``]``; the piece, from a known event start to
that ``}``, must decode as a list of complete events, which is proof that the cut is between two
top-level events (a cut inside a string or a nested object leaves the piece unbalanced, and an
earlier ``}`` is tried). Whatever does not fit this path (no msgspec; ``NaN`` or other input
msgspec refuses; an event that is no object; a file cut short) is read again whole by the standard
``json`` module, which also makes the error message of a bad file.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

from ..errors import InputError
from . import compressed

try:
    import msgspec
except ImportError:        # pragma: no cover - depends on the environment
    msgspec = None

HINT = "save it again with torch.profiler's export_chrome_trace or tensorboard_trace_handler"
PIECE = 8 << 20            # bytes of events decoded at once
_HEAD_MAX = 64 << 20       # the header before traceEvents is a few kB: past this, read the file whole
_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"
UNSET: Any = msgspec.UNSET if msgspec is not None else object()

if msgspec is not None:
    class Args(msgspec.Struct, gc=False):
        """The ``args`` the loader reads; ``device`` / ``stream`` unset mean the event's pid / tid."""
        correlation: Any = None
        bytes: Any = None
        device: Any = msgspec.UNSET
        stream: Any = msgspec.UNSET
        reserved: Any = msgspec.field(default=None, name="Total Reserved")   # [memory] events (profile_memory)
        device_id: Any = msgspec.field(default=None, name="Device Id")
        device_type: Any = msgspec.field(default=None, name="Device Type")

    class Event(msgspec.Struct, gc=False):
        """One trace event: a missing ``dur`` is 0, a missing ``id`` unset (``null`` is kept as None)."""
        ph: Any = None
        cat: Any = None
        name: Any = ""
        ts: Any = None
        dur: Any = 0
        pid: Any = None
        tid: Any = None
        id: Any = msgspec.UNSET
        args: Args | None = None

    _PIECE = msgspec.json.Decoder(list[Event])
    _DOC = msgspec.json.Decoder()
    NO_ARGS = Args()
else:                      # pragma: no cover - depends on the environment
    class Args:            # the same attributes, made from a dict by the standard parser's path
        __slots__ = ("correlation", "bytes", "device", "stream", "reserved", "device_id", "device_type")

        def __init__(self, correlation=None, bytes=None, device=UNSET, stream=UNSET,  # noqa: A002
                     reserved=None, device_id=None, device_type=None):
            self.correlation, self.bytes, self.device, self.stream = correlation, bytes, device, stream
            self.reserved, self.device_id, self.device_type = reserved, device_id, device_type

    NO_ARGS = Args()


class _Ev:
    """An event read by the standard parser, with :class:`Event`'s attributes."""
    __slots__ = ("ph", "cat", "name", "ts", "dur", "pid", "tid", "id", "args")

    def __init__(self, e: dict):
        g = e.get
        self.ph, self.cat, self.name, self.ts, self.dur = g("ph"), g("cat"), g("name", ""), g("ts"), g("dur", 0)
        self.pid, self.tid, self.id = g("pid"), g("tid"), g("id", UNSET)
        a = g("args")
        self.args = None if not isinstance(a, dict) else Args(
            a.get("correlation"), a.get("bytes"), a.get("device", UNSET), a.get("stream", UNSET),
            a.get("Total Reserved"), a.get("Device Id"), a.get("Device Type"))


class _Unfit(Exception):
    """The file does not fit the streamed path: it is read whole instead."""


def decode(path: str, add: Callable[[list], None], restart: Callable[[], None]) -> tuple[dict, str]:
    """Feed the trace's events to ``add`` (lists of events in file order) -> (the document without
    its events, the parser used). ``restart`` is called before a whole read that follows a streamed
    attempt which already fed some events. Raises InputError when the file is no readable trace."""
    if msgspec is not None:
        fed = [0]

        def feed(events: list) -> None:
            fed[0] += 1
            add(events)
        try:
            return _stream(path, feed), "msgspec (streamed)"
        except _Unfit:
            if fed[0]:
                restart()
        except RecursionError:
            raise _too_deep(path) from None
    doc = _whole(path)
    events = doc.pop("traceEvents")
    for i in range(0, len(events), 50_000):
        add([_Ev(e) for e in events[i:i + 50_000] if isinstance(e, dict)])
    return doc, "json"


def _too_deep(path: str) -> InputError:
    return InputError("this JSON file nests arrays / objects deeper than a parser can follow (thousands of "
                      "levels; a trace nests 3); not read", path, HINT)


# the document's own key, not the text of an escaped string (``\"traceEvents\": [`` inside a name)
_EVENTS_KEY = re.compile(rb'(?<!\\)"traceEvents"\s*:')


def whole_max() -> int:
    """The largest trace read whole by the standard parser (``NSX_JSON_WHOLE_MAX_BYTES``, 2 GiB): it holds
    about 10 bytes of Python objects per byte of JSON. Bigger traces are streamed (msgspec) or refused."""
    import os

    return int(float(os.environ.get("NSX_JSON_WHOLE_MAX_BYTES") or (2 << 30)))


def _whole(path: str) -> dict:
    data = compressed.read_all(path, whole_max(), "a trace the streamed parser could not read (NaN, an event "
                                                  "that is no object, a file cut short, data after its end)",
                              "if it ends in NUL bytes or other data after the JSON, cut that off; or " + HINT)
    keys: list[int] = []

    def count(pairs):                       # called for each object, the document's own last
        keys.append(sum(k == "traceEvents" for k, _ in pairs))
        return dict(pairs)
    try:                                    # the slow hook only when the key is written twice somewhere
        twice = len(_EVENTS_KEY.findall(data)) > 1
        doc = json.loads(data, object_pairs_hook=count) if twice else json.loads(data)
    except RecursionError:
        raise _too_deep(path) from None
    except (ValueError, UnicodeDecodeError) as e:
        what = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        raise InputError(f"this torch.profiler trace is not valid JSON ({what}; the file may be cut)",
                         path, HINT) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise InputError("this JSON file is not a torch.profiler trace (no traceEvents list)", path, HINT)
    if keys and keys[-1] > 1:
        raise InputError("'traceEvents' appears twice in this trace: which list is the trace cannot be told "
                         "(JSON readers keep either one)", path, HINT)
    return doc


def _stream(path: str, add: Callable[[list], None]) -> dict:
    r = _Reader(path)
    m = None
    while m is None and not r.eof and len(r.buf) < _HEAD_MAX:
        r.more(len(r.buf) + (1 << 20))
        m = _EVENTS.search(r.buf)
    if m is None:
        raise _Unfit
    head = r.buf[:m.end()]
    head = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
    r.buf, pos, first = r.buf[m.end():], 0, True
    while True:
        r.more(pos + 1)
        pos = _skip(r.buf, pos)
        if pos >= len(r.buf):
            raise _Unfit                   # cut inside the events: the whole read says so
        if r.buf[pos:pos + 1] == b"]":
            if not first:
                raise _Unfit               # ``,]`` is no JSON
            break
        cut = r.piece(pos, add)
        r.buf = r.buf[cut:]                # the events decoded, the rest kept
        r.more(1)
        pos = _skip(r.buf, 0)
        if r.buf[pos:pos + 1] == b",":
            pos, first = pos + 1, False
        elif r.buf[pos:pos + 1] == b"]":
            break
        else:
            raise _Unfit
    parts, have = [r.buf[pos:]], len(r.buf) - pos
    for piece in r.src:                    # ``]`` and what follows the events: a few kB (a NUL tail is not read on)
        parts.append(piece)
        have += len(piece)
        if have > _HEAD_MAX:
            raise _Unfit
    tail = b"".join(parts)
    try:
        doc = _DOC.decode(head + tail)
    except msgspec.DecodeError:
        raise _Unfit from None
    if not isinstance(doc, dict) or doc.get("traceEvents") != []:
        raise _Unfit                       # the match was not the document's own traceEvents
    del doc["traceEvents"]
    return doc


class _Reader:
    """The file's bytes from where the events not yet decoded begin."""

    def __init__(self, path: str):
        self.src, self.buf, self.eof = compressed.blocks(path), b"", False

    def more(self, need: int) -> None:
        """Read until ``buf`` holds ``need`` bytes or the file ends."""
        parts, have = [self.buf], len(self.buf)
        while have < need and not self.eof:
            piece = next(self.src, None)
            if piece is None:
                self.eof = True
            else:
                parts.append(piece)
                have += len(piece)
        if len(parts) > 1:
            self.buf = b"".join(parts)

    def piece(self, pos: int, add: Callable[[list], None]) -> int:
        """Decode the events from ``pos`` (an event's start) up to a cut near ``PIECE`` bytes on,
        give them to ``add`` -> the offset just past the last one."""
        size, failed = PIECE, 0
        while True:
            self.more(pos + size + 256)    # 256: room to see what follows a cut
            buf = self.buf
            hi = min(len(buf), pos + size)
            c = _cut(buf, pos, hi)
            while c is not None and failed < 16:
                try:
                    events = _PIECE.decode(b"[" + buf[pos:c + 1] + b"]")
                except msgspec.ValidationError:
                    raise _Unfit from None   # an event that is no object, an args that is no object
                except msgspec.DecodeError:
                    failed += 1              # the cut was inside an event: try an earlier one
                    c = _cut(buf, pos, c)
                    continue
                add(events)
                return c + 1
            if failed >= 16 or (self.eof and hi >= len(buf)):
                raise _Unfit
            size *= 2                        # an event longer than the piece


def _cut(buf: bytes, lo: int, hi: int) -> int | None:
    """The last ``}`` in ``buf[lo:hi]`` followed (after blanks) by ``,`` or ``]``."""
    while True:
        c = buf.rfind(b"}", lo, hi)
        if c < 0:
            return None
        j = _skip(buf, c + 1)
        if j < len(buf) and buf[j] in b",]":
            return c
        hi = c


def _skip(buf: bytes, pos: int) -> int:
    while pos < len(buf) and buf[pos] in _WS:
        pos += 1
    return pos
