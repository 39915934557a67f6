"""What no real profile can hold, found after loading: said in a warning, and what it would falsify is
left out (never read as if it were true).

- One GPU operation longer than a day (a 292-year kernel is an int64 end time read as a duration):
  the row is left out (``normalize``).
- A kernel summary whose kernels are not the trace's (another run's file under this run's prefix):
  it is left out, and the kernel facts come from the trace.
- Operations that overlap on one CUDA stream: a stream runs its work in order, so an overlap means
  the durations or start times are wrong; every timeline fact would be built on them, so the GPU
  trace is left out and only the summary facts are computed (``load._check_consistency``).
"""
from __future__ import annotations

import polars as pl

MAX_OP_NS = 86_400 * 10**9          # one day
# real traces show no overlap on a stream; a few ns of clock rounding are forgiven
OVERLAP_SLACK_NS = 1_000


def too_long(frame: pl.DataFrame) -> pl.Expr:
    return pl.col("dur_ns") > MAX_OP_NS


def stream_overlaps(gpu: pl.DataFrame) -> tuple[int, dict | None]:
    """(number of operations that start before the previous one on their stream ended, one example)."""
    if gpu.height < 2 or "stream" not in gpu.columns or gpu["stream"].null_count() == gpu.height:
        return 0, None
    keys = [c for c in ("device_id", "stream") if c in gpu.columns]
    g = gpu.select(*keys, "start_ns", "end_ns")   # these columns only: a filter of the whole trace copies it all
    if "kind" in gpu.columns and (gpu["kind"] == "graph").any():
        # a whole CUDA graph execution spans the kernels it ran: not an overlap
        g = g.filter(gpu["kind"] != "graph")
    if not g["start_ns"].is_sorted():    # normalize sorts the trace by start; within a stream that order holds
        g = g.sort("start_ns")
    # the latest end of the earlier operations of the same stream (no sort by stream: `over` keeps
    # order); one device and one stream (the usual case) needs no grouping (10x faster on 1M ops)
    prev = pl.col("end_ns").cum_max().shift(1)
    one = all(g.select(pl.col(k).min() == pl.col(k).max()).item() for k in keys if g[k].null_count() < g.height)
    if not one:
        key = pl.col("device_id").fill_null(0) * (1 << 32) + pl.col("stream").fill_null(-1) \
            if "device_id" in keys else pl.col("stream")
        prev = prev.over(key)
    o = (g.with_columns(prev.alias("prev_end"))
          .filter(pl.col("start_ns") < pl.col("prev_end") - OVERLAP_SLACK_NS))
    if o.height == 0:
        return 0, None
    return o.height, o.row(0, named=True)


def summary_of_another_run(gpu: pl.DataFrame, kern_sum: pl.DataFrame) -> str | None:
    """Why a kernel summary cannot describe this trace, or None. Both come from one report, so their
    kernel names agree and (unless the trace was cut) their counts too; a summary whose names are
    mostly not in the trace, with another count, is another run's."""
    kernel = pl.col("kind") == "kernel" if "kind" in gpu.columns else pl.lit(True)
    n_k = int(gpu.select(kernel.sum()).item())   # counted and named without a copy of the trace's other columns
    if n_k == 0:
        return None
    names = gpu.select(pl.col("name").filter(kernel).unique())["name"]
    tn = set(names.cast(pl.String).to_list())   # unique first: 1 M casts cost 0.17 s
    sn = set(kern_sum["name"].cast(pl.String).to_list())
    common = len(tn & sn) / len(tn | sn)
    n_sum = int(kern_sum["count"].sum() or 0)
    if common < 0.5 and n_sum != n_k:
        return (f"{common * 100:.0f}% of the kernel names in common, {n_sum} kernels in the summary against "
                f"{n_k} in the trace")
    return None
