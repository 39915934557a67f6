"""Allocator calls in the steady state: cudaMalloc / cudaFree and their driver and pinned-host forms.

A caching allocator (PyTorch's, JAX's) keeps these calls to start-up; inside the window they are
churn: each one costs host time, and ``cudaFree`` (``cuMemFree``) waits for the device to finish
the work that may still use the memory. Start-up allocations are outside the window and not counted.
"""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, pct
from .names import ALLOC_APIS
from .declare import fact, group, has

FREE_APIS = {"cudaFree", "cuMemFree", "cudaFreeHost", "cuMemFreeHost"}


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    src = prof.source_name("api_trace")
    a, n_before = timeline.api_in_window(prof.tables["api_trace"], win.start_ns, win.end_ns)
    inside = a.slice(n_before).filter(pl.col("api").is_in(sorted(ALLOC_APIS)))
    union = fs.work.host["alloc"]   # merged and clipped once for the gap causes too
    fs.put("alloc_api_share_pct", pct(intervals.total(union), win.length_ns) or 0.0, src)
    fs.put("alloc_calls_window", inside.height, src)
    n_iter = win.steady_iters
    if n_iter > 0:
        fs.put("alloc_calls_per_iter", inside.height / n_iter, src)
        fs.put("free_calls_per_iter", int(inside["api"].is_in(sorted(FREE_APIS)).sum()) / n_iter, src)
    if inside.height:
        top = inside.group_by("api").agg(pl.len().alias("n"), pl.col("dur_ns").sum().alias("ns")).sort("ns", descending=True)
        fs.tables["allocator"] = [{"name": r["api"], "count": r["n"], "ms": r["ns"] / 1e6} for r in top.iter_rows(named=True)]


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("alloc_api_share_pct", "%", "host time inside allocator calls (cudaMalloc / cudaFree, driver and pinned-host forms; union) as a share of the window", ("api_trace",)),
    fact("alloc_calls_window", "", "allocator calls that begin inside the window", ("api_trace",)),
    fact("alloc_calls_per_iter", "", "allocator calls per iteration in the window", ("api_trace",)),
    fact("free_calls_per_iter", "", "cudaFree / cuMemFree calls per iteration (each waits for the device)", ("api_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("allocator", compute, has("api_trace"), reads=("input:api_trace", "work:host"), puts=(FACTS, "table:allocator")),
]
