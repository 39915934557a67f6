"""Issue 18 class 6: damaged numbers, units, cuts and impossible values in real reports."""
from __future__ import annotations

from robustness.build import copy_case, diagnose, edit_sqlite, rewrite_rows, set_col, sqlite_copy, trace_of


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
