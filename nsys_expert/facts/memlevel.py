"""How full the GPU's memory is in the steady state (issue 54, memory pressure), from the device memory the CUDA
driver served (``nsys profile --cuda-memory-usage=true``: load/sqlite/memory.py's ``mem_usage`` and each GPU's
size, ``device_memory``).

The level on a device is the running sum of its allocations less its frees from the first recorded event (all
processes on the device: their memory is shared). A caching allocator (PyTorch's) keeps what it allocated, so a
steady state near the device's size with allocations and frees inside the steps is the cache running out: an
allocation fails, the allocator frees its cached blocks (``cudaFree``, which waits for the device) and asks
again (``torch.cuda.memory_stats()['num_alloc_retries']``). Measured on trainapp ``mem_pressure`` (H100 80GB):
98.9 % of the device in use in the window, 12.4 device allocations and frees a step, 7 allocator retries.
"""
from __future__ import annotations

import polars as pl

from .base import Context
from .declare import fact, group

GIB = float(1 << 30)


def applies(ctx: Context) -> bool:
    t = ctx.prof.tables
    return t.get("mem_usage") is not None and t.get("device_memory") is not None and ctx.win.length_ns > 0


def _device_levels(usage: pl.DataFrame, w0: int, w1: int) -> pl.DataFrame:
    """Per device: the level when the window opens, the peak inside it, the events inside it."""
    lv = usage.with_columns(pl.col("delta").cum_sum().over("device_id").alias("level"))
    before = lv.filter(pl.col("start_ns") < w0).group_by("device_id").agg(pl.col("level").last().alias("at_start"))
    inside = lv.filter((pl.col("start_ns") >= w0) & (pl.col("start_ns") <= w1)).group_by("device_id").agg(
        pl.col("level").max().alias("peak_in"), pl.len().alias("events"))
    out = before.join(inside, on="device_id", how="full", coalesce=True)
    return out.with_columns(pl.max_horizontal(pl.col("at_start").fill_null(0), pl.col("peak_in").fill_null(0)).alias("peak"),
                            pl.col("events").fill_null(0))


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    src = prof.source_name("mem_usage")
    dev = _device_levels(prof.tables["mem_usage"], win.start_ns, win.end_ns).join(
        prof.tables["device_memory"], on="device_id", how="inner")
    if dev.height == 0:
        return
    dev = dev.with_columns((100.0 * pl.col("peak") / pl.col("total_bytes")).alias("pct")).sort("pct", descending=True)
    top = dev.row(0, named=True)
    fs.put("device_mem_peak_pct", top["pct"], src)
    fs.put("device_mem_peak_gib", top["peak"] / GIB, src)
    fs.put("device_mem_total_gib", top["total_bytes"] / GIB, src)
    if win.steady_iters > 0:
        fs.put("device_mem_events_per_iter", top["events"] / win.steady_iters, src)


FACTS = [
    fact("device_mem_peak_pct", "%", "the most device memory in use inside the window (the driver's allocations less its frees, all processes) on the fullest GPU, as a share of that GPU's memory (nsys --cuda-memory-usage=true)", ("mem_usage",)),
    fact("device_mem_peak_gib", "GiB", "that peak, in GiB", ("mem_usage",)),
    fact("device_mem_total_gib", "GiB", "the memory of that GPU, in GiB", ("mem_usage",)),
    fact("device_mem_events_per_iter", "", "device memory allocations and frees the driver served per iteration inside the window, on that GPU (a caching allocator's misses and releases)", ("mem_usage",)),
]

GROUPS = [
    group("memlevel", compute, applies, reads=("input:mem_usage", "input:device_memory"), puts=(FACTS,)),
]
