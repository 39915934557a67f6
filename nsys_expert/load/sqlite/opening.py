"""Open an nsys SQLite export for reading, safely: nothing written beside it, nothing left out, no hang.

- A plain export is opened read-only and immutable (``mode=ro&immutable=1``): no lock, no journal,
  no ``-shm`` beside it (works in read-only folders).
- An export still in WAL mode whose ``-wal`` file holds committed changes (or with a hot rollback
  ``-journal``) would be read *without* them in immutable mode: the export and its journal are
  copied into a private temporary folder (0700), opened there so SQLite applies them, and the copy
  is removed afterwards. The report says so.
- Only real tables are read: a view named like an nsys table (possibly over an endless recursive
  query) is named in a warning and left out.
- Every query on the sqlite3 connection runs under a time limit (``NSX_SQLITE_LIMIT_S``, default
  600 s); past it the read stops with one line saying so.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import sqlite3
import tempfile
import time

from ...notes import Note
from ... import budget
from ...errors import InputError

LIMIT_S = float(os.environ.get("NSX_SQLITE_LIMIT_S", "600"))
# the columns without which a table cannot be read at all (the rest are optional: sqlite.py builds
# its queries from the columns that exist)
REQUIRED_COLUMNS = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end"),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("start", "end"),
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": ("start", "end"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end"),
    "NVTX_EVENTS": ("start",),
    "OSRT_API": ("start", "end"),
}
_deadline: dict[int, float] = {}
_timed_out: set[int] = set()


def journal_files(path: str) -> list[str]:
    """The journal files beside an export that hold changes not yet in it (a non-empty -wal, or a
    non-empty -journal: an interrupted transaction that must be rolled back)."""
    out = []
    for suffix in ("-wal", "-journal"):
        j = path + suffix
        try:
            if os.path.getsize(j) > 0:
                out.append(j)
        except OSError:
            pass
    return out


@contextlib.contextmanager
def readable(path: str):
    """-> (path to open, warnings). An export with pending journal files is copied with them into a
    private temporary folder and brought up to date there; the input folder is never written."""
    pending = journal_files(path)
    if not pending:
        yield path, []
        return
    most = max(2 * os.path.getsize(path), 1 << 30)    # a WAL holds at most the pages changed since a checkpoint
    big = [j for j in pending if os.path.getsize(j) > most]
    if big:   # a (sparse) 8 GB -wal beside a 1 MB export would be copied whole before SQLite looks at it
        raise InputError(f"its {os.path.basename(big[0])} is {os.path.getsize(big[0]) / (1 << 30):,.1f} GiB, larger than "
                         f"any journal of this export can be ({most / (1 << 30):,.1f} GiB); not copied", path,
                         "remove it if it is not the export's, or open the export once with sqlite3 so the changes "
                         "are folded in")
    tmp = tempfile.mkdtemp(prefix="nsys-expert-wal-")     # mode 0700: private to this user
    budget.private_folder(tmp)   # removed by the memory watch too, if it ends the run
    try:
        local = os.path.join(tmp, "export.sqlite")
        try:
            shutil.copyfile(path, local)
            for j in pending:
                shutil.copyfile(j, local + j[len(path):])
            con = sqlite3.connect(local)      # opening the private copy applies the WAL / rolls back
            con.execute("PRAGMA journal_mode=DELETE").fetchone()
            con.close()
        except OSError as e:
            raise InputError(f"its {', '.join(os.path.basename(j) for j in pending)} holds changes not yet in the "
                             f"export, and a private copy to read both could not be made ({e.strerror})", path,
                             "open it once with sqlite3 (or run nsys export again) so the changes are folded "
                             "in") from None
        except sqlite3.DatabaseError as e:
            raise InputError(f"its {', '.join(os.path.basename(j) for j in pending)} cannot be applied ({e}); "
                             f"reading the export without it would show rows that were changed or deleted", path,
                             "export the report again with nsys export --type sqlite") from None
        names = ", ".join(os.path.basename(j) for j in pending)
        yield local, [f"{os.path.basename(path)}: {names} beside it holds committed changes not yet written into the "
                      f"export; they were applied to a private copy and read (nothing was written beside the input)"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        budget.released(tmp)


def connect(path: str) -> sqlite3.Connection:
    """A read-only, immutable sqlite3 connection under the time limit (``InputError`` if not SQLite)."""
    uri = pathlib.Path(os.path.abspath(path)).as_uri() + "?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True)
        con.execute("PRAGMA query_only = ON")
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        s = str(e).strip()
        raise InputError(f"not a valid SQLite file ({s.splitlines()[0][:160] if s else type(e).__name__})", path,
                         "export the report with: nsys export --type sqlite -o prof prof.nsys-rep") from None
    key = id(con)
    _deadline[key] = time.monotonic() + LIMIT_S

    def stop() -> int:
        if time.monotonic() > _deadline.get(key, float("inf")):
            _timed_out.add(key)
            return 1
        return 0
    con.set_progress_handler(stop, 100_000)
    return con


def timed_out(con: sqlite3.Connection) -> bool:
    return id(con) in _timed_out


def release(con: sqlite3.Connection) -> None:
    _deadline.pop(id(con), None)
    _timed_out.discard(id(con))


def limit_error(path: str) -> InputError:
    return InputError(f"reading this SQLite export took longer than {LIMIT_S:.0f} s and was stopped", path,
                      "check that it is an nsys export; NSX_SQLITE_LIMIT_S raises the limit")


def check(con: sqlite3.Connection, cols: dict[str, set[str]], path: str) -> list[str]:
    """Required columns of the event tables (an InputError naming the first missing), and warnings
    for what cannot be trusted: views named like nsys tables (not read), no StringIds (no names)."""
    base = os.path.basename(path)
    for table, need in REQUIRED_COLUMNS.items():
        if table in cols:
            for c in need:
                if c not in cols[table]:
                    raise InputError(f"its {table} table has no '{c}' column, so its events have no times", path,
                                     "export the report again with nsys export --type sqlite")
    warnings = []
    views = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'")
             if r[0] in REQUIRED_COLUMNS or r[0] == "StringIds"]
    if views:
        warnings.append(Note("load.sqlite_views", {"file": base, "views": tuple(views)}))
    events = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
                          "OSRT_API") if t in cols]
    if events and "StringIds" not in cols:
        warnings.append(Note("load.no_string_ids", {"file": base}))
    return warnings


def session_start(con: sqlite3.Connection, cols: dict[str, set[str]]) -> int | None:
    """When the capture started (UTC epoch ns), to tell separate runs from ranks of one job."""
    if "utcEpochNs" not in cols.get("TARGET_INFO_SESSION_START_TIME", set()):
        return None
    row = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1").fetchone()
    return int(row[0]) if row and row[0] is not None else None
