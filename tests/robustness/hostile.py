"""Hostile inputs of issue 18, classes 5, 6, 7, 8 and 10, each derived from a real case.

Every input is a :class:`Case`: ``build(dst)`` writes it under the folder ``dst`` (from copies of the
fixtures in ``fixtures/`` or, for a few, ``../shared/cases``) and returns the command line after
``nsys-expert``. ``expect`` is what the program must do with it:

- ``"report"``: exit 0, a JSON report, and a warning containing ``text`` (a damaged input is never
  read as if it were whole);
- ``"error"``: exit 2 and one line on stderr containing ``text`` (which names the file or option).

``spawn`` marks the inputs that need their own process (a hang to bound, a user without root, or a
FIFO); the rest run in-process through click's runner. ``needs_shared`` marks those built from
``../shared``. Nothing here writes beside the fixtures: every input is a copy under ``dst``.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"


@dataclass
class Case:
    name: str
    cls: int
    build: Callable[[Path], list[str]]
    expect: str                  # "report" or "error"
    text: str | None = None      # in a warning (report) or in the error line
    spawn: bool = False          # needs a subprocess (a hang, another user, a FIFO)
    needs_shared: bool = False
    needs_user: bool = False     # must run as a user without root (unreadable files)


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


# --------------------------------------------------------------------- class 5: user errors, not bugs
def _symlink_loop_in_folder(dst):
    d = copy_case(dst)
    os.symlink("loop_b.csv", d / "loop_a.csv")
    os.symlink("loop_a.csv", d / "loop_b.csv")
    return diagnose(d)


def _symlink_loop_arg(dst):
    os.symlink(dst / "b", dst / "a")
    os.symlink(dst / "a", dst / "b")
    return diagnose(dst / "a")


def _dangling_in_folder(dst):
    d = copy_case(dst)
    os.symlink(dst / "gone_cuda_api_trace.csv", d / "sync_bound_extra_cuda_gpu_trace.csv")
    return diagnose(d)


def _dangling_arg(dst):
    os.symlink(dst / "gone.sqlite", dst / "link.sqlite")
    return diagnose(dst / "link.sqlite")


def _unreadable_file(dst):
    d = copy_case(dst)
    os.chmod(trace_of(d), 0)
    os.chmod(dst, 0o755)
    return diagnose(d)


def _unreadable_folder(dst):
    d = copy_case(dst)
    os.chmod(d, 0)
    os.chmod(dst, 0o755)
    return diagnose(d)


def _fifo(dst):
    d = copy_case(dst)
    os.mkfifo(d / "sync_bound_osrt_trace.csv")
    return diagnose(d)


def _fifo_arg(dst):
    os.mkfifo(dst / "prof.sqlite")
    return diagnose(dst / "prof.sqlite")


def _pack_with_cases(dst, cases: bytes | None, folder: bool = False):
    """A team pack holding a copy of a built-in rule (renamed) and a broken cases file beside it."""
    pack = dst / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text("name: team\nversion: \"1\"\n")
    src = ROOT / "rules" / "kernel" / "bank-conflicts.yaml"
    rule = src.read_text().replace("id: bank-conflicts", "id: team-bank-conflicts", 1)
    (pack / "team-bank-conflicts.yaml").write_text(rule)
    target = pack / "team-bank-conflicts.cases.yaml"
    if folder:
        target.mkdir()
    else:
        target.write_bytes(cases)
    return ["check-rules", str(pack)]


def _cases_latin1(dst):
    text = (ROOT / "rules" / "kernel" / "bank-conflicts.cases.yaml").read_bytes()
    return _pack_with_cases(dst, text.replace(b"conflicts", b"conflicts caf\xe9", 1))


def _cases_folder(dst):
    return _pack_with_cases(dst, None, folder=True)


def _sqlite_kernel_without_end(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, 'ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN "end"')
    return diagnose(db)


def _csv_trace_without_duration(dst):
    d = copy_case(dst)
    rewrite_rows(trace_of(d), lambda rows: [r[:1] + r[2:] for r in rows])
    return diagnose(d)


def _console_cut_in_number(dst):
    d = copy_case(dst, "sync_bound_console")
    f = d / "stats_column.txt"
    text = f.read_text()
    cut = text.index("137,388,386") + len("137,38")
    f.write_text(text[:cut])
    return diagnose(d)


def _console_cut_in_count_then_newline(dst):
    """Cut inside the Instances column ('4' of '400'), then a newline: a count that would be a lie."""
    d = copy_case(dst, "sync_bound_console")
    f = d / "stats_column.txt"
    text = f.read_text()
    cut = text.index("137,388,386        4") + len("137,388,386        4")
    f.write_text(text[:cut] + "\n")
    return diagnose(d)


def _window(spec):
    def build(dst):
        return diagnose(copy_case(dst), f"--window={spec}")
    return build


def _binary_config(dst):
    d = copy_case(dst)
    cfg = dst / "nsys-expert.toml"
    cfg.write_bytes(bytes(range(256)) * 8)
    return diagnose(d, "--config", str(cfg))


def _config_skip_many(dst):
    d = copy_case(dst)
    cfg = dst / "nsys-expert.toml"
    cfg.write_text('skip-iterations = "many"\n')
    return diagnose(d, "--config", str(cfg))


def _config_negative_skip(dst):
    d = copy_case(dst)
    cfg = dst / "nsys-expert.toml"
    cfg.write_text("skip-iterations = -3\n")
    return diagnose(d, "--config", str(cfg))


def _config_is_folder(dst):
    d = copy_case(dst)
    (dst / "cfgdir").mkdir()
    return diagnose(d, "--config", str(dst / "cfgdir"))


def _sqlite_view_endless(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO kernels_real",
                "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                "SELECT x + 1 FROM c) SELECT k.* FROM kernels_real k, c")
    return diagnose(db)


# ------------------------------------------------------------------ class 6: damaged data, told
def dmg_thousands(d):
    rewrite_rows(trace_of(d), lambda rows: set_col(rows, "Duration (ns)", lambda k, v: f"{int(v):,}"))


def _thousands_summary(dst):
    d = copy_case(dst)
    k = next(d.glob("*_cuda_gpu_kern_sum.csv"))
    rewrite_rows(k, lambda rows: set_col(rows, "Total Time (ns)", lambda i, v: f"{int(v):,}"))
    return diagnose(d)


def _scientific(dst):
    d = copy_case(dst)
    rewrite_rows(trace_of(d), lambda rows: set_col(rows, "Start (ns)", lambda k, v: f"{int(v):.9e}"))
    return diagnose(d)


def _unit_micro(dst):
    d = copy_case(dst)

    def fn(rows):
        i = rows[0].index("Duration (ns)")
        rows[0][i] = "Duration (\u00b5s)"
        for r in rows[1:]:
            r[i] = f"{int(r[i]) / 1000:.3f}"
        return rows
    rewrite_rows(trace_of(d), fn)
    return diagnose(d)


def _unit_mib(dst):
    d = copy_case(dst)
    m = next(d.glob("*_cuda_gpu_mem_size_sum.csv"))
    m.write_text(m.read_text().replace(" (MB)", " (MiB)"))
    return diagnose(d)


def _unit_unknown(dst):
    d = copy_case(dst)
    t = trace_of(d)
    t.write_text(t.read_text().replace("Duration (ns)", "Duration (fortnights)", 1))
    return diagnose(d)


def dmg_cut_then_newline(d):
    t = trace_of(d)
    b = t.read_bytes()
    t.write_bytes(b[: len(b) // 2].rstrip(b"\n") + b"\n")


def _cut_inside_quote(dst):
    d = copy_case(dst)
    t = trace_of(d)
    b = t.read_bytes()
    cut = b.index(b'"void', len(b) // 2) + 20
    t.write_bytes(b[:cut] + b"\n")
    return diagnose(d)


def _negative_durations(dst):
    d = copy_case(dst)
    rewrite_rows(trace_of(d), lambda rows: set_col(rows, "Duration (ns)",
                                                   lambda k, v: str(-int(v)) if k % 50 == 3 else v))
    return diagnose(d)


def dmg_overlap(d):
    # every 20th operation lasts until well past the start of the next ones on its stream
    rewrite_rows(trace_of(d), lambda rows: set_col(rows, "Duration (ns)",
                                                   lambda k, v: "900000000" if k % 20 == 5 else v))


def dmg_292_years(d):
    rewrite_rows(trace_of(d), lambda rows: set_col(rows, "Duration (ns)",
                                                   lambda k, v: "9223372036854775000" if k == 40 else v))


def _292_years_sqlite(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = 9223372036854775000 '
                    "WHERE rowid = (SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1 OFFSET 30)")
    return diagnose(db)


def _negative_sqlite(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, 'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 5000 WHERE rowid % 40 = 3')
    return diagnose(db)


def _ncu_cut(dst):
    d = copy_case(dst, "sync_bound_ncu")
    f = d / "ncu" / "sync_bound_details.csv"
    b = f.read_bytes()
    f.write_bytes(b[: int(len(b) * 0.6)] + b"\n")
    return diagnose(d)


def _fffd_names(dst):
    d = copy_case(dst)
    for f in (trace_of(d), next(d.glob("*_cuda_gpu_kern_sum.csv"))):
        f.write_text(f.read_text().replace("elementwise", "elem\ufffd\ufffdntwise"))
    return diagnose(d)


def _no_stringids(dst):
    db = sqlite_copy(dst)
    edit_sqlite(db, "DROP TABLE StringIds")
    return diagnose(db)


def _nul_bytes(dst):
    d = copy_case(dst)
    t = trace_of(d)
    b = t.read_bytes()
    t.write_bytes(b[: len(b) // 3] + b"\x00" * 64 + b[len(b) // 3:])
    return diagnose(d)


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


CASES: list[Case] = [
    # class 5
    Case("symlink-loop-in-folder", 5, _symlink_loop_in_folder, "error", "loop_a.csv"),
    Case("symlink-loop-argument", 5, _symlink_loop_arg, "error", "symbolic links"),
    Case("dangling-symlink-in-folder", 5, _dangling_in_folder, "error", "sync_bound_extra_cuda_gpu_trace.csv"),
    Case("dangling-symlink-argument", 5, _dangling_arg, "error", "link.sqlite"),
    Case("unreadable-file", 5, _unreadable_file, "error", "permission", spawn=True, needs_user=True),
    Case("unreadable-folder", 5, _unreadable_folder, "error", "readable", spawn=True, needs_user=True),
    Case("fifo-in-folder", 5, _fifo, "error", "sync_bound_osrt_trace.csv", spawn=True),
    Case("fifo-argument", 5, _fifo_arg, "error", "prof.sqlite", spawn=True),
    Case("cases-yaml-latin1", 5, _cases_latin1, "error", ".cases.yaml"),
    Case("cases-yaml-folder", 5, _cases_folder, "error", ".cases.yaml"),
    Case("sqlite-kernel-without-end", 5, _sqlite_kernel_without_end, "error", "'end'"),
    Case("csv-trace-without-duration", 5, _csv_trace_without_duration, "error", "sync_bound_cuda_gpu_trace.csv"),
    Case("console-cut-in-number", 5, _console_cut_in_number, "report", "cut short inside the numbers"),
    Case("console-cut-in-count-then-newline", 6, _console_cut_in_count_then_newline, "report",
         "cut short inside the numbers"),
    Case("window-1e300", 5, _window("1e300:2e300"), "error", "--window"),
    Case("window-1e19", 5, _window("0:1e19"), "error", "--window"),
    Case("window-1e400", 5, _window("1e400:1e401"), "error", "--window"),
    Case("window-nan", 5, _window("nan:inf"), "error", "--window"),
    Case("binary-config", 5, _binary_config, "error", "nsys-expert.toml"),
    Case("config-skip-many", 5, _config_skip_many, "error", "skip-iterations"),
    Case("config-skip-negative", 5, _config_negative_skip, "error", "skip-iterations"),
    Case("config-is-folder", 5, _config_is_folder, "error", "cfgdir"),
    Case("sqlite-view-endless", 5, _sqlite_view_endless, "report", "not a table", spawn=True),
    # class 6
    Case("thousands-separators", 6, fixture(dmg_thousands), "report", "thousands separators"),
    Case("thousands-separators-summary", 6, _thousands_summary, "report", "thousands separators"),
    Case("scientific-notation", 6, _scientific, "report", "scientific notation"),
    Case("unit-microseconds", 6, _unit_micro, "report", "Duration (\u00b5s)"),
    Case("unit-mib", 6, _unit_mib, "report", "MiB"),
    Case("unit-unknown", 6, _unit_unknown, "error", "fortnights"),
    Case("cut-then-newline", 6, fixture(dmg_cut_then_newline), "report", "cut"),
    Case("cut-inside-quoted-name", 6, _cut_inside_quote, "report", "cut"),
    Case("negative-durations", 6, _negative_durations, "report", "negative"),
    Case("negative-durations-sqlite", 6, _negative_sqlite, "report", "negative"),
    Case("overlap-one-stream", 6, fixture(dmg_overlap), "report", "same stream ended"),
    Case("292-year-kernel", 6, fixture(dmg_292_years), "report", "longer than a day"),
    Case("292-year-kernel-sqlite", 6, _292_years_sqlite, "report", "longer than"),
    Case("ncu-details-cut", 6, _ncu_cut, "report", "sync_bound_details.csv: the file was cut at line"),
    Case("names-replaced-by-fffd", 6, _fffd_names, "report", "U+FFFD"),
    Case("sqlite-without-stringids", 6, _no_stringids, "report", "StringIds"),
    Case("nul-bytes-in-trace", 6, _nul_bytes, "error", "sync_bound_cuda_gpu_trace.csv"),
    # class 7
    Case("two-runs-one-folder", 7, _two_runs_one_folder, "error", "different runs"),
    Case("two-runs-two-folders", 7, _two_runs_two_folders, "error", "different runs"),
    Case("two-exports-one-folder", 7, _two_exports_one_folder, "error", "different runs"),
    Case("one-export-copied-twice", 7, _same_export_twice, "report", "copy of"),
    Case("one-run-two-folders", 7, _same_run_two_folders, "report", "copy of"),
    Case("one-run-exported-twice-usec", 7, fixture(dmg_usec_twice), "report", "same run"),
    Case("summary-of-another-run", 7, _summaries_of_another_run, "report", "summary of another run"),
    # class 8
    Case("all-reports-empty", 8, _all_empty, "report", "no rows"),
    Case("all-reports-header-only", 8, _header_only, "report", "no rows"),
    Case("window-after-profile", 8, _window_outside, "error", "--window"),
    Case("window-before-profile", 8, _window_before, "error", "--window"),
    Case("starved-gpu", 8, _starved, "report", None),
    Case("sqlite-without-gpu-work", 8, _empty_sqlite_tables, "report", "no rows of GPU work"),
    # class 10
    Case("sqlite-wal-uncheckpointed", 10, _wal, "report", "-wal"),
    Case("sqlite-wal-no-shm", 10, lambda d: _wal(d, shm=False), "report", "-wal"),
    Case("sqlite-wal-as-folder", 10, lambda d: diagnose(Path(_wal(d)[1]).parent), "report", "-wal beside it"),
    Case("sqlite-wal-checkpointed", 10, lambda d: _wal(d, checkpointed=True), "report", None),
    # the same damage to the real shared cases (../shared/cases): other shapes, sizes and stream layouts
    *[Case(f"{case}-{kind}", cls, shared(case, dmg), "report", text, needs_shared=True)
      for case in ("healthy", "launch_bound", "memcpy_bound")
      for kind, cls, dmg, text in (("thousands-separators", 6, dmg_thousands, "thousands separators"),
                                   ("cut-then-newline", 6, dmg_cut_then_newline, "was cut at line"),
                                   ("overlap-one-stream", 6, dmg_overlap, "same stream ended"),
                                   ("292-year-kernel", 6, dmg_292_years, "longer than a day"),
                                   ("exported-twice-usec", 7, dmg_usec_twice, "same run"))],
]
