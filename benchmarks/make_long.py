"""Build an SQLite export whose NVTX iterations are long: a real export tiled in time, its step ranges
replaced by a few that each hold PER_ITER kernels (a decode request, a big model's inference batch).

    python benchmarks/make_long.py OUT.sqlite [--source PATH.sqlite] [--kernels 560000] [--per-iter 93000]
                                   [--autograd]

Default source: ../shared/cases/launch_bound/launch_bound.sqlite (200 ``step`` ranges of 200 kernels of
~0.9 us, 40,002 kernels, 80,021 runtime calls). The steady part (from the first step's start to the last
step's end: its kernel, runtime and NVTX rows) is copied after itself, shifted by its span plus 20 us,
with new correlation ids, until the export holds about ``--kernels`` kernels (the start-up before the
first step stays once); then every ``step`` range is deleted and ranges named ``step`` are written,
each from the start of one original step to the end of the last original step it covers, so that each
holds about ``--per-iter`` kernels (the issue-47 decode profile: 558 k kernels, ~93 k per iteration).
Prints the kernels, iterations and size. The export is made in seconds; it is not kept in git.
"""
from __future__ import annotations

import argparse
import bisect
import os
import shutil
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_sqlite import DEFAULT, TILED  # noqa: E402


def tile_steps(src: str, factor: int, dst: str) -> None:
    """Copy ``src`` to ``dst`` with its steady part (the step ranges' span) laid end to end ``factor`` times."""
    shutil.copy(src, dst)
    os.chmod(dst, 0o644)
    con = sqlite3.connect(dst)
    lo, hi = con.execute("SELECT min(start), max(\"end\") FROM NVTX_EVENTS WHERE text = 'step'").fetchone()
    span = hi - lo + 20_000
    corr = con.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] + 1
    for table in TILED:
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
        names = ", ".join(f'"{c}"' for c in cols)
        for k in range(1, factor):
            sel = [f'"{c}" + {k * span}' if c in ("start", "end") else f'"{c}" + {k * corr}' if c == "correlationId"
                   else "NULL" if c == "rangeId" else f'"{c}"' for c in cols]
            con.execute(f'INSERT INTO "{table}" ({names}) SELECT {", ".join(sel)} FROM "{table}" '
                        f'WHERE start >= {lo} AND start <= {hi}')
    con.commit()
    con.close()


def lengthen(path: str, per_iter: int) -> tuple[int, int]:
    """Replace the step ranges by ranges of ``per_iter`` kernels each: -> (kernels, iterations)."""
    os.chmod(path, 0o644)
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute('PRAGMA table_info("NVTX_EVENTS")')]
    steps = con.execute("SELECT rowid, start, \"end\" FROM NVTX_EVENTS WHERE text = 'step' ORDER BY start").fetchall()
    if not steps:
        raise SystemExit(f"{path}: no NVTX 'step' ranges to lengthen")
    template = con.execute(f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM NVTX_EVENTS "
                           f"WHERE rowid = ?", (steps[0][0],)).fetchone()
    kern = [r[0] for r in con.execute("SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")]
    groups, a = [], 0
    while a < len(steps):
        first = bisect.bisect_left(kern, steps[a][1])
        b = a
        while b + 1 < len(steps) and bisect.bisect_left(kern, steps[b + 1][2]) - first < per_iter:
            b += 1
        groups.append((steps[a][1], steps[b][2]))
        a = b + 1
    con.execute("DELETE FROM NVTX_EVENTS WHERE text = 'step'")
    si, ei = cols.index("start"), cols.index("end")
    for s, e in groups:
        row = list(template)
        row[si], row[ei] = s, e
        if "rangeId" in cols:
            row[cols.index("rangeId")] = None
        con.execute(f"INSERT INTO NVTX_EVENTS ({', '.join(chr(34) + c + chr(34) for c in cols)}) "
                    f"VALUES ({', '.join('?' * len(cols))})", row)
    con.commit()
    con.execute("VACUUM")
    con.close()
    os.chmod(path, 0o444)
    return len(kern), len(groups)


def autograd(path: str) -> int:
    """Add one ``aten::..., seq = N`` NVTX range around each ``cudaLaunchKernel`` call of the launching
    thread (the ``--pytorch=autograd-nvtx`` shape): from the call's start - 2 us to its end + 0.5 us, the
    other columns copied from a ``step`` row. -> the ranges added."""
    os.chmod(path, 0o644)
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute('PRAGMA table_info("NVTX_EVENTS")')]
    q = ", ".join(chr(34) + c + chr(34) for c in cols)
    template = con.execute(f"SELECT {q} FROM NVTX_EVENTS WHERE text = 'step' LIMIT 1").fetchone()
    tid = template[cols.index("globalTid")]
    calls = con.execute("SELECT r.start, r.\"end\" FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                        "ON s.id = r.nameId WHERE s.value LIKE 'cudaLaunchKernel%' AND r.globalTid = ? "
                        "ORDER BY r.start", (tid,)).fetchall()
    ops = ("add", "mul", "mm", "copy_")
    si, ei, ti = cols.index("start"), cols.index("end"), cols.index("text")
    rows = []
    for i, (s, e) in enumerate(calls):
        row = list(template)
        row[si], row[ei], row[ti] = s - 2000, e + 500, f"aten::{ops[i % 4]}, seq = {i % 5000}"
        if "rangeId" in cols:
            row[cols.index("rangeId")] = None
        rows.append(row)
    con.executemany(f"INSERT INTO NVTX_EVENTS ({q}) VALUES ({', '.join('?' * len(cols))})", rows)
    con.commit()
    con.execute("VACUUM")
    con.close()
    os.chmod(path, 0o444)
    return len(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--source")
    ap.add_argument("--kernels", type=int, default=560_000)
    ap.add_argument("--per-iter", type=int, default=93_000)
    ap.add_argument("--autograd", action="store_true",
                    help="also one aten:: NVTX range around each kernel launch (autograd-nvtx shape)")
    a = ap.parse_args()
    src = a.source or next(p for p in DEFAULT if os.path.exists(p))
    con = sqlite3.connect(f"file:{src}?mode=ro&immutable=1", uri=True)
    per_tile = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    if os.path.exists(a.out):
        os.chmod(a.out, 0o644)
        os.remove(a.out)
    tile_steps(src, max(1, round(a.kernels / per_tile)), a.out)
    n, iters = lengthen(a.out, a.per_iter)
    ranges = autograd(a.out) if a.autograd else 0
    print(f"{a.out}: {n:,} kernels, {iters} iterations of ~{n // max(1, iters):,}, "
          f"{ranges:,} autograd ranges, {os.path.getsize(a.out) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
