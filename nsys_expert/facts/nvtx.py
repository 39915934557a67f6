"""NVTX ranges over the window: per-name time, the top range, data-loading ranges, NCCL calls."""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, pct
from .names import LIBRARY_DOMAINS, data_range_expr
from .window import group_names


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    nvtx = prof.tables.get("nvtx_trace")
    wlen = win.length_ns
    if nvtx is not None and nvtx.height and wlen:
        src = prof.source_name("nvtx_trace")
        n = nvtx.filter((pl.col("end_ns") > win.start_ns) & (pl.col("start_ns") < win.end_ns))
        fs.put("nccl_api_calls", n.filter(pl.col("name").str.starts_with("NCCL:") & ~pl.col("name").str.contains("(?i)comm|group"))
               .height, src)
        data = timeline.data_ranges(n, win.start_ns, win.end_ns)
        fs.put("data_range_share_pct", pct(intervals.total(data), wlen), src)
        iter_name = win.source.split(":", 1)[1] if win.source.startswith("nvtx:") else None
        # time covered by each range name (nested or overlapping instances counted once), in one
        # vectorised pass: PyTorch's emit_nvtx gives tens of thousands of distinct names
        iv = intervals.clip(intervals.merge(n.select("name", pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")),
                                            by="name"), win.start_ns, win.end_ns)
        per = (iv.group_by("name").agg((pl.col("e") - pl.col("s")).sum().alias("t"))
                 .join(n.group_by("name").agg(pl.len().alias("count")), on="name", how="left")
                 .sort(["t", "name"], descending=[True, False]))
        rows = [{"name": r["name"], "count": int(r["count"]), "ms": r["t"] / 1e6, "share_pct": pct(r["t"], wlen)}
                for r in per.iter_rows(named=True)]
        fs.tables["nvtx"] = rows[:10]
        # the iteration range under any of its numbers ("ProfilerStep#3" is an instance of 'ProfilerStep')
        steps = set(per.filter(group_names(pl.col("name").str.strip_chars_start(":")) == iter_name)["name"].to_list()) \
            if iter_name else set()
        others = [r for r in rows if r["name"] != iter_name and r["name"] not in steps
                  and not r["name"].startswith(LIBRARY_DOMAINS)]
        if others:
            fs.put("nvtx_top_range_share_pct", others[0]["share_pct"], src)
        else:
            fs.put("nvtx_top_range_share_pct", 0.0, src)
        return
    table = "nvtx_sum" if "nvtx_sum" in prof.tables else "nvtx_pushpop_sum"
    ns = prof.tables.get(table)
    if ns is not None and ns.height:
        src = prof.source_name(table)
        span = (win.span_end_ns - win.span_start_ns) if win.span_start_ns is not None and win.span_end_ns else None
        n_nccl = int(ns.filter(pl.col("name").str.starts_with("NCCL:")
                               & ~pl.col("name").str.contains("(?i)comm|group"))["count"].sum())
        fs.put("nccl_api_calls_span", n_nccl, src)
        if win.source == "whole":
            fs.put("nccl_api_calls", n_nccl, src)
        if span:
            d = float(ns.filter(data_range_expr("name"))["total_ns"].sum())
            fs.put("data_range_share_pct_span", min(100.0, pct(d, span)), src)
