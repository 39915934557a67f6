"""Kernels over the window: count, median, small-kernel share, kernel classes and the top-kernel table."""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import graph
from .base import KERNEL_FACT_LIMIT, SMALL_KERNEL_NS, Context, FactSet, in_window, of_kinds, pct
from .names import (CONV_KERNEL, FUSED_ATTENTION_KERNEL, FUSED_KERNEL, LOG_SOFTMAX_KERNEL, SOFTMAX_KERNEL,
                    LAYOUT_KERNEL, NCHW_KERNEL, NHWC_KERNEL, TRITON_ELEMENTWISE, fused_kernel_expr, kernel_class_expr, misaligned_gemm_expr, simt_gemm_expr)
from .declare import fact, group, on_timeline


def with_kernel_classes(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``kernel_class``, ``simt`` and ``fused`` columns, classifying each distinct name once (the regexes
    are costly on a million long demangled names; a run has a few dozen distinct ones)."""
    uniq = df.select(pl.col("name").unique()).with_columns(kernel_class_expr("name").alias("kernel_class"),
                                                           simt_gemm_expr("name").alias("simt"),
                                                           fused_kernel_expr("name").alias("fused"))
    return df.join(uniq, on="name", how="left", maintain_order="left")

def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    src = prof.source_name("gpu_trace")
    gpu = prof.tables["gpu_trace"]
    w = in_window(gpu, win).select("name", "dur_ns", "kind", *(c for c in ("start_ns", "end_ns", "corr_id") if c in gpu.columns))
    k = of_kinds(w, ("kernel",))
    fs.put("kernel_count", k.height, src)
    # the small-launch share counts what the host launched: a CUDA graph execution, or the kernels one graph
    # launch replayed, is one launch (no per-kernel launch cost); graph executions never enter the kernel
    # count, the median or the kernel table
    # (no graph launch in the window: no pass over the API trace for their ids)
    ids = graph.launch_ids(prof) if fs.run.get("graph_launch_count") else None
    units, g = graph.launch_units(w, k, ids)
    if units.height:
        fs.put("kernel_small_share_pct", pct(float((units["dur_ns"] < SMALL_KERNEL_NS).sum()), units.height), src)
    if fs.run.get("graph_launch_count") or g["graph_ns"]:   # put where the run launches graphs
        fs.put("graph_kernel_count", g["graph_kernels"], src)
        if g["work_ns"]:
            fs.put("graph_share_of_kernel_pct", 100.0 * g["graph_ns"] / g["work_ns"], src)
    if k.height == 0:
        return
    fs.put("kernel_median_us", float(k["dur_ns"].median()) / 1e3, src)
    per = (k.group_by("name").agg(pl.col("dur_ns").sum().alias("total_ns"), pl.len().alias("count"),
                                  pl.col("dur_ns").median().alias("med_ns"), pl.col("dur_ns").mean().alias("avg_ns"))
             .sort(["total_ns", "name"], descending=[True, False]))   # ties by name: one order
    kernel_table(fs, per, src)
    _attention_by_hand(fs, k, src)
    whole = 100.0 * g["whole_ns"] / g["work_ns"] if g["work_ns"] else 0.0
    if whole >= graph.WHOLE_GRAPHS_MAX_PCT:   # the kernels seen one by one are not the step's
        for f in CLASS_SHARES:
            fs.run.pop(f, None)
            fs.absent[f] = Note("absent.graph_whole_classes", {"pct": whole})


# what the kernel classes say: shares of the kernel time by name
CLASS_SHARES = ("matmul_share_of_kernel_pct", "elementwise_share_of_kernel_pct", "elementwise_fused_share_of_kernel_pct",
                "layout_convert_share_of_kernel_pct", "conv_share_of_kernel_pct", "nchw_kernel_share_of_kernel_pct",
                "simt_gemm_share_of_kernel_pct", "attention_by_hand_share_of_kernel_pct",
                "misaligned_gemm_share_of_kernel_pct")


MIN_SOFTMAX_SHARE_PCT = 3.0


def _attention_by_hand(fs: FactSet, k: pl.DataFrame, src: str | None) -> None:
    """The elementwise chain over the scores of an attention written by hand (scale, mask, softmax,
    dropout, the dtype copies around them, forward and backward): the elementwise kernel launches at
    least a quarter as long as the median softmax launch (they all walk the batch x heads x T x T scores,
    tens of times larger than the rest of the model's activations). 0 when no softmax runs outside a
    fused attention kernel, when the softmax kernels are under 3 % of the kernel time (a classifier's or a
    loss's softmax over the logits), or when the run has fused attention kernels (its attention is not by
    hand)."""
    name = pl.col("name").cast(pl.String)
    total = float(k["dur_ns"].sum()) or 1.0
    # each distinct name tested once (the regexes over a million kernel names cost ~0.8 s), then the
    # kernels picked by name
    names = k.select(pl.col("name").unique()).with_columns(
        soft=name.str.contains(SOFTMAX_KERNEL) & ~name.str.contains(LOG_SOFTMAX_KERNEL)
        & ~name.str.contains(FUSED_KERNEL) & ~name.str.contains(FUSED_ATTENTION_KERNEL),
        fused=name.str.contains(FUSED_ATTENTION_KERNEL))
    soft_names = names.filter("soft").select("name")
    soft = k.join(soft_names, on="name", how="semi") if soft_names.height else k.clear()
    # an attention's softmax walks the largest tensors of the model: 14 % of the kernel time in the measured
    # pair; a classifier's or a loss's softmax over the logits is well under 1 %
    if soft.height == 0 or names["fused"].any() or float(soft["dur_ns"].sum()) < MIN_SOFTMAX_SHARE_PCT / 100 * total:
        fs.put("attention_by_hand_share_of_kernel_pct", 0.0, src)
        return
    floor = 0.25 * float(soft["dur_ns"].median())
    chain_names = with_kernel_classes(names.select("name")).filter(
        (pl.col("kernel_class") == "elementwise") | name.str.contains(SOFTMAX_KERNEL)).select("name")
    chain = k.filter(pl.col("dur_ns") >= floor).join(chain_names, on="name", how="semi")
    fs.put("attention_by_hand_share_of_kernel_pct", float(chain["dur_ns"].sum()) / total * 100, src)


def kernel_table(fs: FactSet, per: pl.DataFrame, src: str | None, suffix: str = "") -> None:
    """Kernel-class shares, kernel-scope facts and the report's top-kernel table from a per-name frame."""
    per = with_kernel_classes(per)
    tot = float(per["total_ns"].sum()) or 1.0
    shares = per.group_by("kernel_class").agg(pl.col("total_ns").sum())
    share = {c: float(t) / tot * 100 for c, t in shares.iter_rows()}
    fs.put("matmul_share_of_kernel_pct" + suffix, share.get("matmul", 0.0), src)
    fs.put("elementwise_share_of_kernel_pct" + suffix, share.get("elementwise", 0.0), src)
    fs.put("elementwise_fused_share_of_kernel_pct" + suffix,
           float(per.filter((pl.col("kernel_class") == "elementwise") & pl.col("fused"))["total_ns"].sum()) / tot * 100, src)
    # a compiler's generated kernel is named after the aten ops it fused (..._convolution_backward_...,
    # ..._max_pool2d_with_indices_...): never a convolution, a layout conversion or an NCHW kernel
    name = pl.col("name").cast(pl.String)
    own = per.filter(~name.str.contains(TRITON_ELEMENTWISE))
    fs.put("layout_convert_share_of_kernel_pct" + suffix,
           float(own.filter(name.str.contains(LAYOUT_KERNEL))["total_ns"].sum()) / tot * 100, src)
    conv = float(own.filter(name.str.contains(CONV_KERNEL))["total_ns"].sum()) / tot * 100
    fs.put("conv_share_of_kernel_pct" + suffix, conv, src)
    nchw = own.filter(name.str.contains(NCHW_KERNEL) & ~name.str.contains(NHWC_KERNEL)
                      & ~name.str.contains(LAYOUT_KERNEL))   # a conv net's NCHW kernels, conversions apart
    fs.put("nchw_kernel_share_of_kernel_pct" + suffix, float(nchw["total_ns"].sum()) / tot * 100 if conv else 0.0, src)
    fs.put("simt_gemm_share_of_kernel_pct" + suffix,
           float(per.filter(pl.col("simt"))["total_ns"].sum()) / tot * 100, src)
    fs.put("misaligned_gemm_share_of_kernel_pct" + suffix,
           float(per.filter(misaligned_gemm_expr("name"))["total_ns"].sum()) / tot * 100, src)
    if suffix:
        return
    rows = []
    for i, r in enumerate(per.head(KERNEL_FACT_LIMIT).iter_rows(named=True)):
        rows.append({"name": r["name"], "kernel_class": r["kernel_class"],
                     "time_share_pct": round(r["total_ns"] / tot * 100, 4), "total_ms": r["total_ns"] / 1e6,
                     "count": int(r["count"]), "median_us": (r["med_ns"] or 0) / 1e3,
                     "avg_us": (r["avg_ns"] or 0) / 1e3, "rank": i + 1})
    fs.kernels = rows
    fs.tables["top_kernels"] = rows[:10]
    fs.tables["top_kernels_source"] = src


def compute_per_iteration(ctx: Context) -> None:
    """Facts built from two groups' results (kernels and iterations), after both ran."""
    fs = ctx.fs
    if "kernel_count" in fs.run and fs.run.get("iter_count"):
        fs.put("kernels_per_iter", fs.run["kernel_count"] / fs.run["iter_count"], ctx.prof.source_name("gpu_trace"))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("attention_by_hand_share_of_kernel_pct", "%", "share of kernel time in the elementwise chain over an attention's scores written by hand (scale, mask, softmax, dropout, their dtype copies, forward and backward): elementwise launches at least a quarter as long as the median softmax launch; 0 without a softmax outside fused attention kernels, when those softmax kernels are under 3 % of the kernel time, or with fused attention kernels in the run"),
    fact("kernel_count", "", "kernels in the window (whole profile when there is no trace)", ("gpu_trace", "kern_sum")),
    fact("kernel_median_us", "us", "median kernel duration", ("gpu_trace", "kern_sum")),
    fact("kernel_small_share_pct", "%", "share of kernels shorter than 10 us (by count)", ("gpu_trace", "kern_sum")),
    fact("kernels_per_iter", "", "kernels launched per iteration"),
    fact("matmul_share_of_kernel_pct", "%", "share of kernel time in GEMM / attention / convolution kernels (by name)", ("gpu_trace", "kern_sum")),
    fact("elementwise_fused_share_of_kernel_pct", "%", "share of kernel time in elementwise kernels a compiler already fused (triton_*_fused_*, nvFuser): fusing gives them nothing more", ("gpu_trace", "kern_sum")),
    fact("elementwise_share_of_kernel_pct", "%", "share of kernel time in elementwise / reduction / normalisation / optimizer kernels (by name)", ("gpu_trace", "kern_sum")),
    fact("conv_share_of_kernel_pct", "%", "share of kernel time in convolution kernels (cuDNN's and PyTorch's own, by name): a conv net", ("gpu_trace", "kern_sum")),
    fact("nchw_kernel_share_of_kernel_pct", "%", "share of kernel time in NCHW-layout kernels that have a channels_last counterpart (PyTorch's NCHW batch norm, depthwise convolution, pooling and upsampling; cuDNN's nchw helpers; by name; 0 without convolution kernels), layout conversions apart", ("gpu_trace", "kern_sum")),
    fact("layout_convert_share_of_kernel_pct", "%", "share of kernel time in layout-conversion kernels (cuDNN's nchwToNhwc / nhwcToNchw and kin, by name): NCHW tensors converted around NHWC tensor-core convolutions", ("gpu_trace", "kern_sum")),
    fact("misaligned_gemm_share_of_kernel_pct", "%", "share of kernel time in tensor-core GEMM kernels built for operands aligned to one or two elements (CUTLASS / cuBLAS names ending _align1 / _align2; fp64 and convolution kernels apart): a GEMM dimension that is not a multiple of 8 (a vocabulary of 50,257) makes the library fall back from its aligned kernels", ("gpu_trace", "kern_sum")),
    fact("simt_gemm_share_of_kernel_pct", "%", "share of kernel time in fp32/fp64 GEMMs on SIMT cores (no tensor cores, by name)", ("gpu_trace", "kern_sum")),
    fact("name", "", "kernel name as nsys prints it", ("gpu_trace", "kern_sum"), "kernel"),
    fact("kernel_class", "", "nccl / matmul / elementwise / other (from the name)", ("gpu_trace", "kern_sum"), "kernel"),
    fact("time_share_pct", "%", "share of kernel time in the window", ("gpu_trace", "kern_sum"), "kernel"),
    fact("total_ms", "ms", "total time in the window", ("gpu_trace", "kern_sum"), "kernel"),
    fact("count", "", "instances in the window", ("gpu_trace", "kern_sum"), "kernel"),
    fact("median_us", "us", "median duration", ("gpu_trace", "kern_sum"), "kernel"),
    fact("avg_us", "us", "mean duration", ("gpu_trace", "kern_sum"), "kernel"),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("kernels", compute, on_timeline, reads=("fact:graph_launch_count", "input:api_trace", "input:gpu_trace"),
          puts=([f for f in FACTS if f.name != "kernels_per_iter"], "fact:graph_kernel_count",
                "fact:graph_share_of_kernel_pct", "kernels", "table:top_kernels", "table:top_kernels_source")),
    group("per_iteration", compute_per_iteration, on_timeline, reads=("fact:iter_count", "fact:kernel_count"),
          puts=("fact:kernels_per_iter",)),
]
