"""What compiling the model would fuse: runs of unfused elementwise kernels back to back on a stream.

A compiler (Inductor, nvFuser) fuses the elementwise work *between* two kernels it cannot fuse (GEMMs,
convolutions, attention, library kernels): a run of k elementwise kernels becomes about one kernel that
moves the run's largest tensor traffic once, so the run's time shrinks to about its longest kernel. An
elementwise kernel alone between two GEMMs (a GELU between two linear layers, a bias already in the
GEMM's epilogue) is one read and one write already and gains nothing. The optimizer's kernels are left
out: compiling the model does not touch the optimizer step (multi-tensor / fused optimizer kernels,
``FUSED_OPT``); a run ends at the start of an iteration. The loss's runs are apart too (the cast of the logits, log-softmax, NLL, forward and
backward: ``LOSS_KERNEL``), which a compiled model fuses only where its forward computes the loss (a
Hugging Face model given labels); they are their own fact. Measured: trainapp compile_mlp (each GELU alone between two linear layers; the loss's
softmax and the fused AdamW outside the model) gained 2.7 % from ``torch.compile``, where half of all the
elementwise time said 31 %; compile_encoder (RMSNorm, residual adds, dropout, casts in chains) 31.1 %.
"""
from __future__ import annotations

import polars as pl

from .base import Context, in_window
from .declare import fact, group, has
from .kernels import with_kernel_classes
from .phase_work import FUSED_OPT

LOSS_KERNEL = r"(?i)nll_loss|LogSoftMax|log_softmax|cross_entropy"


def compute(ctx: Context) -> None:
    gpu = ctx.prof.tables.get("gpu_trace")
    if gpu is None or "kind" not in gpu.columns or "stream" not in gpu.columns:
        return
    launch = "launch_s" if "launch_s" in gpu.columns else "start_ns"
    k = in_window(gpu, ctx.win).filter(pl.col("kind") == "kernel").select(
        "start_ns", "dur_ns", "name", "stream", pl.col(launch).fill_null(pl.col("start_ns")).alias("at"))
    total = float(k["dur_ns"].sum())
    if k.height == 0 or total <= 0:
        return
    names = with_kernel_classes(k.select(pl.col("name").unique()))
    n = pl.col("name").cast(pl.String)
    chain = names.select("name", (
        (pl.col("kernel_class") == "elementwise") & ~pl.col("fused") & ~n.str.contains(FUSED_OPT)).alias("ew"),
        n.str.contains(LOSS_KERNEL).alias("loss"))
    # a run ends at a kernel that does not fuse, at a change of stream and at the start of an iteration
    # (a compiled step fuses within the step: a pure elementwise loop is a run per step, not one run)
    it = ctx.win.iterations
    if it is None or it.height < 2:   # no steps to end the runs at: a loop of elementwise kernels is one endless run
        return
    starts = it["s"].sort()
    # each kernel's flags picked by its name among the few that have them (``is_in`` over the codes: a
    # join of a million rows on their names hashed every row), and only the columns the runs read put in
    # stream order: none to sort when one stream ran (the window's kernels are in start order already)
    ew_names = chain.filter(pl.col("ew").fill_null(False))["name"].cast(pl.String).to_list()
    loss_names = chain.filter(pl.col("loss").fill_null(False))["name"].cast(pl.String).to_list()
    k = k.select("start_ns", "dur_ns", "stream", step=starts.search_sorted(k["at"], side="right"),
                 ew=pl.col("name").is_in(ew_names).fill_null(False),
                 loss=pl.col("name").is_in(loss_names).fill_null(False) if loss_names else pl.lit(False))
    if not (k["stream"].is_sorted() and k["start_ns"].is_sorted()):
        k = k.sort("stream", "start_ns")
    runs = (k.with_columns(run=((~pl.col("ew")) | (pl.col("stream") != pl.col("stream").shift(1))
                                | (pl.col("step") != pl.col("step").shift(1)))
                           .fill_null(True).cum_sum().set_sorted())   # (a count: grouped as runs of rows)
            .filter(pl.col("ew"))
            .group_by("run").agg(n=pl.len(), tot=pl.col("dur_ns").sum(), top=pl.col("dur_ns").max(),
                                 loss=pl.col("loss").any())
            .filter(pl.col("n") >= 2)
            .with_columns(saved=pl.col("tot") - pl.col("top")))
    model, loss = runs.filter(~pl.col("loss")), runs.filter(pl.col("loss"))
    src, fs = ctx.prof.source_name("gpu_trace"), ctx.fs
    fs.put("elementwise_chain_share_of_kernel_pct", float(model["tot"].sum()) / total * 100, src)
    fs.put("elementwise_fusible_share_of_kernel_pct", float(model["saved"].sum()) / total * 100, src)
    fs.put("elementwise_loss_fusible_share_of_kernel_pct", float(loss["saved"].sum()) / total * 100, src)
    fs.put("fusion_kernels_removed_pct", float((model["n"] - 1).sum()) / k.height * 100, src)


FACTS = [
    fact("elementwise_chain_share_of_kernel_pct", "%", "share of kernel time in runs of two or more unfused elementwise kernels back to back on a stream (no GEMM, convolution or library kernel between them; the optimizer's kernels and the loss's runs apart): the work a compiler fuses", ("gpu_trace",)),
    fact("elementwise_fusible_share_of_kernel_pct", "%", "share of kernel time that fusing those runs saves: each run shrinks to about its longest kernel (the largest tensor traffic moved once); an elementwise kernel alone between two GEMMs saves nothing; the loss's runs apart", ("gpu_trace",)),
    fact("elementwise_loss_fusible_share_of_kernel_pct", "%", "the same saving in the loss's runs (the logits' cast, log-softmax, NLL, forward and backward): won where the compiled code computes the loss", ("gpu_trace",)),
    fact("fusion_kernels_removed_pct", "%", "share of the window's kernels that fusing the model's elementwise runs removes (a run of k kernels becomes one): the launches, and the GPU's waits for them, that go", ("gpu_trace",)),
]

GROUPS = [
    group("fusion", compute, has("gpu_trace"), reads=("input:gpu_trace",), puts=(FACTS,)),
]
