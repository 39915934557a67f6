"""Speed of loading a large nsys SQLite export, against reading its kernel table alone.

    python benchmarks/bench_sqlite.py [--factor 25] [--repeat 3] [--source PATH.sqlite]

Builds a big export by tiling a real one (default: ../shared/cases/launch_bound/launch_bound.sqlite,
40,002 kernels and 80,021 API calls, so factor 25 gives a million kernels; else the sync_bound
fixture's export): every kernel, runtime and NVTX row is copied FACTOR times, shifted in time, with
new correlation ids. Then prints, best of --repeat:
  - reference: the kernel table read with Python's sqlite3 + Polars (start, end, device, stream,
    correlation id, name id, pid: what a kernel timeline needs),
  - nsys-expert's load of the whole export (kernels, API calls, NVTX, summaries), and the ratio.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time

import polars as pl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
DEFAULT = [os.path.join(ROOT, "..", "shared", "cases", "launch_bound", "launch_bound.sqlite"),
           os.path.join(ROOT, "fixtures", "sync_bound_sqlite", "input", "sync_bound.sqlite")]
TILED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")


def tile(src: str, factor: int, dst: str) -> int:
    shutil.copy(src, dst)
    os.chmod(dst, 0o644)
    con = sqlite3.connect(dst)
    lo, hi = con.execute("SELECT min(start), max(\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    span = hi - lo + 1_000_000
    corr = con.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] + 1
    for table in TILED:
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
        for k in range(1, factor):
            sel = []
            for c in cols:
                if c in ("start", "end"):
                    sel.append(f'"{c}" + {k * span}')
                elif c == "correlationId":
                    sel.append(f'"{c}" + {k * corr}')
                elif c == "rangeId":
                    sel.append("NULL")
                else:
                    sel.append(f'"{c}"')
            con.execute(f'INSERT INTO "{table}" ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
                        f'SELECT {", ".join(sel)} FROM "{table}" WHERE start < {lo + span}')
    con.commit()
    n = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    os.chmod(dst, 0o444)
    return n


def best(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source")
    a = ap.parse_args()
    src = a.source or next(p for p in DEFAULT if os.path.exists(p))
    from nsys_expert.load import load_paths

    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.sqlite")
        n = tile(src, a.factor, big)
        print(f"export: {n:,} kernels, {os.path.getsize(big) / 1e6:.0f} MB ({a.factor} x {os.path.basename(src)})")
        sql = ('SELECT start, "end", deviceId, streamId, correlationId, demangledName, globalPid '
               'FROM CUPTI_ACTIVITY_KIND_KERNEL')

        def reference():
            con = sqlite3.connect(f"file:{big}?mode=ro&immutable=1", uri=True)
            rows = con.execute(sql).fetchall()
            pl.DataFrame(rows, schema=["start", "end", "dev", "stream", "corr", "name", "pid"], orient="row")
            con.close()

        ref = best(reference, a.repeat)
        ours = best(lambda: load_paths([big]), a.repeat)
        print(f"kernel table, sqlite3 + Polars : {ref:6.2f} s")
        print(f"nsys-expert load (everything)  : {ours:6.2f} s")
        print(f"ratio                          : {ours / ref:6.2f}x")


if __name__ == "__main__":
    main()
