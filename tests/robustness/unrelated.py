"""Issue 18 classes 7, 8 and 10: unrelated runs together, nothing to judge, SQLite in WAL mode."""
from __future__ import annotations

import shutil
import sqlite3

from robustness.build import FIXTURES, copy_case, diagnose, edit_sqlite, rewrite_rows, sqlite_copy, trace_of


# ----------------------------------------------------------- class 7: unrelated runs told apart
def _two_runs_one_folder(dst):
    d = copy_case(dst)
    for f in (FIXTURES / "memcpy_bound" / "input").iterdir():
        shutil.copy(f, d)
    return diagnose(d)


def _two_runs_two_folders(dst):
    a = copy_case(dst, "sync_bound", "a")
    b = copy_case(dst, "launch_bound", "b")
    return diagnose(a, str(b))


def _two_exports_one_folder(dst):
    d = dst / "two"
    d.mkdir()
    shutil.copy(next((FIXTURES / "sync_bound_sqlite" / "input").glob("*.sqlite")), d)
    shutil.copy(next((FIXTURES / "memcpy_bound_sqlite" / "input").glob("*.sqlite")), d)
    return diagnose(d)


def _same_export_twice(dst):
    d = dst / "twice"
    d.mkdir()
    src = next((FIXTURES / "sync_bound_sqlite" / "input").glob("*.sqlite"))
    shutil.copy(src, d / "rank0.sqlite")
    shutil.copy(src, d / "rank1.sqlite")
    return diagnose(d)


def _same_run_two_folders(dst):
    a = copy_case(dst, "sync_bound", "a")
    b = copy_case(dst, "sync_bound", "b")
    return diagnose(a, str(b))


def dmg_usec_twice(d):
    """One run exported twice: once in ns, once with --timeunit usec under another prefix."""
    t = trace_of(d)

    def usec(rows):
        h = rows[0]
        for col in ("Start (ns)", "Duration (ns)"):
            i = h.index(col)
            h[i] = col.replace("(ns)", "(us)")
            for r in rows[1:]:
                r[i] = f"{int(r[i]) / 1000:.3f}"
        return rows
    prefix = t.name.removesuffix("_cuda_gpu_trace.csv")
    u = d / f"{prefix}_usec_cuda_gpu_trace.csv"
    shutil.copy(t, u)
    rewrite_rows(u, usec)




def _summaries_of_another_run(dst):
    d = copy_case(dst)
    k = next(d.glob("*_cuda_gpu_kern_sum.csv"))
    shutil.copy(FIXTURES / "memcpy_bound" / "input" / "memcpy_bound_cuda_gpu_kern_sum.csv", k)
    return diagnose(d)




# ------------------------------------------------------ class 8: nothing to diagnose, said so
def _all_empty(dst):
    d = copy_case(dst)
    for f in d.iterdir():
        f.write_bytes(b"")
    return diagnose(d)


def _header_only(dst):
    d = copy_case(dst)
    for f in d.iterdir():
        f.write_text(f.read_text().split("\n", 1)[0] + "\n")
    return diagnose(d)


def _window_outside(dst):
    return diagnose(copy_case(dst), "--window=900s:901s")


def _window_before(dst):
    return diagnose(copy_case(dst), "--window=1ns:2ns")


def _window_after(dst):
    return diagnose(copy_case(dst), "--window=1000s:1001s")


def _starved(dst):
    """A GPU idle ~95 % of the time with no cause in the data: the real trace's gaps stretched 20x, and
    no API trace, NVTX ranges or OS runtime summary to explain them."""
    d = copy_case(dst)
    for f in d.iterdir():
        if not f.name.endswith(("_cuda_gpu_trace.csv", "_cuda_gpu_kern_sum.csv", "_cuda_gpu_mem_time_sum.csv",
                                "_cuda_gpu_mem_size_sum.csv")):
            f.unlink()

    def stretch(rows):
        s = rows[0].index("Start (ns)")
        t0 = int(rows[1][s])
        for r in rows[1:]:
            r[s] = str(t0 + (int(r[s]) - t0) * 20)
        return rows
    rewrite_rows(trace_of(d), stretch)
    return diagnose(d)


def _empty_sqlite_tables(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL", "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY",
                "DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET", "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    return diagnose(db)


# ------------------------------------------------------------------- class 10: SQLite in WAL mode
def _wal(dst, checkpointed: bool = False, shm: bool = True):
    d = dst / "wal"
    d.mkdir()
    db = d / "sync_bound.sqlite"
    shutil.copy(next((FIXTURES / "sync_bound_sqlite" / "input").glob("*.sqlite")), db)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.commit()
    keep = sqlite3.connect(db)          # a second reader keeps the WAL from being folded in on close
    keep.execute("SELECT count(*) FROM sqlite_master").fetchone()
    # delete every kernel but the cutlass GEMMs: a committed change that lives only in the -wal file
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName NOT IN "
                "(SELECT id FROM StringIds WHERE value LIKE '%Kernel2%')")
    con.commit()
    if checkpointed:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # copy the files as they are on disk now (as if the writer had been killed), then let go
    snap = dst / "snap"
    snap.mkdir()
    for f in d.iterdir():
        if f.name.endswith("-shm") and not shm:
            continue
        shutil.copy(f, snap / f.name)
    keep.close()
    con.close()
    return diagnose(snap / "sync_bound.sqlite")
