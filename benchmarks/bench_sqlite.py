"""Speed and memory of `nsys-expert diagnose` on large SQLite exports, against reading the tables it needs with ADBC.

    python benchmarks/bench_sqlite.py [--millions 1,5] [--repeat 5] [--source PATH.sqlite] [--stages]

Builds each big export by tiling a real one (default: ../shared/cases/launch_bound/launch_bound.sqlite,
40,002 kernels and 80,021 API calls: 25 tiles per million kernels; else the sync_bound fixture's
export): every kernel, runtime and NVTX row is copied, shifted in time, with new correlation ids.
The exports are written into a temporary folder and removed afterwards. For each size it prints, as
medians of --repeat alternating runs of fresh processes (after one warm-up round), with each
process's peak RSS and CPU time (user + system: on a busy shared machine it moves less than the wall
time; the wall time gains from the two reader threads only while a core is free):
  - ADBC, kernel + runtime: a process that reads the kernel table (start, end, device, stream,
    correlation id, name id, pid) and the runtime table (start, end, name id, correlation id, thread)
    with ADBC into Polars, one after the other: the reference of issue 19's targets;
  - the same two reads side by side in two threads (what nsys-expert's reader does; the floor);
  - `nsys-expert diagnose EXPORT -o report.md`, and its ratio to the reference.
--stages adds in-process stage times (load, facts, engine, report) for each size.
Numbers are printed, never asserted: speed is not a unit test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure  # noqa: E402

DEFAULT = [os.path.join(ROOT, "..", "shared", "cases", "launch_bound", "launch_bound.sqlite"),
           os.path.join(ROOT, "fixtures", "sync_bound_sqlite", "input", "sync_bound.sqlite")]
TILED = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")

REFERENCE = """
import sys, threading
import adbc_driver_sqlite.dbapi as adbc, polars as pl
uri = "file:" + sys.argv[1] + "?mode=ro&immutable=1"
QUERIES = ['SELECT start, "end", deviceId, streamId, correlationId, demangledName, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL',
           'SELECT start, "end", nameId, correlationId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME']
def read(sql, out):
    con = adbc.connect(uri)
    out.append(pl.read_database(sql, con))
    con.close()
out = []
if sys.argv[2] == "threads":
    ts = [threading.Thread(target=read, args=(q, out)) for q in QUERIES]
    [t.start() for t in ts]
    [t.join() for t in ts]
else:
    for q in QUERIES:
        read(q, out)
assert sum(f.height for f in out) > 0
"""


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




def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--millions", default="1,5", help="sizes, in millions of kernels (comma-separated)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--source")
    ap.add_argument("--stages", action="store_true")
    a = ap.parse_args()
    src = a.source or next(p for p in DEFAULT if os.path.exists(p))
    con = sqlite3.connect(f"file:{src}?mode=ro&immutable=1", uri=True)
    per_tile = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    nsx = shutil.which("nsys-expert") or os.path.join(os.path.dirname(sys.executable), "nsys-expert")
    with tempfile.TemporaryDirectory(prefix="nsx-bench-") as tmp:
        for m in (float(x) for x in a.millions.split(",")):
            factor = max(1, round(m * 1e6 / per_tile))
            big = os.path.join(tmp, f"big{factor}.sqlite")
            n = tile(src, factor, big)
            print(f"export: {n:,} kernels, {os.path.getsize(big) / 1e6:.0f} MB ({factor} x {os.path.basename(src)}); "
                  f"{_measure.load()}")
            cmds = {"ADBC, kernel + runtime (reference)": [sys.executable, "-c", REFERENCE, big, "serial"],
                    "ADBC, kernel + runtime, two threads": [sys.executable, "-c", REFERENCE, big, "threads"],
                    "nsys-expert diagnose (Markdown)": [nsx, "diagnose", big, "-o", os.path.join(tmp, "r.md")]}
            res = _measure.alternate(cmds, a.repeat)
            print(_measure.HEADER.format(n=a.repeat))
            print("\n".join(_measure.table(res, "ADBC, kernel + runtime (reference)")))
            if a.stages:
                print(_measure.stages(big))
            print(f"  after: {_measure.load()}")
            os.chmod(big, 0o644)
            os.remove(big)


if __name__ == "__main__":
    main()
