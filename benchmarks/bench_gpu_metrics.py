"""Peak memory and time of reading nsys GPU metrics samples, for 1 million and 50 million samples.

    python benchmarks/bench_gpu_metrics.py [--samples 1000000 50000000] [--keep]

Builds synthetic exports by tiling a real one (``../shared/cases/gpu_metrics/memory_bound_gm``:
920,832 samples of 22 metrics on an H200 over 4.2 s): the gunzipped export is copied into a temporary
folder and its ``GPU_METRICS`` rows are appended again, shifted by the span each time, until the table
holds the asked number of samples (the tail of the last copy is cut). Nothing is written beside the
input; the temporary folder is removed (``--keep`` keeps it and prints where).

For each size, in a fresh process each (peak RSS is per process):
  - ``gm read``: ``load.gpu_metrics.read`` alone (the SQL binning and the frame);
  - ``diagnose``: ``nsys-expert diagnose`` of the whole export (every table, facts, rules, report);
  - ``python``: a process that only imports nsys_expert and Polars (the floor).
It prints samples, binned rows, bin width, seconds and peak RSS (MiB), and the ratio of the 50 M run's
peak to the 1 M run's. Numbers are printed, never asserted.
"""
from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "..", "shared", "cases", "gpu_metrics", "memory_bound_gm", "memory_bound_gm.sqlite.gz")

PROBE = r"""
import resource, sys, time
sys.path.insert(0, {root!r})
import polars, sqlite3
from nsys_expert.load import gpu_metrics
from nsys_expert.load.sqlite import reading as sr, tables as sq
mode, path = sys.argv[1], sys.argv[2]
t = time.perf_counter()
info = ""
if mode == "gm":
    con = sr.open_readers(path)
    cols = sq.read_schema(con)
    frame, meta, _ = gpu_metrics.read(con, cols, sq.gpu_names(con, cols), path, sr.read_frame)
    info = f"{{frame.height}} rows, bin {{meta['bin_ns'] / 1e3:.1f}} us"
    sr.close_readers(con)
elif mode == "diagnose":
    from nsys_expert import pipeline
    doc = pipeline.diagnose(pipeline.Request([path]))
    info = (doc["verdict"] or {{}}).get("rule") or "-"
dt = time.perf_counter() - t
print(f"{{dt:.2f}}\t{{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}}\t{{info}}")
"""


def build(src_gz: str, folder: str, samples: int) -> str:
    """A copy of the export whose GPU_METRICS holds ``samples`` rows (tiles of the real rows, shifted)."""
    base = os.path.join(folder, "base.sqlite")
    if not os.path.exists(base):
        with gzip.open(src_gz, "rb") as fi, open(base, "wb") as fo:
            shutil.copyfileobj(fi, fo, 1 << 20)
    out = os.path.join(folder, f"gm_{samples}.sqlite")
    shutil.copy(base, out)
    con = sqlite3.connect(out)
    n0, t0, t1 = con.execute("SELECT count(*), min(timestamp), max(timestamp) FROM GPU_METRICS").fetchone()
    span = t1 - t0 + 100_000
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    have, k = n0, 1
    while have < samples:
        take = min(n0, samples - have)
        con.execute("INSERT INTO GPU_METRICS (rawTimestamp, timestamp, typeId, metricId, value) "
                    "SELECT rawTimestamp + ?, timestamp + ?, typeId, metricId, value FROM GPU_METRICS "
                    "WHERE rowid <= ? ORDER BY rowid LIMIT ?", (k * span, k * span, n0, take))
        have += take
        k += 1
    if samples < n0:
        con.execute("DELETE FROM GPU_METRICS WHERE rowid > ?", (samples,))
    con.commit()
    con.close()
    return out


def probe(mode: str, path: str) -> tuple[float, float, str]:
    r = subprocess.run([sys.executable, "-c", PROBE.format(root=ROOT), mode, path], capture_output=True, text=True,
                       check=True)
    dt, rss, info = (r.stdout.rstrip("\n").splitlines()[-1].split("\t") + [""])[:3]
    return float(dt), float(rss), info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, nargs="+", default=[1_000_000, 50_000_000])
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(SRC):
        sys.exit(f"bench_gpu_metrics: {SRC} not found (the shared cases)")
    folder = tempfile.mkdtemp(prefix="nsx_gm_bench_")
    peaks = {}
    try:
        floor = probe("none", "-")
        print(f"python + nsys_expert + polars imported: peak RSS {floor[1]:.0f} MiB")
        print("samples\tstep\tseconds\tpeak RSS (MiB)\tresult")
        for n in args.samples:
            t = time.perf_counter()
            path = build(SRC, folder, n)
            print(f"{n:,}\tbuild\t{time.perf_counter() - t:.1f}\t-\t{os.path.getsize(path) / 2**20:.0f} MiB export")
            for mode in ("gm", "diagnose"):
                dt, rss, info = probe(mode, path)
                peaks[(n, mode)] = rss
                print(f"{n:,}\t{'gm read' if mode == 'gm' else mode}\t{dt:.2f}\t{rss:.0f}\t{info}")
            os.remove(path)
        lo, hi = min(args.samples), max(args.samples)
        if lo != hi:
            for mode in ("gm", "diagnose"):
                print(f"peak RSS {hi:,} / {lo:,} samples ({mode}): {peaks[(hi, mode)] / peaks[(lo, mode)]:.2f}x "
                      f"for {hi / lo:.0f}x the samples")
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
