"""NVTX ranges over the window: per-name time, the top range, data-loading ranges, NCCL calls."""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, pct
from .names import LIBRARY_DOMAINS, data_range_expr
from .window import group_names
from .declare import fact, group


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
        per = _per_name(n, win.start_ns, win.end_ns)
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


def _per_name(n: pl.DataFrame, start: int, end: int) -> pl.DataFrame:
    """(name, t, count): the time each range name covers in [start, end) (its instances merged) and its
    instances, sorted by time. The names become integer codes (a string sort and hash of the 560 k
    ranges of an autograd-NVTX profile cost 0.16 s); a name whose instances never overlap (operator
    ranges) needs no merge: its time is the sum of its clipped instances; the others are merged."""
    code = n["name"].cast(pl.Categorical).to_physical().alias("_c")
    r = pl.DataFrame([code, n["start_ns"].alias("s"), n["end_ns"].alias("e")])
    r = r.sort("_c", maintain_order=True) if r["s"].is_sorted() else r.sort(["_c", "s"])
    # (touching instances and reversed ones, end before start, are left to the merge too)
    overlap = ((pl.col("_c") == pl.col("_c").shift(1)) & (pl.col("s") <= pl.col("e").shift(1))) \
        | (pl.col("e") < pl.col("s"))
    merged = r.filter(overlap)["_c"].unique()
    plain = r.filter(~pl.col("_c").is_in(merged.implode()))
    plain = plain.filter((pl.col("e") > start) & (pl.col("s") < end)).group_by("_c").agg(
        (pl.col("e").clip(upper_bound=end) - pl.col("s").clip(lower_bound=start)).sum().alias("t"))
    parts = [plain]
    if merged.len():
        iv = intervals.clip(intervals.merge(r.filter(pl.col("_c").is_in(merged.implode())), by="_c"), start, end)
        parts.append(iv.group_by("_c").agg((pl.col("e") - pl.col("s")).sum().alias("t")))
    names = pl.DataFrame([code, n["name"]]).group_by("_c").agg(pl.col("name").first(), pl.len().alias("count"))
    return (pl.concat(parts).join(names, on="_c", how="left").select("name", "t", "count")
              .sort(["t", "name"], descending=[True, False]))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("nccl_api_calls", "", "NCCL calls seen as NVTX ranges (NCCL domain)", ("nvtx_trace", "nvtx_sum")),
    fact("nvtx_top_range_share_pct", "%", "share of the window covered by the most time-consuming NVTX range name", ("nvtx_trace", "nvtx_sum")),
    fact("data_range_share_pct", "%", "share of the window inside NVTX ranges named like input work", ("nvtx_trace", "nvtx_sum")),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("nvtx", compute, reads=("input:nvtx_pushpop_sum", "input:nvtx_sum", "input:nvtx_trace"), puts=(FACTS, "table:nvtx")),
]
