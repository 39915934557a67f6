"""How an nsys SQLite export's tables are read: the connections, Arrow reads through ADBC, and the big
tables in pieces on reader threads (``_Big``). What is read, and how it becomes nsys-expert's frames,
is ``sqlite``'s.

- The file is opened read-only and immutable (``mode=ro&immutable=1``): nothing is ever written to it
  or beside it.
- The big tables (kernels, copies, API calls, OS runtime calls) are read side by side, each piece on
  its own ADBC connection in a worker thread (the driver and Polars release the GIL), while the
  metadata queries run on the sqlite3 connection. Without ADBC, sqlite3 reads them one by one.
"""
from __future__ import annotations

import os
import pathlib
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from . import chunks

# Serialized ids (input-formats.md 3): globalTid / globalPid carry the process id in bits 24-47 and
# globalTid the thread id in bits 0-23. SQL only reads columns; this arithmetic (like end - start)
# runs in Polars, which is several times faster than SQLite evaluating it per row.


def _pid(col: str) -> pl.Expr:   # 24 bits: a 32-bit integer (normalize.NARROW)
    return ((pl.col(col) // (1 << 24)) % (1 << 24)).cast(pl.Int32)


def _tid(col: str) -> pl.Expr:
    return (pl.col(col) % (1 << 24)).cast(pl.Int32)


# The big tables (a million kernels, two million API calls) are read through ADBC's SQLite driver,
# which hands Polars Arrow columns directly: about 3x faster than Python's sqlite3 row tuples. The
# sqlite3 connection stays for the small metadata queries, and is the fallback for everything.
# Per sqlite3 connection: its URI, its ADBC connection (small queries), and the pool reading the big tables.
_ADBC: dict[int, object] = {}
_URI: dict[int, str] = {}
_POOL: dict[int, ThreadPoolExecutor] = {}
# two readers: the machine this was tuned on has two cores, and the kernel and API tables are the two big reads
READERS = 2


def _close(con: sqlite3.Connection) -> None:
    """Stop the readers (a read still running finishes first: a .sqlite.gz copy is removed after this)."""
    pool = _POOL.pop(id(con), None)
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
    _URI.pop(id(con), None)
    fast = _ADBC.pop(id(con), None)
    if fast is not None:
        try:
            fast.close()
        except Exception:  # noqa: BLE001 - closing a read-only handle cannot lose anything
            pass
    con.close()


def _connect(path: str) -> sqlite3.Connection:
    from . import sqlite_open

    con = sqlite_open.connect(path)   # immutable=1: no locking, no journal / WAL files beside the export
    uri = pathlib.Path(os.path.abspath(path)).as_uri() + "?mode=ro&immutable=1"
    try:
        import adbc_driver_sqlite.dbapi as adbc  # same read-only, immutable URI

        _ADBC[id(con)] = adbc.connect(uri)
        _URI[id(con)] = uri
    except Exception:  # noqa: BLE001 - no ADBC driver, or it cannot open the file: sqlite3 does it all
        pass
    return con


def _frame(con: sqlite3.Connection, sql: str, schema: dict) -> pl.DataFrame:
    """Run a query into a typed frame: through ADBC (Arrow) when it is there, else sqlite3 rows."""
    fast = _ADBC.get(id(con))
    if fast is not None:
        df = _arrow(fast, sql, schema)
        if df is not None:
            return df
    return _rows(con, sql, schema)


def _arrow(fast, sql: str, schema: dict) -> pl.DataFrame | None:
    """The query through an ADBC connection (or a URI to open one), or None on any driver trouble."""
    own = isinstance(fast, str)
    try:
        if own:
            import adbc_driver_sqlite.dbapi as adbc

            fast = adbc.connect(fast)
            _fetch(fast, f"PRAGMA mmap_size={MMAP_BYTES}")
        df = _fetch(fast, sql)
        if df.width == len(schema):
            df = df.rename(dict(zip(df.columns, schema)))
            casts = [pl.col(k).cast(v, strict=False) for k, v in schema.items() if df.schema[k] != v]
            return df.with_columns(casts) if casts else df
    except Exception:  # noqa: BLE001 - any driver trouble: the sqlite3 path is the reference
        pass
    finally:
        if own and not isinstance(fast, str):
            try:
                fast.close()
            except Exception:  # noqa: BLE001
                pass
    return None


# The big reads map the file instead of copying each page through SQLite's cache (7 % less time to read
# 5 M kernels and 10 M calls, a third less system time). Safe for a file opened immutable and read-only,
# which is how every export is opened; SQLite maps at most what it was built to (2 GB by default) and
# reads the rest of a bigger file as before.
MMAP_BYTES = 1 << 40

# rows per Arrow batch: the driver's default (1,024) makes a thousand chunks per million rows, each
# converted on its own; 64 Ki rows read 5-7 % faster and leave a few chunks
BATCH_ROWS = 65_536


def _fetch(fast, sql: str) -> pl.DataFrame:
    cur = fast.cursor()
    try:
        cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
        cur.execute(sql)
        return pl.DataFrame(cur.fetch_arrow())   # the Arrow C stream, straight into Polars
    finally:
        cur.close()


def _rows(con: sqlite3.Connection, sql: str, schema: dict) -> pl.DataFrame:
    rows = con.execute(sql).fetchall()
    if not rows:
        return pl.DataFrame(schema=schema)
    try:
        return pl.DataFrame(rows, schema=schema, orient="row", strict=False)
    except (pl.exceptions.PolarsError, TypeError, OverflowError):
        # a BLOB where a number or a name belongs: that cell is null, and the loader's checks name the rows
        # they leave out (a start that is no number) as they do for text in a number column
        rows = [tuple(None if isinstance(v, (bytes, bytearray, memoryview)) else v for v in r) for r in rows]
        return pl.DataFrame(rows, schema=schema, orient="row", strict=False)


# A big table is read in pieces of consecutive rowids (a range of the table's B-tree: no scan of the
# rest), so that both readers stay busy to the end and each Arrow-to-Polars conversion stays small.
PIECE_ROWS = 500_000


class _Big:
    """The big queries of one export (key: the table read), started together on the reader threads;
    ``get`` waits for one. A query ADBC could not run is run again through sqlite3 (which raises what
    a damaged file raises)."""

    def __init__(self, con: sqlite3.Connection, jobs: dict[str, tuple[str, dict]]):
        self.con, self.jobs, self.futures = con, jobs, {}
        uri = _URI.get(id(con))
        if uri is None or not jobs:
            return
        pool = _POOL.setdefault(id(con), ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="nsx-sqlite"))
        pieces = {key: _pieces(con, key, sql) for key, (sql, _) in jobs.items()}
        # the first piece of every table, then the second of every table...: the two biggest tables share the readers
        order = [(key, n) for i in range(max(len(p) for p in pieces.values()))
                 for key, p in pieces.items() if i < len(p) for n in [i]]
        futs = {(key, i): pool.submit(_piece, uri, pieces[key][i], jobs[key][1]) for key, i in order}
        self.futures = {key: [futs[(key, i)] for i in range(len(p))] for key, p in pieces.items()}

    def get(self, key: str, joined: bool = True) -> pl.DataFrame:
        """The table; ``joined``: in one chunk per column (chunks.py: every fact group would otherwise
        rechunk the whole table again), else in its pieces (for chunks.by_start, which joins them)."""
        frames = [f.result() for f in self.futures.pop(key, [])]
        if not frames or any(f is None for f in frames):
            return _derived(_rows(self.con, *self.jobs[key]))
        box = [frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)]
        del frames   # (no other name for the pieces: one_chunk frees each as it moves its column)
        return chunks.one_chunk(box) if joined else box.pop()


def _piece(uri: str, sql: str, schema: dict) -> pl.DataFrame | None:
    df = _arrow(uri, sql, schema)
    return None if df is None else _derived(df)


def _derived(df: pl.DataFrame) -> pl.DataFrame:
    """A big table's derived columns, made on the reader threads piece by piece (small temporaries, side
    by side with the reads): the duration, and the process and thread ids packed in globalPid / globalTid."""
    exprs, packed = [], [c for c in ("gpid", "gtid") if c in df.columns]
    if "start_ns" in df.columns and "end_ns" in df.columns:
        exprs.append((pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"))
    for c in packed:
        exprs += [_pid(c).alias("pid")] + ([_tid(c).alias("tid")] if c == "gtid" else [])
    return df.with_columns(exprs).drop(packed)


def _pieces(con: sqlite3.Connection, table: str, sql: str) -> list[str]:
    """``sql`` (one table's query) split into rowid ranges of about PIECE_ROWS rows."""
    try:
        # two subqueries: each of min() and max() alone is one step down the B-tree; together, a full scan
        lo, hi = con.execute(f'SELECT (SELECT min(rowid) FROM "{table}"), (SELECT max(rowid) FROM "{table}")').fetchone()
    except sqlite3.DatabaseError:   # no rowid (a view) or a damaged page: one piece, and the read will say
        return [sql]
    if lo is None or hi - lo < PIECE_ROWS * 1.5:
        return [sql]
    glue = " AND " if " WHERE " in sql else " WHERE "
    bounds = list(range(lo, hi + 1, PIECE_ROWS)) + [hi + 1]
    return [f"{sql}{glue}rowid >= {a} AND rowid < {b}" for a, b in zip(bounds, bounds[1:])]


# a name past NAME_MAX bytes is cut where SQLite reads it (a 10 MB StringIds value joined to ten million
# NVTX ranges would be ten million copies), as load/sanity.py cuts the other formats' names: its first
# NAME_KEPT characters, its length and its string id; long_strings says how many
NAME_MAX, NAME_KEPT = 64 << 10, 4096


def cut_value(col: str, id_col: str) -> str:
    return (f"CASE WHEN length(CAST({col} AS BLOB)) > {NAME_MAX} THEN substr({col}, 1, {NAME_KEPT}) || ' …[' || "
            f"length(CAST({col} AS BLOB)) || ' bytes, #s' || {id_col} || ']' ELSE {col} END")


def cut_text(col: str) -> str:
    """``cut_value`` for a text stored inline, which has no string id: its first NAME_KEPT characters, its last 16
    and its length (two long names stay two unless both their ends and their lengths agree)."""
    return (f"CASE WHEN length(CAST({col} AS BLOB)) > {NAME_MAX} THEN substr({col}, 1, {NAME_KEPT}) || ' …' || "
            f"substr({col}, -16) || ' [' || length(CAST({col} AS BLOB)) || ' bytes]' ELSE {col} END")


def long_inline(con: sqlite3.Connection, cols: dict) -> dict | None:
    """How many NVTX texts stored inline (NVTX_EVENTS.text) are past NAME_MAX bytes, and the longest."""
    if "text" not in cols.get("NVTX_EVENTS", ()):
        return None
    n, longest = con.execute(f"SELECT count(*), max(length(CAST(text AS BLOB))) FROM NVTX_EVENTS "
                             f"WHERE length(CAST(text AS BLOB)) > {NAME_MAX}").fetchone()
    return {"n": n, "longest": longest} if n else None


def long_strings(con: sqlite3.Connection, cols: dict) -> dict | None:
    """How many StringIds values are past NAME_MAX bytes, and the longest (None: none is)."""
    if "StringIds" not in cols or "value" not in cols["StringIds"]:
        return None
    n, longest = con.execute(f"SELECT count(*), max(length(CAST(value AS BLOB))) FROM StringIds "
                             f"WHERE length(CAST(value AS BLOB)) > {NAME_MAX}").fetchone()
    return {"n": n, "longest": longest} if n else None
