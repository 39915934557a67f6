"""The steady state without NVTX: the iteration found from the repeating sequence of kernel names.

An inference or training loop launches the same kernels in the same order every iteration. Start-up
does not: the weights' upload (copies, no kernels), first-call autotuning (cuBLAS / cuDNN heuristics
trying kernels), lazy loading, the first iteration's allocations. So a kernel name that recurs every
``d`` kernels, over a run of at least ``MIN_PERIODS`` periods in which the whole name sequence repeats
with period ``d`` (``MIN_MATCH`` of the positions), marks iterations; the window starts at the second
period of the longest such run (the first is left out as warm-up, as with NVTX steps) and ends with
the trace's last operation. Vectorised: one pass over the kernel names per candidate name (at most
``CANDIDATES`` of them).
"""
from __future__ import annotations

from ..notes import Note

import polars as pl

MIN_PERIODS = 4
MIN_MATCH = 0.9
CANDIDATES = 6
MIN_KERNELS = 64
MIN_COVER = 0.5        # the periodic run holds at least half of the kernels after start-up


def periodic_start(gpu: pl.DataFrame) -> tuple[int, Note, int] | None:
    """(window start in ns, why, kernels per iteration) or None when no name sequence repeats."""
    k = gpu.filter(pl.col("kind") == "kernel") if "kind" in gpu.columns else gpu
    if k.height < MIN_KERNELS or "name" not in k.columns:
        return None
    name = pl.col("name")
    if k.schema["name"] not in (pl.Categorical, pl.Enum) and not isinstance(k.schema["name"], (pl.Categorical, pl.Enum)):
        name = name.cast(pl.Categorical)
    k = k.select("start_ns", name.to_physical().cast(pl.Int64).alias("code"))
    if not k["start_ns"].is_sorted():
        k = k.sort("start_ns")
    codes = k["code"]
    n = codes.len()
    # per name: its count and first position (the category codes' values depend on the string cache, so
    # they never order anything here: the same trace gives the same window on every run)
    counts = (pl.DataFrame({"code": codes}).with_row_index("i").group_by("code")
              .agg(pl.len().alias("count"), pl.col("i").min().alias("first")))
    ok = counts.filter((pl.col("count") >= MIN_PERIODS + 1) & (pl.col("count") <= n // 2)).select("code", "count", "first")
    # the rarest repeating names first (a kernel launched once an iteration is the cleanest anchor: the last
    # layer's GEMM, the loss), then the most frequent (one kernel of every layer repeats within an iteration)
    cand = pl.concat([ok.sort(["count", "first"]).head(CANDIDATES),
                      ok.sort(["count", "first"], descending=[True, False]).head(CANDIDATES // 2)]).unique(maintain_order=True)
    best = None
    for code, cnt, _first in cand.iter_rows():
        pos = pl.int_range(n, eager=True).filter(codes == code)
        diffs = pos.diff().slice(1)
        d = int(diffs.mode().sort()[-1])
        if d < 2:
            continue
        same = (diffs == d).cast(pl.Int8)
        # the longest run of equal spacing: runs of 1s, by the run id of each change
        runs = pl.DataFrame({"v": same, "r": (same != same.shift(1)).fill_null(True).cum_sum()})
        top = (runs.filter(pl.col("v") == 1).group_by("r").agg(pl.len().alias("len"))
               .sort(["len", "r"], descending=[True, False]))
        if top.height == 0 or top["len"][0] < MIN_PERIODS - 1:
            continue
        rid, length = int(top["r"][0]), int(top["len"][0])
        first = int(runs.with_row_index("i").filter(pl.col("r") == rid)["i"][0])
        a, b = int(pos[first]), int(pos[first + length])
        seg = codes.slice(a, b - a)
        if seg.len() <= d:
            continue
        match = float((seg.slice(0, seg.len() - d) == seg.slice(d)).mean())
        if match < MIN_MATCH or (b - a) < MIN_COVER * (n - a):
            continue
        score = b - a
        if best is None or score > best[0] or (score == best[0] and a < best[1]):
            best = (score, a, d, length)
    if best is None:
        return None
    _, a, d, periods = best
    start_idx = a + d   # the first period is warm-up
    start = int(k["start_ns"][start_idx])
    why = Note("window.periodic", {"d": d, "n": periods})
    return start, why, d
