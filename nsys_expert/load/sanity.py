"""What no real profile can hold, found after loading: said in a warning, and what it would falsify is
left out (never read as if it were true).

- One GPU operation longer than a day (a 292-year kernel is an int64 end time read as a duration):
  the row is left out (``normalize``).
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
    if "kind" in gpu.columns:   # a whole CUDA graph execution spans the kernels it ran: not an overlap
        gpu = gpu.filter(pl.col("kind") != "graph")
    o = (gpu.select(*keys, "start_ns", "end_ns", "name")
            .sort([*keys, "start_ns"])
            .with_columns(pl.col("end_ns").shift(1).over(keys).alias("prev_end"))
            .filter(pl.col("start_ns") < pl.col("prev_end") - OVERLAP_SLACK_NS))
    if o.height == 0:
        return 0, None
    return o.height, o.row(0, named=True)
