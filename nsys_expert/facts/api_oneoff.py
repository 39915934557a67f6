"""One-off CUDA API calls in ``cuda_api_sum``: one call that alone is most of its API's time.

The API summary adds every call of an API up. The first CUDA call of a process pays for creating the
context (hundreds of milliseconds to seconds), and, with lazy loading, the first use of a library pays
for loading its code; whichever call that is (a ``cudaMalloc``, a ``cudaMemcpyAsync``, a
``cudaStreamIsCapturing``, a ``cudaFree(0)``) then shows that time as "copy" or "allocator" time. The
summary's Max column tells it apart: when the longest call is most of its API's total
(``ONE_OFF_SHARE``), lasts ``ONE_OFF_MIN_NS`` or more (steady-state calls take microseconds: a launch
3-10 us, a ``cudaMalloc`` tens to hundreds) and the typical call (the median, ``Med``; reports without
it: the mean of the other calls) is at most ``TYPICAL_OVER_MAX`` of it, the time is that one call, paid
once: start-up, not the steady state. A single call of 1 ms or more is one too (it cannot repeat per step).
A call that may wait for the GPU's work (a synchronisation, a copy, a free: ``WAITING_APIS``) is a
one-off only when it is longer than all the GPU's work in the summaries (kernels + copies + memsets),
so that it cannot be that wait: one ``cudaDeviceSynchronize`` at the end of a GPU-bound run waits for
the whole queue, and that is the steady state's time, not start-up.

The summary facts that rules read as steady-state shares (facts/api_shares.py, summaries.py,
estimates.py) take ``steady()``'s times: those calls left out (their counts kept: the calls happened).
``api_one_off_*`` say what was left out, for a start-up rule to name.
"""
from __future__ import annotations

import polars as pl

from .names import ASYNC_MEM_APIS, SYNC_APIS, SYNC_MEM_APIS, base_expr

ONE_OFF_MIN_NS = 1_000_000   # 1 ms: a thousand steady-state launches' worth, a fraction of a context creation
ONE_OFF_SHARE = 0.5          # the longest call is most of the API's total
TYPICAL_OVER_MAX = 0.01      # and a hundred typical calls fit in it
# calls whose time may be a wait for the GPU's work: syncs, copies (pageable ones are synchronous), frees
WAITING_APIS = SYNC_APIS | SYNC_MEM_APIS | ASYNC_MEM_APIS | {"cudaFree", "cuMemFree", "cudaFreeHost", "cuMemFreeHost",
                                                             "hipFree", "hipHostFree"}


def gpu_work_tables(prof) -> tuple[float, list[str]]:
    """Kernel + copy + memset time of the whole profile from the summaries, and the tables it came from."""
    work, tables = 0.0, []
    for t in ("kern_sum", "mem_time_sum"):
        df = prof.tables.get(t)
        if df is not None and df.height and "total_ns" in df.columns:
            work += float(df["total_ns"].sum())
            tables.append(prof.source_name(t))
    if not tables:
        gs = prof.tables.get("gpu_sum")
        if gs is not None and gs.height and "total_ns" in gs.columns:
            work, tables = float(gs["total_ns"].sum()), [prof.source_name("gpu_sum")]
    return work, tables


def gpu_work_ns(prof) -> float | None:
    """All the GPU's work in the summaries (kernels + copies + memsets), None without them."""
    work, tables = gpu_work_tables(prof)
    return work if tables else None


def one_off_ns(df: pl.DataFrame, gpu_work: float | None = None) -> pl.Series:
    """Per row of an API summary (``total_ns``, ``count``, ``max_ns``, maybe ``med_ns``): the longest
    call's time when it is a one-off call, else 0 (0 everywhere without a Max column). ``gpu_work``:
    all the GPU's work (ns); a call of ``WAITING_APIS`` must outlast it (never, when it is unknown)."""
    if df.height == 0 or "max_ns" not in df.columns:
        return pl.Series("one_off_ns", [0.0] * df.height, pl.Float64)
    name = pl.col("base_name").cast(pl.String) if "base_name" in df.columns else base_expr("name").cast(pl.String)
    waits = name.is_in(sorted(WAITING_APIS))
    tot = pl.col("total_ns").cast(pl.Float64)
    mx = pl.col("max_ns").cast(pl.Float64)
    n = pl.col("count").cast(pl.Float64)
    rest_mean = pl.when(n > 1).then((tot - mx) / (n - 1)).otherwise(None)
    typical = pl.col("med_ns").cast(pl.Float64).fill_null(rest_mean) if "med_ns" in df.columns else rest_mean
    no_wait = ~waits | (mx > gpu_work) if gpu_work is not None else ~waits
    one = ((mx >= ONE_OFF_MIN_NS) & (mx >= ONE_OFF_SHARE * tot)
           & ((n <= 1) | (typical <= TYPICAL_OVER_MAX * mx)).fill_null(False) & no_wait)
    return df.select(pl.when(one).then(mx).otherwise(0.0).fill_null(0.0).alias("one_off_ns")).to_series()


def steady(df: pl.DataFrame, prof) -> pl.DataFrame:
    """The API summary with each one-off call's time taken out of ``total_ns`` (a float column then;
    ``count`` unchanged); ``one_off_ns`` added. ``prof``: the profile, for the GPU's work in its summaries."""
    if df.height == 0:
        return df.with_columns(pl.lit(0.0).alias("one_off_ns"))
    off = one_off_ns(df, gpu_work_ns(prof))
    return df.with_columns(off, (pl.col("total_ns").cast(pl.Float64) - off).alias("total_ns"))


def compute(fs, prof, put) -> None:
    """``api_one_off_ms`` (all one-off calls), ``api_one_off_share_pct`` (of all CUDA API time),
    ``api_one_off_top_call`` / ``api_one_off_top_ms`` (the longest one): from cuda_api_sum, whole profile."""
    s = prof.tables.get("api_sum")
    if s is None or s.height == 0 or "max_ns" not in s.columns:
        return
    d = steady(s, prof)
    off = float(d["one_off_ns"].sum())
    total = float(s["total_ns"].cast(pl.Float64).sum())
    put("api_one_off_ms", off / 1e6)
    if total > 0:
        put("api_one_off_share_pct", 100.0 * off / total)
    if off > 0:
        name = "base_name" if "base_name" in d.columns else "name"
        top = d.sort("one_off_ns", descending=True).row(0, named=True)
        put("api_one_off_top_call", str(top[name]))
        put("api_one_off_top_ms", top["one_off_ns"] / 1e6)
