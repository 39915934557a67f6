"""What the hostile-input builders share: copies of real inputs, CSV and SQLite edits, the command."""
from __future__ import annotations

import csv
import io
import shutil
import sqlite3
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"


# ------------------------------------------------------------------------------------------ helpers
def copy_case(dst: Path, fixture: str = "sync_bound", name: str = "in") -> Path:
    d = dst / name
    shutil.copytree(FIXTURES / fixture / "input", d)
    return d


def shared_case(dst: Path, case: str, name: str | None = None, sqlite: bool = False) -> Path:
    """The CSV reports (or the SQLite export) of one shared case, copied into dst/name."""
    d = dst / (name or case)
    d.mkdir()
    src = SHARED / "cases" / case
    for f in sorted(src.iterdir()):
        if (f.suffix == ".sqlite") == sqlite and f.suffix in (".csv", ".sqlite"):
            shutil.copy(f, d)
    return d


def trace_of(d: Path) -> Path:
    return next(d.glob("*_cuda_gpu_trace.csv"))


def rewrite_rows(path: Path, fn: Callable[[list[list[str]]], list[list[str]]]) -> None:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(fn(rows))
    path.write_text(buf.getvalue())


def set_col(rows: list[list[str]], col: str, fn: Callable[[int, str], str]) -> list[list[str]]:
    i = rows[0].index(col)
    for k, r in enumerate(rows[1:]):
        if len(r) > i:
            r[i] = fn(k, r[i])
    return rows


def diagnose(path, *more: str) -> list[str]:
    return ["diagnose", str(path), "--format", "json", *more]


def sqlite_copy(dst: Path, fixture: str = "sync_bound_sqlite") -> Path:
    d = copy_case(dst, fixture)
    return next(d.glob("*.sqlite"))


def edit_sqlite(db: Path, *sql: str) -> None:
    con = sqlite3.connect(db)
    for s in sql:
        con.execute(s)
    con.commit()
    con.execute("VACUUM")
    con.close()


def fixture(damage, name="sync_bound"):
    def build(dst):
        d = copy_case(dst, name)
        damage(d)
        return diagnose(d)
    return build


def shared(case, damage):
    def build(dst):
        d = shared_case(dst, case, "in")
        damage(d)
        return diagnose(d)
    return build
