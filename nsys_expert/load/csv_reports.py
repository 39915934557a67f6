"""Read one `nsys stats` CSV (or TSV) report into a canonical Polars frame.

The header is found by its content, not its line number (``csv_sniff``). Values are read as text and cast per column, so a bad cell becomes a counted, reported null
instead of an exception; units are converted with the factor from the header.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
from dataclasses import dataclass, field

import polars as pl

from .. import notes
from ..errors import InputError
from ..notes import Note
from . import chunks, compressed, numbers, repair, schema
from .csv_sniff import MAX_PREAMBLE_LINES, NCU_HEADER, SNIFF_BYTES, Sniff, has_rows, sniff  # noqa: F401 - csv_reports.sniff
from .normalize import NARROW

# time columns kept as integer ns (the others, averages and deviations, are floats)
INT_NS = {"start_ns", "end_ns", "dur_ns", "total_ns", "min_ns", "max_ns", "dur_child_ns", "dur_nonchild_ns",
          "total_proj_ns", "total_range_ns"}
EXPORT_HINT = ("export the reports with: nsys stats --format csv --output prof "
               "--report cuda_gpu_trace,cuda_api_trace,cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum,"
               "cuda_gpu_mem_size_sum,nvtx_sum,nvtx_pushpop_trace,osrt_sum report.nsys-rep")


@dataclass
class Loaded:
    table: str
    frame: pl.DataFrame | None
    path: str
    report: str              # report name (from the file name when known, else the table's first name)
    warnings: list[Note] = field(default_factory=list)
    era: str = "2023+"       # "2023+" or "2021-2022" (old report names / GridXYZ / MBps / None) or "2020"
    sections: bool = False   # more than this one report follows (a console capture): read it as console text


_MORE = re.compile(rb"\S")


def _more_after_blank(buf, start: int) -> bool:
    """True when, after ``start``, a blank line is followed by more text. One nsys CSV report has no
    blank line inside; `nsys stats --format csv` printed to the console separates its reports (and
    their Processing / title lines) with blank lines."""
    for sep in (b"\n\n", b"\n\r\n"):
        if sep == b"\n\r\n" and buf.find(b"\r", start) < 0:   # one fast pass saves a slow one (0.2 s per 250 MB)
            continue
        k = buf.find(sep, start)
        if k >= 0 and _MORE.search(buf, k) is not None:
            return True
    return False


SCAN_CHUNK = 16 << 20


def _more_after_blank_in(fh, header_line: int) -> bool:
    """:func:`_more_after_blank` over a file read in 16 MB chunks from its header on. A memory map
    of the whole file would be searched as fast, but every page it touches counts in the process's
    resident memory: 2.5 GB for a ten-million-row trace. Each chunk is read into one buffer (no
    copies), and ``\\n\\r\\n`` is looked for only in a chunk that has a ``\\r`` (a single-byte search is
    ten times faster than a two-byte one over a file whose every line ends in ``\\n``)."""
    for _ in range(header_line):
        fh.readline()
    # no bigger than what is left to read: a zero-filled 16 MB buffer per small report, several
    # reports read at once on the loader's threads, raised the peak RSS by ~180 MB at random
    try:
        left = os.fstat(fh.fileno()).st_size - fh.tell()
    except (AttributeError, OSError, ValueError):   # an in-memory file (io.BytesIO: no descriptor)
        left = len(fh.getbuffer()) - fh.tell() if hasattr(fh, "getbuffer") else SCAN_CHUNK
    chunk = max(1, min(SCAN_CHUNK, left))
    buf = bytearray(chunk + 2)
    view = memoryview(buf)
    keep, blank = 0, False
    try:
        while n := fh.readinto(view[keep:keep + chunk]):
            end, pos = keep + n, 0
            if not blank:
                hits = [buf.find(b"\n\n", 0, end)]
                if buf.find(b"\r", 0, end) >= 0:
                    hits.append(buf.find(b"\n\r\n", 0, end))
                hits = [k for k in hits if k >= 0]
                if hits:
                    blank, pos = True, min(hits)
            if blank and _MORE.search(buf, pos, end) is not None:
                return True
            keep = 0 if blank else min(2, end)   # a separator may straddle two chunks
            if keep:
                buf[0:keep] = buf[end - keep:end]
    finally:
        view.release()
    return False


def _sections(path: str, sn: Sniff, frame: pl.DataFrame | None) -> bool:
    """True when more text follows a blank line after the table (a console capture of several
    reports). A blank line reaches the typed read as a row whose every cell is missing, and the
    text after it either fails to parse (no frame) or is a row of its own: the file itself is
    searched only then, or when the typed read failed, so that one nsys CSV report, which has no
    blank line inside, is never searched (that search was a quarter of a million-row trace's read)."""
    if frame is not None and (frame.width == 0 or frame.height == 0 or not frame.select(
            pl.all_horizontal(pl.all().is_null()).any()).item()):
        return False
    if not os.path.getsize(path):
        return False
    with open(path, "rb") as fh:
        return _more_after_blank_in(fh, sn.header_line)


def _line_offset(buf, line: int) -> int:
    pos = 0
    for _ in range(line):
        k = buf.find(b"\n", pos)
        if k < 0:
            break
        pos = k + 1
    return pos


def read_report(sn: Sniff) -> Loaded:
    """Read a sniffed CSV report into its canonical frame (all requested casts, units converted).
    A file with more after its table (several reports printed to the console) is not read here:
    ``sections`` says so, and the loader reads it as console text."""
    path, spec = sn.path, sn.spec
    assert spec is not None
    gz = compressed.is_gzip(path)
    if gz:
        return _read_gzipped(sn)
    fixed, warnings = (None, []) if gz else repair.plan(path, compressed.head(path, SNIFF_BYTES), len(sn.cells),
                                                         sn.delimiter, sn.header_line)
    source = _source(sn, gz, fixed, warnings)
    if source is None:
        return Loaded(spec.table, None, path, sn.report or spec.names[0], sections=True)
    opts = dict(skip_lines=sn.header_line, has_header=True, separator=sn.delimiter, encoding="utf8-lossy",
                quote_char='"', truncate_ragged_lines=True, null_values=["None"], raise_if_empty=False,
                glob=False)   # the path is literal: 'exp[12]/' or 'run*/' never reads a sibling folder
    plan = schema.column_plan(sn.cells)
    warnings += numbers.check_units(sn.cells, path)    # µs / MiB read and said; an unknown unit is an error
    frame = _fast_read(source, spec, plan, opts) if len(set(sn.cells)) == len(sn.cells) else None
    if not gz and fixed is None and _sections(path, sn, frame):
        return Loaded(spec.table, None, path, sn.report or spec.names[0], sections=True)
    if frame is None:
        frame = _careful_read(source, spec, opts, path, warnings)
    era = _era(sn, sn.cells)
    return Loaded(spec.table, frame, path, sn.report or spec.names[0], warnings, era)


def _read_gzipped(sn: Sniff) -> Loaded:
    """A gzipped report, decompressed into a private file as it streams (never all of it in memory: a
    ``.csv.gz`` may hold a hundred times its size) and read from there as any report; what is said names
    the input."""
    with compressed.local_copy(sn.path) as tmp, compressed.errors_named(tmp, sn.path):
        item = read_report(dataclasses.replace(sn, path=tmp))
    old, new = os.path.basename(tmp), os.path.basename(sn.path)
    item.path = sn.path
    item.warnings = [notes.renamed(notes.renamed(w, tmp, sn.path), old, new) for w in item.warnings]
    return item


def _source(sn: Sniff, gz: bool, fixed: bytes | None, warnings: list):
    """What the read parses: the path, or the bytes (decompressed, repaired, or without a last row that
    was cut, said in ``warnings``); None when more reports follow the table (a console capture)."""
    path = sn.path
    source: object = path
    if gz or fixed is not None:   # decompressed or repaired in memory, never beside the input
        data = fixed if fixed is not None else compressed.read_all(path)
        if _more_after_blank(data, _line_offset(data, sn.header_line)):
            return None
        ends_with_newline = data[-1:] in (b"\n", b"\r", b"")
        source = io.BytesIO(data)
    else:
        # the blank-line search over the file (0.25 s per million rows) runs only when the typed read
        # below saw an empty row, or could not read the file at all (see _sections)
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            fh.seek(max(0, size - 1))
            ends_with_newline = fh.read(1) in (b"\n", b"\r")
    if ends_with_newline:
        cut_at = _cut_last_row(source, path, len(sn.cells), sn.delimiter)
        if cut_at is not None:   # cut inside a row, then a newline added: the row is short or its quote open
            data = source.getvalue() if isinstance(source, io.BytesIO) else open(path, "rb").read()
            body = data.rstrip(b"\r\n")
            start = body.rfind(b"\n") + 1
            source = io.BytesIO(data[:start])
            warnings.append(Note("load.csv_cut_row", {"file": os.path.basename(path), "line": cut_at}))
    if not ends_with_newline:
        if isinstance(source, io.BytesIO):
            data = source.getvalue()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
        cut = data.rfind(b"\n")
        source = io.BytesIO(data[: cut + 1] if cut >= 0 else data)
        warnings.append(Note("load.csv_ends_mid_row", {"file": os.path.basename(path)}))
    return source


def _fast_read(source, spec, plan, opts: dict) -> pl.DataFrame | None:
    """The typed read; None when any cell does not parse (the careful path reads it then)."""
    keep = schema.KEEP.get(spec.table)
    plan_fast = [p for p in plan if keep is None or p[1] in keep]
    dtypes = {cell: _dtype(name, cls, factor) for cell, name, cls, factor in plan_fast}
    # long, repeated texts: a dictionary code per row, not a string
    for cell, name, _, _ in plan_fast:
        if (spec.table, name) in CATEGORIES:
            dtypes[cell] = pl.Categorical
    # the big traces' ids read as 32-bit integers at once (what normalize narrows them to when every
    # value fits: a pass and a copy of each column less, and no 64-bit column held while reading);
    # a value past 32 bits fails that read, and the 64-bit read is made instead
    narrow = {cell: pl.Int32 for cell, name, _, _ in plan_fast
              if name in NARROW.get(spec.table, ()) and dtypes[cell] == pl.Int64}
    frame = None
    for types in ([{**dtypes, **narrow}, dtypes] if narrow else [dtypes]):
        frame = _typed(source, plan_fast, types, opts)
        if frame is not None:
            break
    return frame


def _careful_read(source, spec, opts: dict, path: str, warnings: list) -> pl.DataFrame:
    """Every cell read as text and cast column by column: a cell that does not parse is a counted null."""
    try:
        raw = pl.read_csv(source, infer_schema=False, **opts)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, pl.exceptions.ShapeError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"cannot parse this {spec.table} CSV ({first[:120]})", path,
                         "re-export it with nsys stats --format csv") from e
    plan = schema.column_plan(list(raw.columns))
    exprs = []
    for cell, name, cls, factor in plan:
        if cls == "str":
            exprs.append(pl.col(cell).alias(name))
        else:
            exprs.append(_scale(numbers.parse(cell, _dtype(name, cls, factor), clamp=cls in ("ts", "dur")),
                                name, cls, factor))
    frame = raw.select(exprs)
    warnings += numbers.notes(raw, plan, path) + _bad_cells(raw, frame, plan, path)
    return frame


def _typed(source, plan_fast, dtypes: dict, opts: dict) -> pl.DataFrame | None:
    """The fast typed read with these types, or None when a cell does not parse as its type."""
    try:
        wanted = [p[0] for p in plan_fast]
        exprs = [_scale(pl.col(cell), name, cls, factor) for cell, name, cls, factor in plan_fast]
        if isinstance(source, str):
            # a lazy scan reads only the projected columns and scales them in the same pass
            lazy = pl.scan_csv(source, schema_overrides=dtypes, **opts)
            if [c for c in lazy.collect_schema().names() if c in dtypes] == wanted:
                return one_chunk(lazy.select(exprs))
        else:
            typed = pl.read_csv(source, schema_overrides=dtypes, columns=wanted, **opts)
            source.seek(0)
            if list(typed.columns) == wanted:
                return typed.select(exprs)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, pl.exceptions.ShapeError,
            pl.exceptions.SchemaError, pl.exceptions.InvalidOperationError):
        if isinstance(source, io.BytesIO):
            source.seek(0)
    return None


def _cut_last_row(source, path: str, ncols: int, delim: str) -> int | None:
    """The line number of the file's last row when that row is incomplete (fewer cells than the
    header, or a quote left open), else None."""
    if isinstance(source, io.BytesIO):
        data = source.getvalue()
        tail, total = data[-65536:], data
    else:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            fh.seek(max(0, size - 65536))
            tail = fh.read()
        total = None
    body = tail.rstrip(b"\r\n")
    last = body[body.rfind(b"\n") + 1:].decode("utf-8", errors="replace")
    if not last.strip():
        return None
    try:
        cells = next(csv.reader([last], delimiter=delim, strict=True))
        cut = last.count('"') % 2 == 1 or len(cells) < ncols
    except (csv.Error, StopIteration):
        cut = True
    if not cut:
        return None
    if total is None:
        with open(path, "rb") as fh:
            total = fh.read()
    return total.rstrip(b"\r\n").count(b"\n") + 1


# columns of the big traces read as categories (kernel, API and GPU names, the copies' memory kinds: millions
# of rows, few values). A text column costs 16 bytes a row even where it is empty (its views): the memory kinds,
# empty on every kernel's row, held 300 MB at ten million operations as texts, 80 MB as codes
CATEGORIES = {("gpu_trace", "name"), ("gpu_trace", "device"), ("gpu_trace", "src_kind"), ("gpu_trace", "dst_kind"),
              ("api_trace", "name")}


def one_chunk(lazy: pl.LazyFrame) -> pl.DataFrame:
    """The collected frame with every column in one chunk (:mod:`.chunks`). Collected here so that no
    caller holds the chunked frame."""
    return chunks.one_chunk(lazy.collect())


def _dtype(name: str, cls: str, factor: float):
    if cls == "str":
        return pl.String
    if cls == "int" or (cls in ("ts", "dur") and name in INT_NS and factor == 1.0):
        return pl.Int64
    return pl.Float64


def _scale(expr: pl.Expr, name: str, cls: str, factor: float) -> pl.Expr:
    """Convert a parsed column to its canonical unit (ns, bytes, bytes/s); time stamps stay integers."""
    if cls in ("str", "int") or factor == 1.0:
        return expr.alias(name)
    if cls in ("ts", "dur") and name in INT_NS:
        # a value past the 64-bit range (1e17 us) is held at its end, for sanity.time_range / totals / too_long to
        # say and leave out, never a cast that fails or wraps around
        return (expr * factor).round(0).clip(-9.2e18, 9.2e18).cast(pl.Int64).alias(name)
    return (expr * factor).alias(name)


def _era(sn: Sniff, columns: list[str]) -> str:
    """Which generation of `nsys stats` wrote this header: 2020-2021, 2021-2022 or 2023+."""
    cols = [c.strip() for c in columns]
    if "Time(%)" in cols or "Start Time (ns)" in cols or any(c.startswith("Average") for c in cols):
        return "2020-2021"
    old_name = sn.report is not None and sn.spec is not None and sn.report != sn.spec.names[0]
    if old_name or "GridXYZ" in cols or "Throughput (MBps)" in cols:
        return "2021-2022"
    return "2023+"


def _bad_cells(raw: pl.DataFrame, frame: pl.DataFrame, plan, path: str) -> list[Note]:
    """Count cells that had text but did not parse as the number their column holds."""
    out = []
    checks = []
    for cell, name, cls, _ in plan:
        if cls == "str":
            continue
        checks.append(((pl.col(cell).is_not_null() & (pl.col(cell).str.strip_chars() != "")) &
                       pl.lit(True)).alias(name))
    if not checks:
        return out
    had = raw.select(checks)
    for name in had.columns:
        bad = int((had[name] & frame[name].is_null()).sum())
        if bad:
            out.append(Note("load.bad_cells", {"file": os.path.basename(path), "n": bad, "column": name}))
    return out
