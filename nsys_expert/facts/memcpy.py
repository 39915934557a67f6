"""Copies over the window: share of busy time, direction, bytes, bandwidth, pageable share."""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, in_window, pct
from .names import COPY_KERNEL
from .declare import fact, group, on_timeline


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    src = prof.source_name("gpu_trace")
    gpu = prof.tables["gpu_trace"]
    copies = gpu.filter(pl.col("kind") == "memcpy")   # one pass over the trace; the rest works on the copies
    ops = timeline.ops_intervals(copies)
    copy = timeline.busy_by_device(ops, win.start_ns, win.end_ns, ("memcpy",))
    tot_busy = fs.work.busy_total
    tot_copy = sum(intervals.total(b) for b in copy.values())
    fs.put("memcpy_share_of_busy_pct", pct(tot_copy, tot_busy) if tot_busy else 0.0, src)
    for fact, kinds in (("memcpy_host_share_of_busy_pct", ["HtoD", "DtoH", "HtoH"]), ("memcpy_dtod_share_of_busy_pct", ["DtoD", "PtoP"])):
        sel = ops.filter(pl.col("copy_kind").is_in(kinds))
        part = sum(intervals.total(b) for b in timeline.busy_by_device(sel, win.start_ns, win.end_ns).values())
        fs.put(fact, pct(part, tot_busy) if tot_busy else 0.0, src)
    _copy_kernels(fs, gpu, ops.filter(pl.col("copy_kind").is_in(["DtoD", "PtoP"])), win, tot_busy, src)
    _exposure(fs, ops, win, src)
    m = in_window(copies, win)
    rows = []
    for direction, key in (("HtoD", "h2d"), ("DtoH", "d2h")):
        d = m.filter(pl.col("copy_kind") == direction)
        b = float(d["bytes"].fill_null(0).sum())
        t = float(d["dur_ns"].sum())
        fs.put(f"memcpy_{key}_mb", b / 1e6, src)
        if t > 0 and b > 0:
            fs.put(f"memcpy_{key}_gbps", b / t, src)  # bytes/ns == GB/s
    hd = m.filter(pl.col("copy_kind").is_in(["HtoD", "DtoH"]))
    if hd.height:
        pageable = hd.filter(pl.col("src_kind").cast(pl.String).str.to_lowercase().str.contains("pageable").fill_null(False)
                             | pl.col("dst_kind").cast(pl.String).str.to_lowercase().str.contains("pageable").fill_null(False))
        fs.put("memcpy_pageable_share_pct", pct(float(pageable["dur_ns"].sum()), float(hd["dur_ns"].sum())), src)
    else:  # no host-device copies in the window: none of them is pageable
        fs.put("memcpy_pageable_share_pct", 0.0, src)
    if m.height:
        agg = (m.with_columns(pl.col("copy_kind").fill_null("other"),
                              (pl.col("src_kind").cast(pl.String).fill_null("") + "→" + pl.col("dst_kind").cast(pl.String).fill_null("")).alias("kinds"))
                .group_by("copy_kind").agg(pl.len().alias("count"), pl.col("bytes").fill_null(0).sum().alias("bytes"),
                                           pl.col("dur_ns").sum().alias("ns"), pl.col("kinds").mode().sort().first().alias("kinds"))
                .sort("ns", descending=True))
        for r in agg.iter_rows(named=True):
            rows.append({"direction": r["copy_kind"], "count": r["count"], "mb": r["bytes"] / 1e6, "ms": r["ns"] / 1e6,
                         "gbps": (r["bytes"] / r["ns"]) if r["ns"] else None, "memory": r["kinds"]})
    fs.tables["memcpy"] = rows


def _copy_kernels(fs, gpu: pl.DataFrame, dtod: pl.DataFrame, win, tot_busy: float, src) -> None:
    """Kernels that only copy (``.contiguous()``, ``.clone()``, ``torch.cat``: copy_kernels.yaml) count
    as copies: their share of busy and of kernel time, and the device's copies in all (copy kernels and
    device-to-device memcpy, one union)."""
    if not tot_busy:
        return
    # the copy kernels' names looked for among the distinct names, then those rows kept (a text per row
    # of ten million kernel names cost 2 s and a gigabyte)
    names = gpu.select(pl.col("name").unique()).to_series().drop_nulls().cast(pl.String)
    copying = names.filter(names.str.contains(COPY_KERNEL))
    ck = gpu.filter(pl.col("kind").is_in(list(timeline.KERNEL_WORK))
                    & pl.col("name").is_in(copying.to_list())) if copying.len() else gpu.head(0)
    kops = timeline.ops_intervals(ck)
    part = sum(intervals.total(b) for b in timeline.busy_by_device(kops, win.start_ns, win.end_ns).values()) if ck.height else 0
    kern = sum(intervals.total(b) for b in (fs.work.kern_busy or {}).values())
    fs.put("copy_kernel_share_of_busy_pct", pct(part, tot_busy), src)
    if kern:
        fs.put("copy_kernel_share_of_kernel_pct", pct(part, kern), src)
    both = pl.concat([kops, dtod], how="diagonal_relaxed") if ck.height else dtod
    dev = sum(intervals.total(b) for b in timeline.busy_by_device(both, win.start_ns, win.end_ns).values()) if both.height else 0
    fs.put("device_copy_share_of_busy_pct", pct(dev, tot_busy), src)


def _exposure(fs, ops: pl.DataFrame, win, src) -> None:
    """Host-device copy time not covered by kernel intervals on the same device (exposed: the GPU does
    nothing else meanwhile) and the share of it hidden under kernels. A pinned copy on a side stream
    under a GEMM costs nothing; only the exposed part can be won back."""
    host = ops.filter(pl.col("copy_kind").is_in(["HtoD", "DtoH", "HtoH"]))
    kern = fs.work.kern_busy or {}
    per_dev = timeline.busy_by_device(host, win.start_ns, win.end_ns)
    total = hidden = 0
    for d, iv in per_dev.items():
        t = intervals.total(iv)
        total += t
        if iv.height and d in kern and kern[d].height:
            hidden += int(intervals.coverage(iv, kern[d]).sum())
    n = max(1, len(fs.work.busy or {}))
    fs.put("memcpy_exposed_pct", pct((total - hidden) / n, win.length_ns) or 0.0, src)
    if total:
        fs.put("memcpy_hidden_pct", pct(hidden, total), src)


BURST_SHARE_OF_ITERS = 0.2   # "the iterations that copy most": this share of them


def compute_bursts(ctx: Context) -> None:
    """How much of the host-device copy time the fifth of the iterations that copy most launched: near
    100 % for a periodic checkpoint or evaluation copy, near 20 % for copies in every step (after the
    iterations group: it needs their count)."""
    fs, win = ctx.fs, ctx.win
    gpu = ctx.prof.tables["gpu_trace"]
    n = fs.run.get("iter_count") or 0
    if "launch_iter" not in gpu.columns or n < 5:
        return
    c = (in_window(gpu, win).filter((pl.col("kind") == "memcpy") & pl.col("copy_kind").is_in(["HtoD", "DtoH"])
                                    & pl.col("launch_iter").is_between(win.skipped, win.iterations.height - 1))
         .group_by("launch_iter").agg(pl.col("dur_ns").sum().alias("t")).sort("t", descending=True))
    total = float(c["t"].sum()) if c.height else 0.0
    if total <= 0:
        return
    top = max(1, int(n * BURST_SHARE_OF_ITERS))
    fs.put("memcpy_top_fifth_iters_share_pct", pct(float(c["t"].head(top).sum()), total), ctx.prof.source_name("gpu_trace"))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("memcpy_top_fifth_iters_share_pct", "%", "share of the window's host-device copy time launched in the fifth of the iterations that copy most (near 100: bursts, such as a periodic checkpoint; near 20: every step)", ("gpu_trace", "api_trace", "nvtx_trace")),
    fact("memcpy_share_of_busy_pct", "%", "memcpy time as a share of GPU busy time", ("gpu_trace", "mem_time_sum")),
    fact("memcpy_host_share_of_busy_pct", "%", "host-device copy time (HtoD, DtoH) as a share of GPU busy time", ("gpu_trace", "mem_time_sum")),
    fact("memcpy_dtod_share_of_busy_pct", "%", "device-to-device / peer copy time as a share of GPU busy time", ("gpu_trace", "mem_time_sum")),
    fact("copy_kernel_share_of_busy_pct", "%", "copy kernels (direct_copy_kernel, CatArrayBatchedCopy, ...: the name table in facts/copy_kernels.yaml) as a share of GPU busy time", ("gpu_trace", "gpu_sum")),
    fact("copy_kernel_share_of_kernel_pct", "%", "copy kernels as a share of kernel time", ("gpu_trace", "kern_sum")),
    fact("device_copy_share_of_busy_pct", "%", "copies on the device, copy kernels and device-to-device / peer memcpy together, as a share of GPU busy time", ("gpu_trace", "gpu_sum")),
    fact("memcpy_h2d_gbps", "GB/s", "host-to-device copy bandwidth (bytes / copy time)", ("gpu_trace", "mem_time_sum")),
    fact("memcpy_d2h_gbps", "GB/s", "device-to-host copy bandwidth (bytes / copy time)", ("gpu_trace", "mem_time_sum")),
    fact("memcpy_h2d_mb", "MB", "host-to-device bytes copied (10^6 bytes)", ("gpu_trace", "mem_size_sum")),
    fact("memcpy_d2h_mb", "MB", "device-to-host bytes copied (10^6 bytes)", ("gpu_trace", "mem_size_sum")),
    fact("memcpy_exposed_pct", "%", "host-device copy time not overlapped by kernels on the same device, as a share of the window"),
    fact("memcpy_hidden_pct", "%", "share of the host-device copy time overlapped by kernels on the same device (hidden behind compute)"),
    fact("memcpy_pageable_share_pct", "%", "share of host-device copy time that uses pageable (not pinned) host memory"),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("memcpy", compute, on_timeline, reads=("input:gpu_trace", "work:busy", "work:busy_total", "work:kern_busy"),
          puts=([f for f in FACTS if f.name != "memcpy_top_fifth_iters_share_pct"], "table:memcpy")),
    group("copy_bursts", compute_bursts, on_timeline, reads=("fact:iter_count", "input:gpu_trace"),
          puts=("fact:memcpy_top_fifth_iters_share_pct",)),
]
