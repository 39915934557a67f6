"""What the checks for damaged inputs cost (issue 18), on a real trace tiled to a million operations.

    python benchmarks/bench_hostile.py [--factor 25] [--repeat 3]

Source: ../shared/cases/launch_bound/launch_bound_cuda_gpu_trace.csv (40,002 operations; factor 25
gives a million), else the sync_bound fixture's trace. Prints, best of --repeat, in ms and as a
share of reading the same trace:
  - the trace read (load.load_files on the tiled CSV: parse, normalize, checks);
  - load/sanity.stream_overlaps on one stream and on the same rows spread over 4 streams;
  - load/runs.fingerprint (kept per rank of a multi-rank job);
  - opening an export whose -wal holds changes (the private copy) against one without.
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
SOURCES = [os.path.join(ROOT, "..", "shared", "cases", "launch_bound", "launch_bound_cuda_gpu_trace.csv"),
           os.path.join(ROOT, "fixtures", "sync_bound", "input", "sync_bound_cuda_gpu_trace.csv")]
SQLITE = os.path.join(ROOT, "fixtures", "sync_bound_sqlite", "input", "sync_bound.sqlite")


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    from nsys_expert import load
    from nsys_expert.load import runs, sanity, sqlite

    src = next(p for p in SOURCES if os.path.exists(p))
    with tempfile.TemporaryDirectory() as d:
        raw = pl.read_csv(src, infer_schema=False)
        start = raw["Start (ns)"].cast(pl.Int64)
        span = int(start.max() - start.min()) + 10**9
        tiled = pl.concat([raw.with_columns((start + i * span).cast(pl.String).alias("Start (ns)"))
                           for i in range(a.factor)])
        path = os.path.join(d, "big_cuda_gpu_trace.csv")
        tiled.write_csv(path)
        read_ms = best(lambda: load.load_files([path]), a.repeat)
        g = load.load_files([path]).tables["gpu_trace"]
        multi = g.with_columns((pl.int_range(pl.len()) % 4).alias("stream"))
        one_ms = best(lambda: sanity.stream_overlaps(g), a.repeat)
        four_ms = best(lambda: sanity.stream_overlaps(multi), a.repeat)
        fp_ms = best(lambda: runs.fingerprint({"gpu_trace": g}, {}), a.repeat)
        print(f"trace: {g.height:,} operations from {os.path.basename(src)} x {a.factor}")
        print(f"read (all checks included)   {read_ms:8.0f} ms")
        for label, ms in (("overlap check, one stream", one_ms), ("overlap check, 4 streams", four_ms),
                          ("run fingerprint", fp_ms)):
            print(f"{label:28s} {ms:8.0f} ms  ({ms / read_ms * 100:.1f} % of the read)")

        plain = os.path.join(d, "plain.sqlite")
        shutil.copy(SQLITE, plain)
        wal_dir = os.path.join(d, "wal")
        os.mkdir(wal_dir)
        wal = os.path.join(wal_dir, "w.sqlite")
        shutil.copy(SQLITE, wal)
        con = sqlite3.connect(wal)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA wal_autocheckpoint=0")
        keep = sqlite3.connect(wal)
        keep.execute("SELECT 1 FROM sqlite_master").fetchone()
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
        con.commit()
        snap = os.path.join(d, "snap")
        os.mkdir(snap)
        for f in os.listdir(wal_dir):
            shutil.copy(os.path.join(wal_dir, f), snap)
        keep.close()
        con.close()
        p_ms = best(lambda: sqlite.read_sqlite(plain), a.repeat)
        w_ms = best(lambda: sqlite.read_sqlite(os.path.join(snap, "w.sqlite")), a.repeat)
        print(f"SQLite export ({os.path.getsize(SQLITE) / 1e6:.1f} MB): plain {p_ms:.0f} ms, with a pending -wal "
              f"{w_ms:.0f} ms ({w_ms / p_ms:.2f}x: the private copy)")


if __name__ == "__main__":
    main()
