"""Speed and memory of `nsys-expert diagnose` on large real CSV traces, against Polars reading them.

    python benchmarks/bench_diagnose.py [--millions 1,10] [--repeat 5] [--stages]

Builds each big case by tiling a real trace (the logic of ../shared/tools/check/make_big.py: the
cuda_gpu_trace of fixtures/launch_bound tiled, shifted in time, 25 tiles per million GPU operations;
the case's other CSVs copied as they are) into a temporary folder, removed afterwards. For each size
it prints, as medians of alternating runs of fresh processes (after one warm-up round), with each
process's peak RSS and CPU time (user + system: on a busy shared machine it moves less than the wall
time):
  - typed scan: a process that scans the trace lazily with the nine columns the facts use, typed as
    nsys-expert types them (the reference of issue 19's targets);
  - read_csv: a process that reads the whole trace with `polars.read_csv`;
  - `nsys-expert diagnose CASE -o report.md`, and the ratios of every side to the typed scan.
Sizes of 5 million operations and more run --repeat-big rounds (default 2): at ten million rows each
process holds gigabytes, and the machine is shared. --stages adds in-process stage times.
Then the targets of issue 34 (an allowance over the scan, measured side by side in the same run):
diagnose <= typed scan + 0.25 s + 0.08 s per million rows, and at 10 million rows peak RSS <= 1.5 GB.
Numbers are printed, never asserted: speed is not a unit test.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile

import polars as pl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure  # noqa: E402

TYPED_SCAN = """
import sys, polars as pl
cols = {"Start (ns)": pl.Int64, "Duration (ns)": pl.Int64, "CorrId": pl.Int64, "Bytes (MB)": pl.Float64,
        "SrcMemKd": pl.String, "DstMemKd": pl.String, "Device": pl.Categorical, "Strm": pl.Int64,
        "Name": pl.Categorical}
assert pl.scan_csv(sys.argv[1], schema_overrides=cols).select(list(cols)).collect().height
"""
READ_CSV = "import sys, polars; assert polars.read_csv(sys.argv[1]).height"


def tile(case_dir: str, factor: int, out: str) -> tuple[str, int]:
    os.makedirs(out, exist_ok=True)
    for c in glob.glob(os.path.join(case_dir, "*.csv")):
        if not c.endswith("_cuda_gpu_trace.csv"):
            shutil.copy(c, out)
    src = glob.glob(os.path.join(case_dir, "*_cuda_gpu_trace.csv"))[0]
    t = pl.read_csv(src, infer_schema_length=0)
    start = t["Start (ns)"].cast(pl.Int64)
    span = int(start.max() - start.min()) + 1_000_000
    dst = os.path.join(out, os.path.basename(src))
    with open(dst, "wb") as fh:   # tile by tile: ten million rows never sit in memory at once
        for k in range(factor):
            t.with_columns((start + k * span).cast(pl.Utf8).alias("Start (ns)")).write_csv(fh, include_header=k == 0)
    return dst, t.height * factor




def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--millions", default="1,10", help="sizes, in millions of GPU operations (comma-separated)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--repeat-big", type=int, default=2)
    ap.add_argument("--stages", action="store_true")
    ap.add_argument("--case", default=os.path.join(ROOT, "fixtures", "launch_bound", "input"))
    a = ap.parse_args()
    nsx = shutil.which("nsys-expert") or os.path.join(os.path.dirname(sys.executable), "nsys-expert")
    per_tile = pl.scan_csv(glob.glob(os.path.join(a.case, "*_cuda_gpu_trace.csv"))[0]).select(pl.len()).collect().item()
    for m in (float(x) for x in a.millions.split(",")):
        with tempfile.TemporaryDirectory(prefix="nsx-bench-") as tmp:
            big = os.path.join(tmp, "big")
            trace, rows = tile(a.case, max(1, round(m * 1e6 / per_tile)), big)
            repeat = a.repeat if m < 5 else a.repeat_big
            print(f"trace: {rows:,} rows, {os.path.getsize(trace) / 1e6:.0f} MB "
                  f"({os.path.basename(a.case.rstrip('/'))} tiled); {_measure.load()}")
            cmds = {"typed scan of the 9 columns (reference)": [sys.executable, "-c", TYPED_SCAN, trace],
                    "polars.read_csv": [sys.executable, "-c", READ_CSV, trace],
                    "nsys-expert diagnose (Markdown)": [nsx, "diagnose", big, "-o", os.path.join(tmp, "r.md")]}
            res = _measure.alternate(cmds, repeat)
            print(_measure.HEADER.format(n=repeat))
            print("\n".join(_measure.table(res, "typed scan of the 9 columns (reference)")))
            scan = _measure.median([t for t, _, _ in res["typed scan of the 9 columns (reference)"]])
            diag = res["nsys-expert diagnose (Markdown)"]
            dt, rss = _measure.median([t for t, _, _ in diag]), _measure.median([x for _, x, _ in diag])
            cpu_s = _measure.median([c for _, _, c in res["typed scan of the 9 columns (reference)"]])
            cpu_d = _measure.median([c for _, _, c in diag])
            allow = scan + 0.25 + 0.08 * rows / 1e6
            print(f"  target (issue 34): diagnose <= scan {scan:.2f} s + 0.25 s + 0.08 s x {rows / 1e6:.2f} M rows = "
                  f"{allow:.2f} s: {dt:.2f} s, {'met' if dt <= allow else 'not met'} ({dt / allow:.2f}x of it)"
                  + f"; on CPU time {cpu_d:.2f} s against {cpu_s + 0.25 + 0.08 * rows / 1e6:.2f} s"
                  + (f"; peak RSS {rss:.0f} MB <= 1536 MB: {'met' if rss <= 1536 else 'not met'}" if rows >= 9.5e6 else ""))
            if a.stages:
                print(_measure.stages(big))
            print(f"  after: {_measure.load()}")


if __name__ == "__main__":
    main()
