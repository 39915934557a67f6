"""Speed and memory of `nsys-expert diagnose` on large real CSV traces, against Polars reading them.

    python benchmarks/bench_diagnose.py [--millions 1,10] [--repeat 5] [--stages]

Builds each big case by tiling a real profile (fixtures/launch_bound, 25 tiles per million GPU
operations) into a temporary folder, removed afterwards: every per-event CSV (the GPU trace, the CUDA
API trace, the NVTX trace) tiled, each tile shifted in time with its correlation ids and NVTX range ids
offset, so that the big case is as consistent as a real profile (each kernel has its one launch call);
the summaries' counts and totals scaled (see ``tile``). (Before issue 34's second part only the GPU
trace was tiled, as ../shared/tools/check/make_big.py does: 25 kernels per launch call, an input no
real profile has, which the replay spent a second on before refusing it.) For each size
it prints, as medians of alternating runs of fresh processes (after one warm-up round), with each
process's peak RSS and CPU time (user + system: on a busy shared machine it moves less than the wall
time):
  - typed scan: a process that scans the trace lazily with the nine columns the facts use, typed as
    nsys-expert types them (the reference of issue 19's targets);
  - read_csv: a process that reads the whole trace with `polars.read_csv`;
  - `nsys-expert diagnose CASE -o report.md`, and the ratios of every side to the typed scan.
  - typed scans of the GPU and API traces: the GPU trace's scan, then the API trace's six columns that
    nsys-expert reads (a consistent profile has about two calls per GPU operation: what reading both
    costs at least; printed beside the target, which is stated over the GPU trace's scan alone).
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
# The other big file of a consistent profile: the API trace's six columns that nsys-expert reads, typed as it
# types them, scanned after the GPU trace in the same process (what reading both traces costs at least).
BOTH_SCANS = TYPED_SCAN + """
api = {"Start (ns)": pl.Int64, "Duration (ns)": pl.Int64, "CorrID": pl.Int32, "Pid": pl.Int32, "Tid": pl.Int32,
       "Name": pl.Categorical}
assert pl.scan_csv(sys.argv[2], schema_overrides=api).select(list(api)).collect().height
"""


# The columns of the per-event CSVs that tiling changes (the names nsys prints, checked on
# fixtures/launch_bound/input and ../shared/cases): times shift by a tile's span, ids are offset so that
# they stay unique across tiles and matched between traces (a kernel's CorrId is its launch's CorrID).
TIMES = ("Start (ns)", "End (ns)")
IDS = ("CorrId", "CorrID", "RangeId", "ParentId")
STACKS = ("RangeStack",)   # NVTX ``:1:5``: the ids of the enclosing ranges
# The additive columns of the summary CSVs (a tiled run has FACTOR times the calls and the time; means,
# medians, extremes and shares are those of one tile).
TOTALS = ("Total Time (ns)", "Num Calls", "Instances", "Count", "QCount", "Total Proj Time (ns)",
          "Total Range Time (ns)", "Range Instances", "Total GPU Ops", "Total (MB)")


def _int(t: pl.DataFrame, c: str) -> pl.Series:
    return t[c].cast(pl.Int64, strict=False)


def tile(case_dir: str, factor: int, out: str) -> tuple[str, int]:
    """A profile FACTOR times as long as the case's, consistent as a real one is: every per-event CSV
    (``*_trace.csv``: the GPU trace, the CUDA API trace, the NVTX trace) tiled FACTOR times, each tile
    shifted by the span of the whole case (every trace's first start to its last end, plus 1 ms) and its
    ids (correlation ids, NVTX range ids and stacks) offset past the largest id of the case, so that each
    kernel still has its one launch call; the summary CSVs' counts and totals multiplied by FACTOR.
    Written tile by tile: ten million rows never sit in memory at once. -> (the GPU trace, its rows)."""
    os.makedirs(out, exist_ok=True)
    csvs = sorted(glob.glob(os.path.join(case_dir, "*.csv")))
    traces = {c: pl.read_csv(c, infer_schema_length=0) for c in csvs if c.endswith("_trace.csv")}
    lo, hi, top = None, None, 0
    for t in traces.values():
        if "Start (ns)" in t.columns and t.height:
            start = _int(t, "Start (ns)")
            end = _int(t, "End (ns)") if "End (ns)" in t.columns else start + _int(t, "Duration (ns)").fill_null(0)
            lo = start.min() if lo is None else min(lo, start.min())
            hi = end.max() if hi is None else max(hi, end.max())
        for c in IDS:
            if c in t.columns and t.height:
                top = max(top, int(_int(t, c).max() or 0))
    span = int(hi - lo) + 1_000_000 if lo is not None else 0
    for c in csvs:
        dst = os.path.join(out, os.path.basename(c))
        if c in traces:
            t = traces[c]
            with open(dst, "wb") as fh:
                for k in range(factor):
                    shift = [(_int(t, x) + k * span).cast(pl.Utf8).alias(x) for x in TIMES if x in t.columns]
                    shift += [(_int(t, x) + k * (top + 1)).cast(pl.Utf8).alias(x) for x in IDS if x in t.columns]
                    shift += [pl.col(x).str.split(":").list.eval(
                        pl.when(pl.element() == "").then(pl.element())
                          .otherwise((pl.element().cast(pl.Int64, strict=False) + k * (top + 1)).cast(pl.Utf8))).list.join(":")
                        for x in STACKS if x in t.columns]
                    t.with_columns(shift).write_csv(fh, include_header=k == 0)
        elif os.path.getsize(c) == 0:
            shutil.copy(c, dst)
        else:
            t = pl.read_csv(c, infer_schema_length=0)
            t.with_columns([(_int(t, x) * factor).cast(pl.Utf8).alias(x) if x != "Total (MB)" else
                            (t[x].cast(pl.Float64, strict=False) * factor).round(3).cast(pl.Utf8).alias(x)
                            for x in TOTALS if x in t.columns]).write_csv(dst)
    src = next(c for c in traces if c.endswith("_cuda_gpu_trace.csv"))
    return os.path.join(out, os.path.basename(src)), traces[src].height * factor


def _case_name(case: str) -> str:
    """``fixtures/launch_bound/input`` -> ``launch_bound``."""
    parts = os.path.normpath(case).split(os.sep)
    return parts[-2] if parts[-1] == "input" and len(parts) > 1 else parts[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--millions", default="1,10", help="sizes, in millions of GPU operations (comma-separated)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--repeat-big", type=int, default=2)
    ap.add_argument("--stages", action="store_true")
    ap.add_argument("--no-read-csv", action="store_true", help="leave out the whole-file polars.read_csv side")
    ap.add_argument("--case", default=os.path.join(ROOT, "fixtures", "launch_bound", "input"))
    a = ap.parse_args()
    nsx = shutil.which("nsys-expert") or os.path.join(os.path.dirname(sys.executable), "nsys-expert")
    per_tile = pl.scan_csv(glob.glob(os.path.join(a.case, "*_cuda_gpu_trace.csv"))[0]).select(pl.len()).collect().item()
    for m in (float(x) for x in a.millions.split(",")):
        with tempfile.TemporaryDirectory(prefix="nsx-bench-") as tmp:
            big = os.path.join(tmp, "big")
            trace, rows = tile(a.case, max(1, round(m * 1e6 / per_tile)), big)
            api_trace = glob.glob(os.path.join(big, "*_cuda_api_trace.csv"))[0]
            calls = pl.scan_csv(api_trace).select(pl.len()).collect().item()
            repeat = a.repeat if m < 5 else a.repeat_big
            print(f"trace: {rows:,} rows, {os.path.getsize(trace) / 1e6:.0f} MB; API trace {calls:,} calls, "
                  f"{os.path.getsize(api_trace) / 1e6:.0f} MB "
                  f"({_case_name(a.case)} tiled); {_measure.load()}")
            cmds = {"typed scan of the 9 columns (reference)": [sys.executable, "-c", TYPED_SCAN, trace],
                    "polars.read_csv": [sys.executable, "-c", READ_CSV, trace],
                    "typed scans of the GPU and API traces": [sys.executable, "-c", BOTH_SCANS, trace, api_trace],
                    "nsys-expert diagnose (Markdown)": [nsx, "diagnose", big, "-o", os.path.join(tmp, "r.md")]}
            if a.no_read_csv:
                del cmds["polars.read_csv"]
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
            both = res["typed scans of the GPU and API traces"]
            cpu_b, wall_b = _measure.median([c for _, _, c in both]), _measure.median([t for t, _, _ in both])
            print(f"  over the typed scans of both traces ({(rows + calls) / 1e6:.2f} M rows: {wall_b:.2f} s, CPU {cpu_b:.2f} s): "
                  f"diagnose takes {dt - wall_b:+.2f} s wall, {cpu_d - cpu_b:+.2f} s CPU")
            # the target restated over what diagnose must read: the typed scans of both traces, and the
            # allowance per million rows of both (a consistent profile has two API calls per GPU operation)
            all_rows = (rows + calls) / 1e6
            allow_b, allow_bc = wall_b + 0.25 + 0.08 * all_rows, cpu_b + 0.25 + 0.08 * all_rows
            print(f"  target over both scans: diagnose <= {wall_b:.2f} s + 0.25 s + 0.08 s x {all_rows:.2f} M rows = "
                  f"{allow_b:.2f} s: {dt:.2f} s, {'met' if dt <= allow_b else 'not met'} ({dt / allow_b:.2f}x); "
                  f"on CPU {cpu_d:.2f} s against {allow_bc:.2f} s ({cpu_d / allow_bc:.2f}x)"
                  + (f"; peak RSS {rss:.0f} MB <= 1536 MB at {all_rows:.1f} M rows: {'met' if rss <= 1536 else 'not met'}"
                     if all_rows >= 9.5 else ""))
            if a.stages:
                print(_measure.stages(big))
            print(f"  after: {_measure.load()}")


if __name__ == "__main__":
    main()
