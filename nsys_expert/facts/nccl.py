"""NCCL kernels over the window: share of busy time, overlap with compute, exposed time, their sequence."""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, in_window, of_kinds, pct
from .kernels import with_kernel_classes
from .declare import fact, group, on_timeline


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    src = prof.source_name("gpu_trace")
    # graph executions are compute that NCCL kernels can overlap with (never NCCL kernels themselves)
    kin = of_kinds(in_window(prof.tables["gpu_trace"], win).select("name", "start_ns", "end_ns", "dur_ns",
                                                                       "device_id", "kind"), timeline.KERNEL_WORK)
    busy = fs.work.busy
    tot_busy = fs.work.busy_total
    classes = with_kernel_classes(kin.select(pl.col("name").unique()))
    nccl_names = classes.filter(pl.col("kernel_class") == "nccl")["name"]
    if nccl_names.len() == 0:  # the common single-GPU case: no communication, compute is all kernel work
        fs.put("nccl_kernel_count", 0, src)
        fs.put("nccl_share_of_busy_pct", 0.0, src)
        if "kernel_active_pct" in fs.run:
            fs.put("compute_active_pct", fs.run["kernel_active_pct"], src)
        fs.share.nccl_sequence = pl.DataFrame(schema={"name": pl.String, "dur_ns": pl.Int64})
        return
    # a flag per kernel, not a text (a text column costs 16 bytes a row)
    k = kin.with_columns(pl.col("name").is_in(nccl_names.implode()).alias("is_nccl"))
    nccl = k.filter(pl.col("is_nccl"))
    fs.put("nccl_kernel_count", nccl.height, src)
    # compute = kernel work that is not communication (what a straggler has more of)
    comp = [intervals.total(intervals.clip(intervals.merge(part.select(pl.col("start_ns").alias("s"),
                                                                      pl.col("end_ns").alias("e"))), win.start_ns, win.end_ns))
            for (_,), part in k.filter(~pl.col("is_nccl")).partition_by("device_id", as_dict=True).items()]
    fs.put("compute_active_pct", pct(sum(comp) / max(1, len(busy)), win.length_ns), src)
    # the collectives in order, for cross-rank comparison (the last rank to arrive waits least)
    fs.share.nccl_sequence = nccl.sort("start_ns").select(pl.col("name").cast(pl.String), "dur_ns")
    overl, exposed = 0, 0
    tot_nccl = 0
    for (dev,), part in k.partition_by("device_id", as_dict=True).items():
        iv = part.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"), "is_nccl")
        n_iv = intervals.clip(intervals.merge(iv.filter(pl.col("is_nccl"))), win.start_ns, win.end_ns)
        c_iv = intervals.clip(intervals.merge(iv.filter(~pl.col("is_nccl"))), win.start_ns, win.end_ns)
        nt = intervals.total(n_iv)
        cov = int(intervals.coverage(n_iv, c_iv).sum()) if n_iv.height else 0
        tot_nccl += nt
        overl += cov
        exposed += nt - cov
    fs.put("nccl_share_of_busy_pct", pct(tot_nccl, tot_busy), src)
    fs.put("nccl_overlap_pct", pct(overl, tot_nccl), src)
    fs.put("nccl_exposed_pct", pct(exposed / max(1, len(busy)), win.length_ns), src)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("nccl_kernel_count", "", "NCCL / collective kernels in the window", ("gpu_trace", "kern_sum")),
    fact("nccl_share_of_busy_pct", "%", "NCCL kernel time as a share of GPU busy time", ("gpu_trace", "kern_sum")),
    fact("nccl_overlap_pct", "%", "share of NCCL kernel time overlapped by compute kernels on other streams"),
    fact("nccl_exposed_pct", "%", "NCCL kernel time not overlapped by compute, as a share of the window"),
    fact("compute_active_pct", "%", "union of non-NCCL kernel intervals as a share of the window (compute, without communication)"),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("nccl", compute, on_timeline, reads=("fact:kernel_active_pct", "input:gpu_trace", "work:busy", "work:busy_total"),
          puts=(FACTS, "share")),
]
