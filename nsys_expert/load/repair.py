"""Bytes around a CSV report that nsys never writes, undone in memory (never in the file), each said once.

- a UTF-8 byte-order mark at the start (a file re-saved by a Windows editor or Excel): dropped;
- old Mac line endings (CR only, no LF anywhere): read as line ends;
- bytes that are not text after the last row (a file appended to, or a download with garbage at
  its end): the rows before them are read and the warning names the line where the junk begins;
- a tail of NUL bytes (space reserved and never written, a crash, a sparse 20 GB tail): found from
  the end (``SEEK_HOLE`` skips a sparse tail at once), never read into memory.

``plan`` looks at the file's first and last bytes only; the whole file is read into memory only when
one of these was found (a clean report is read by Polars from its path, as before).
"""
from __future__ import annotations

import csv
import os

from ..notes import Note

BOM = b"\xef\xbb\xbf"
TAIL_BYTES = 64 * 1024
# bytes that never occur in nsys's CSV text (tab, LF and CR do)
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 13)) + b"\x7f"


def _junk_line(line: bytes) -> bool:
    if any(b in _CONTROL for b in line):
        return True
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def junk_start(data: bytes, ncols: int, delim: str) -> int | None:
    """The byte offset where the junk after the last row begins (``data``: the file's tail, starting at
    a line start), or None when the tail ends in text rows. The junk run is the trailing lines that are
    not clean text or not rows of the table; at least one of them must hold a byte that is not text."""
    lines = data.split(b"\n")
    pos = len(data)
    start, binary = None, False
    for line in reversed(lines):
        pos -= len(line)
        bad = _junk_line(line)
        if not bad and line.strip(b"\r \t"):
            try:
                cells = next(csv.reader([line.decode("utf-8").rstrip("\r")], delimiter=delim))
                bad = len(cells) != ncols
            except (csv.Error, StopIteration):
                bad = True
            if not bad:
                break
        binary = binary or _junk_line(line)
        start = pos
        pos -= 1       # the \n before this line
    return start if binary else None


def clean_prefix(head: bytes) -> bytes:
    """The complete lines of ``head`` before the first line that is not text, when nothing like a row
    comes after it (for the sniff of a small file whose first bytes already reach the junk at its end);
    else b"" (binary data inside the table is not junk after it: the file is binary)."""
    out = 0
    lines = head.split(b"\n")
    for k, line in enumerate(lines[:-1]):
        if _junk_line(line):
            rows_after = any(not _junk_line(x) and x.count(b",") + x.count(b"\t") >= 3 for x in lines[k + 1:])
            return b"" if rows_after else head[:out]
        out += len(line) + 1
    return head[:out]


def content_end(fh, size: int) -> int:
    """Where the file's content ends: before its trailing NUL bytes (``size`` when there are none). A sparse
    tail (a hole to the end) is skipped with SEEK_HOLE; written NULs are scanned back in 1 MiB pieces."""
    end = size
    fd = fh.fileno()
    try:
        hole = os.lseek(fd, 0, os.SEEK_HOLE)
        if hole < size:
            try:
                os.lseek(fd, hole, os.SEEK_DATA)     # data after the first hole: not a sparse tail
            except OSError:
                end = hole                            # ENXIO: nothing but the hole to the end
    except (OSError, AttributeError):
        pass
    step = TAIL_BYTES                                 # a clean file: one 64 KB read, as before
    while end > 0:
        start, step = max(0, end - step), 1 << 20
        fh.seek(start)
        piece = fh.read(end - start)
        kept = len(piece.rstrip(b"\0"))
        end = start + kept
        if kept:
            break
    return end


def plan(path: str, head: bytes, ncols: int, delim: str, header_line: int) -> tuple[bytes | None, list[str]]:
    """(the repaired content, or None when nothing needs repair; the warnings that say what was done).
    ``head``: the file's first bytes (decompressed)."""
    base = os.path.basename(path)
    bom = head.startswith(BOM)
    cr_only = b"\r" in head and b"\n" not in head
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        end = content_end(fh, size) if size else 0
        fh.seek(max(0, end - TAIL_BYTES))
        tail = fh.read(end - max(0, end - TAIL_BYTES))
    nuls, size = size - end, end
    if cr_only:
        tail = tail.replace(b"\r", b"\n")
    first = tail.find(b"\n") + 1 if size > TAIL_BYTES else 0
    junk = junk_start(tail[first:], ncols, delim)
    if not (bom or cr_only or junk is not None or nuls):
        return None, []
    with open(path, "rb") as fh:
        data = fh.read(end)
    warnings = []
    if nuls:
        warnings.append(Note("load.nul_bytes", {"file": base, "n": nuls}))
    if bom:
        data = data[len(BOM):]
        warnings.append(Note("load.bom", {"file": base}))
    if cr_only:
        data = data.replace(b"\r", b"\n")
        warnings.append(Note("load.cr_only", {"file": base}))
    if junk is not None:
        at = len(data) - (len(tail) - first - junk)
        line = data[:at].count(b"\n") + 1
        warnings.append(Note("load.junk_after", {"file": base, "line": line, "n": len(data) - at,
                                                 "rows": max(0, line - 2 - header_line)}))
        data = data[:at]
    return data, warnings
