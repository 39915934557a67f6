"""CUDA API calls over the window: launch and sync shares, sync calls per iteration, the API time table."""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, in_window, of_kinds, pct, srcs
from .names import ASYNC_MEM_APIS, KERNEL_LAUNCH_APIS, SYNC_APIS, SYNC_MEM_APIS, api_base
from .declare import fact, group, has


def compute(ctx: Context) -> None:
    fs, prof, win, timeline_ok = ctx.fs, ctx.prof, ctx.win, ctx.timeline_ok
    api = prof.tables["api_trace"]
    gpu = prof.tables.get("gpu_trace")
    src = prof.source_name("api_trace")
    s, e, wlen = win.start_ns, win.end_ns, win.length_ns
    a, n_before = timeline.api_in_window(api, s, e)   # calls begun before the window come first
    masks = a.select(launch=pl.col("api").is_in(sorted(KERNEL_LAUNCH_APIS)),
                     sync=pl.col("api").is_in(sorted(SYNC_APIS | SYNC_MEM_APIS)))
    inside = a.slice(n_before)                         # the calls that begin inside the window
    m_in = masks.slice(n_before)
    launch = fs.work.host["launch"]              # merged once for every user (compute)
    # blocking calls of both kinds: synchronisations and synchronous copies
    sync = intervals.clip(intervals.merge(a.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))
                                           .filter(masks["sync"])), s, e)   # two columns filtered, not five
    fs.put("launch_api_share_pct", pct(intervals.total(launch), wlen), src)
    if timeline_ok:
        kt = of_kinds(in_window(gpu, win).select("dur_ns", "kind"), timeline.KERNEL_WORK)["dur_ns"].sum()
        lt = inside["dur_ns"].filter(m_in["launch"]).sum()
        if kt:
            fs.put("launch_to_kernel_time_ratio", float(lt) / float(kt), srcs(src, prof.source_name("gpu_trace")))
    fs.put("sync_api_share_pct", pct(intervals.total(sync), wlen), src)
    n_sync = int(m_in["sync"].sum())
    if fs.window and fs.window.iterations is not None:
        n_iter = fs.window.iterations.height - fs.window.skipped
        if n_iter > 0:
            fs.put("sync_calls_per_iter", n_sync / n_iter, src)
    if n_sync and gpu is not None and "tid" in api.columns:
        _syncs_after_pageable_copies(fs, api, s, e, gpu, src)
    if timeline_ok and fs.work.busy is not None and sync.height:
        busy = fs.work.busy
        b = busy[min(busy)] if len(busy) == 1 else intervals.merge(pl.concat(list(busy.values())).select("s", "e"))
        covered = int(intervals.coverage(sync, b, fs.work.busy_cover if len(busy) == 1 else None).sum())
        fs.put("sync_gpu_busy_pct", pct(covered, intervals.total(sync)), srcs(src, prof.source_name("gpu_trace")))
    # API time table for the report (window)
    t = (inside.group_by("api").agg(pl.col("dur_ns").sum().alias("ns"), pl.len().alias("count"), pl.col("dur_ns").median().alias("med"))
          .sort("ns", descending=True))
    tot = float(t["ns"].sum()) or 1.0
    fs.tables["api"] = [{"name": r["api"], "ms": r["ns"] / 1e6, "count": r["count"], "share_pct": r["ns"] / tot * 100,
                         "median_us": (r["med"] or 0) / 1e3} for r in t.head(10).iter_rows(named=True)]
    fs.tables["api_source"] = src


def _syncs_after_pageable_copies(fs, api: pl.DataFrame, s: int, e: int, gpu: pl.DataFrame, src: str) -> None:
    """The share of the window's synchronisation calls made right after a copy call, on the same thread,
    whose copy went from pageable host memory to the device: PyTorch synchronises after each
    ``tensor.to('cuda')`` of a CPU tensor that is not pinned, so many small copies make as many syncs.
    (A read-back, ``.item()`` / ``.cpu()``, syncs because the host needs the value: not counted.)"""
    pageable = timeline.pageable_copy_corr_ids(gpu, "HtoD")
    a = timeline.starting_in(api, s, e).select("tid", "corr_id", api_base(api).alias("api"))
    sync = pl.col("api").is_in(sorted(SYNC_APIS))
    tids = a.filter(sync)["tid"]   # the few sync calls; then, thread by thread, the call just before each
    if tids.len() == 0:
        return
    after = 0
    copy = pl.col("api").is_in(sorted(ASYNC_MEM_APIS | SYNC_MEM_APIS)) & pl.col("corr_id").is_in(pageable)
    one_thread = a["tid"].n_unique() == 1
    for tid in (tids.unique().to_list() if pageable else []):
        mine = a if one_thread else a.filter(pl.col("tid") == tid)
        pos = mine.select(pl.arg_where(sync)).to_series()
        before = mine[pos.filter(pos > 0) - 1]
        after += before.filter(copy).height
    fs.put("sync_after_pageable_copy_pct", pct(after, tids.len()), src)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("launch_api_share_pct", "%", "host time inside kernel-launch calls (all threads, union) as a share of the window", ("api_trace", "api_sum")),
    fact("launch_to_kernel_time_ratio", "x", "host time in kernel-launch calls / GPU time in kernels (above 1: the host cannot launch as fast as the GPU runs them)", ("api_trace", "api_sum")),
    fact("sync_api_share_pct", "%", "host time inside blocking sync calls (cuda*/cu*Synchronize, sync memcpy / memset) as a share of the window", ("api_trace", "api_sum")),
    fact("sync_calls_per_iter", "", "blocking sync calls per iteration", ("api_trace",)),
    fact("sync_after_pageable_copy_pct", "%", "share of the window's sync calls made right after a copy call (same thread) whose copy went from pageable host memory to the GPU: PyTorch syncs after each .to('cuda') of an unpinned CPU tensor", ("api_trace", "gpu_trace")),
    fact("sync_gpu_busy_pct", "%", "share of host sync-wait time during which the GPU was busy (waits that cost nothing)", ("api_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("api", compute, has("api_trace"),
          reads=("input:api_trace", "input:gpu_trace", "work:busy", "work:busy_cover", "work:host"),
          puts=(FACTS, "table:api", "table:api_source")),
]
