"""CUDA API time by class: copy, sync, launch, allocator and code-loading calls as shares of all CUDA
API time, and of the window (or the span) where its length is known.

Sources: ``cuda_api_trace`` over the window when there is one (the calls that begin inside it),
else ``cuda_api_sum`` (the whole profile: ``_span`` facts, and the window facts when the window is
the whole profile, as for every summary fact). A share of CUDA API time says where the host's CUDA
time goes, not how long the host waited: a GPU-bound loop waits in ``cudaStreamSynchronize`` as a
host-bound one works outside CUDA. What turns a share into evidence is the GPU side:
``memcpy_api_over_gpu_work_ratio`` is the host time in copy calls over all the GPU's work (kernels
and copies, ``cuda_gpu_kern_sum`` + ``cuda_gpu_mem_time_sum``): above 1 the host spent longer in copy
calls than the GPU spent working, so those calls cannot all be waits for the GPU's work - the host
is blocked in copies (synchronous or pageable ``cudaMemcpy*``) while the GPU has nothing to do.
``alloc_calls_per_launch`` tells allocator churn from start-up allocations (a few tens of calls).
From ``cuda_api_sum`` the window facts (the whole profile's, what the rules read) leave out one-off
calls (api_oneoff.py: one call that is most of its API's time, the CUDA context created or code loaded
in the first call): start-up, not the steady state; the ``_span`` facts keep them (start-up included).
"""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import api_oneoff, intervals, timeline
from .base import Context, pct
from .names import (ALLOC_APIS, ASYNC_MEM_APIS, KERNEL_LAUNCH_APIS, MODULE_LOAD_APIS, SYNC_APIS, SYNC_MEM_APIS,
                    base_expr)
from .declare import fact, group

# copy calls only (memsets are their own, short calls); sync: the calls that only wait
MEMCPY_APIS = {n for n in SYNC_MEM_APIS | ASYNC_MEM_APIS if "Memset" not in n}
CLASSES = {"memcpy": MEMCPY_APIS, "sync": SYNC_APIS, "launch": KERNEL_LAUNCH_APIS, "alloc": ALLOC_APIS,
           "load": MODULE_LOAD_APIS}


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    s = prof.tables.get("api_sum")
    whole = win.source == "whole"
    # the summary stands for the window when it is the whole profile, or when no trace measures the window
    # (its steps marked by an NVTX trace alone: issue 56, item 8, as facts/summaries.py)
    stands = whole or ("gpu_trace" not in prof.tables and "api_trace" not in prof.tables)
    span_ns = (win.span_end_ns - win.span_start_ns) if win.span_start_ns is not None and win.span_end_ns else None
    if s is not None and s.height:
        src = prof.source_name("api_sum")
        tier = "summary"

        def put(name, value, source=src, steady=None):
            """``<name>_span``: the whole profile, start-up included; ``<name>`` (the window when it is the
            whole profile, what the rules read): ``steady`` when given, the value without one-off calls."""
            fs.put(f"{name}_span", value, source, tier)
            if stands and name not in fs.run:
                fs.put(name, value if steady is None else steady, source, tier)

        def classes(df):
            return _by_class(df.select(base_expr("name").alias("api"), pl.col("total_ns").cast(pl.Float64).alias("ns"),
                                       pl.col("count")))
        per = classes(s)
        # the window facts leave out one-off calls (the context created, code loaded in the first call:
        # api_oneoff.py): start-up, not the steady state
        st = classes(api_oneoff.steady(s, prof))
        api_oneoff.compute(fs, prof, put)
        for k, (ns, _n) in per["classes"].items():
            put(f"api_time_{k}_pct", pct(ns, per["total"]) or 0.0, steady=pct(st["classes"][k][0], st["total"]) or 0.0)
        put("api_time_top_call", per["top"], steady=st["top"])
        put("api_time_top_call_pct", per["top_pct"], steady=st["top_pct"])
        copy_ns, alloc_ns = per["classes"]["memcpy"][0], per["classes"]["alloc"][0]
        st_copy_ns = st["classes"]["memcpy"][0]
        launches = per["classes"]["launch"][1]
        if launches:
            put("alloc_calls_per_launch", per["classes"]["alloc"][1] / launches)
        frees, allocs = _frees_and_allocs(s)
        if allocs:
            put("free_calls_per_alloc", frees / allocs)
        if span_ns:
            fs.put("memcpy_api_share_pct_span", min(100.0, pct(copy_ns, span_ns)), src, tier)
            fs.put("alloc_api_share_pct_span", min(100.0, pct(alloc_ns, span_ns)), src, tier)
        work, tables = api_oneoff.gpu_work_tables(prof)
        if work:
            put("memcpy_api_over_gpu_work_ratio", copy_ns / work, " + ".join([src] + tables), steady=st_copy_ns / work)
            if not stands:   # a whole-profile ratio: over the window, the trace measures the copies themselves
                fs.absent.setdefault("memcpy_api_over_gpu_work_ratio", Note("absent.whole_profile_ratio"))
        put("memcpy_api_ms", copy_ns / 1e6, steady=st_copy_ns / 1e6)
    api = prof.tables.get("api_trace")
    if api is not None and api.height and win.length_ns and not whole:
        _window(fs, prof, win, api)


def _by_class(df: pl.DataFrame) -> dict:
    """{classes: {class: (ns, calls)}, total, top, top_pct} from rows (api, ns, count)."""
    total = float(df["ns"].sum()) or 0.0
    out = {}
    for k, names in CLASSES.items():
        sel = df.filter(pl.col("api").is_in(sorted(names)))
        out[k] = (float(sel["ns"].sum()), int(sel["count"].sum()))
    g = df.group_by("api").agg(pl.col("ns").sum()).sort(["ns", "api"], descending=[True, False])
    top = str(g["api"][0]) if g.height else None
    return {"classes": out, "total": total, "top": top,
            "top_pct": pct(float(g["ns"][0]), total) if g.height and total else None}


def _frees_and_allocs(s: pl.DataFrame) -> tuple[int, int]:
    """(calls that free, calls that allocate) among the allocator calls of an API summary: churn frees
    what it allocates, step after step (about one free per allocation); first-use allocations of a
    caching or growing allocator are kept, and freed, if at all, at the end (a few frees)."""
    a = s.select(base_expr("name").cast(pl.String).alias("api"), pl.col("count")).filter(pl.col("api").is_in(sorted(ALLOC_APIS)))
    free = a["api"].str.contains("Free")
    return int(a.filter(free)["count"].sum()), int(a.filter(~free)["count"].sum())


def _window(fs, prof, win, api: pl.DataFrame) -> None:
    """The same shares over the calls that begin inside the window (cuda_api_trace)."""
    src = prof.source_name("api_trace")
    a = timeline.starting_in(api, win.start_ns, win.end_ns)
    if a.height == 0:
        return
    key = base_expr("name") if "base_name" not in a.columns else pl.col("base_name")
    if a.schema["dur_ns"].is_integer():
        # one row per API (a few hundred) instead of per call (20 M calls: 1.6 s): integer sums are exact,
        # so the shares are the per-call sums' to the last bit
        df = (a.group_by(key.alias("api")).agg(pl.col("dur_ns").sum().cast(pl.Float64).alias("ns"),
                                                pl.len().alias("count"))
               .with_columns(pl.col("api").cast(pl.String)))
    else:
        df = a.select(key.cast(pl.String).alias("api"), pl.col("dur_ns").cast(pl.Float64).alias("ns"),
                      pl.lit(1).alias("count"))
    per = _by_class(df)
    for k, (ns, _n) in per["classes"].items():
        fs.put(f"api_time_{k}_pct", pct(ns, per["total"]) or 0.0, src)
    fs.put("api_time_top_call", per["top"], src)
    fs.put("api_time_top_call_pct", per["top_pct"], src)
    if per["classes"]["launch"][1]:
        fs.put("alloc_calls_per_launch", per["classes"]["alloc"][1] / per["classes"]["launch"][1], src)
    copies = a.filter(base_expr("name").is_in(sorted(MEMCPY_APIS)) if "base_name" not in a.columns
                      else pl.col("base_name").is_in(sorted(MEMCPY_APIS)))   # (the codes: no text per call)
    iv = intervals.clip(intervals.merge(copies.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))),
                        win.start_ns, win.end_ns)
    fs.put("memcpy_api_share_pct", pct(intervals.total(iv), win.length_ns) or 0.0, src)
    fs.put("memcpy_api_ms", per["classes"]["memcpy"][0] / 1e6, src)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("api_time_memcpy_pct", "%", "host time in copy calls (cudaMemcpy*, cuMemcpy*, synchronous and Async; memsets left out) as a share of all CUDA API time", ("api_trace", "api_sum")),
    fact("api_time_sync_pct", "%", "host time in synchronisation calls (cuda*/cu*Synchronize) as a share of all CUDA API time", ("api_trace", "api_sum")),
    fact("api_time_launch_pct", "%", "host time in kernel and graph launch calls as a share of all CUDA API time", ("api_trace", "api_sum")),
    fact("api_time_alloc_pct", "%", "host time in allocator calls (cudaMalloc / cudaFree, driver and pinned-host forms) as a share of all CUDA API time", ("api_trace", "api_sum")),
    fact("api_time_load_pct", "%", "host time in kernel-code loading calls (cuLibraryLoadData, cuModuleLoad*) as a share of all CUDA API time", ("api_trace", "api_sum")),
    fact("api_time_top_call", "", "the CUDA API call with the most host time", ("api_trace", "api_sum")),
    fact("api_time_top_call_pct", "%", "its share of all CUDA API time", ("api_trace", "api_sum")),
    fact("alloc_calls_per_launch", "", "allocator calls per kernel launch call (start-up allocations are a few tens; churn is one or more per few launches)", ("api_trace", "api_sum")),
    fact("free_calls_per_alloc", "", "calls that free device or pinned memory (cudaFree, cuMemFree, ...) per call that allocates it (cuda_api_sum, whole profile): churn frees what it allocates (about 1); a caching or growing allocator keeps its first-use allocations (a few frees at the end)", ("api_sum",)),
    fact("memcpy_api_ms", "ms", "host time in copy calls, all threads added up", ("api_trace", "api_sum")),
    fact("memcpy_api_share_pct", "%", "host time inside copy calls (all threads, union) as a share of the window (of the span from cuda_api_sum)", ("api_trace",)),
    fact("api_one_off_ms", "ms", "host time in one-off CUDA API calls (cuda_api_sum: one call that is most of its API's total, 1 ms or more, 100 times the typical call: the context created or code loaded in the first call, start-up), which the API time shares leave out", ("api_sum",)),
    fact("api_one_off_share_pct", "%", "those one-off calls' share of all CUDA API time", ("api_sum",)),
    fact("api_one_off_top_call", "", "the CUDA API whose one-off call is the longest", ("api_sum",)),
    fact("api_one_off_top_ms", "ms", "that call's time", ("api_sum",)),
    fact("memcpy_api_over_gpu_work_ratio", "x", "host time in copy calls (cuda_api_sum) / all GPU work, kernels + copies + memsets (cuda_gpu_kern_sum + cuda_gpu_mem_time_sum): above 1 the copy calls cannot all be waits for GPU work, the host is blocked in copies while the GPU is idle", ("api_sum",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("api_shares", compute, reads=("input:api_sum", "input:api_trace", "input:gpu_trace", "input:kern_sum",
                                        "input:mem_time_sum"),
          puts=(FACTS, "fact:alloc_api_share_pct_span")),
]
