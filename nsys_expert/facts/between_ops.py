"""The GPU work launched between the NVTX step ranges (issue 54, evidence before pattern): a batch assembled on the
GPU one sample at a time (``torch.stack([crop(x).float() for x in samples])`` in the loop, a collate that moves
and converts each sample on its own) launches one or more tiny kernels per sample between the steps. DataLoader
workers do not take that work (the tensors are on the GPU): batched operations do (one stack, one conversion).
facts/phase_work.py calls :func:`put` from its between-steps work, where the steps and the gaps are known.

Measured on trainapp ``mem_pressure`` (H100): 2,048 of the step's 2,139 kernels launched between the steps
(two per sample: ``.float()``, ``.div_()``), median 3.8 us; converting the stacked uint8 crops at once took the
step from 68.2 to 41.5 ms (39.2 %).
"""
from __future__ import annotations

import polars as pl

from . import intervals
from .base import pct
from .declare import fact
from .names import matching, short_kernel_name

# an optimizer's kernels (a fused or multi-tensor one by name; the for-each ones are plain elementwise kernels,
# which the top kernel's name in the finding lets the reader tell apart)
OPTIMIZER_KERNELS = r"(?i)multi_tensor_apply|fused_adam|fusedadam|adam_kernel|FusedOptimizer|fused_sgd|lamb_kernel"

_PW = ("gpu_trace", "api_trace", "nvtx_trace")


def put(fs, ops: pl.DataFrame, cover: pl.DataFrame, steps: pl.DataFrame, n_gaps: int, iter_now: float,
        gpu_busy: float, host_kept: float, src: str) -> None:
    """``cover``: the gaps between the step ranges (merged); ``host_kept``: the host's time a step that stays
    whatever the batch is made with (the step range's own time and the CUDA waits between the steps)."""
    kernels = ops.filter(pl.col("kind") == "kernel")
    k = kernels.filter(intervals.containing(kernels["launch_s"], cover))
    opt = matching(k, OPTIMIZER_KERNELS)   # an optimizer stepped outside the step range is no batch
    if opt.height:
        k = k.filter(~pl.col("name").is_in(opt["name"].unique().cast(pl.String).to_list()))
    lo, hi = int(steps["host_s"].min()), int(steps["host_e"].max())
    launched = int(kernels["launch_s"].is_between(lo, hi).sum())
    fs.put("between_steps_kernels_per_iter", k.height / n_gaps, src)
    fs.put("between_steps_kernel_share_pct", pct(k.height, launched) or 0.0, src)
    if k.height == 0:   # evaluated, and quiet
        fs.put("between_steps_kernel_median_us", 0.0, src)
        fs.put("batched_ops_gain_pct", 0.0, src)
        return
    k_ns = float((k["end_ns"] - k["start_ns"]).sum()) / n_gaps
    top = k.group_by(pl.col("name").cast(pl.String)).agg(pl.len().alias("n")).sort(
        ["n", "name"], descending=[True, False]).row(0, named=True)   # ties by name: the same answer every run
    fs.put("between_steps_top_kernel", short_kernel_name(str(top["name"])), src)
    fs.put("between_steps_top_kernel_share_pct", pct(top["n"], k.height), src)
    fs.put("between_steps_kernel_median_us", float((k["end_ns"] - k["start_ns"]).median()) / 1e3, src)
    # batched, the samples' tiny kernels become a few bandwidth-bound ones (taken as no time) and the host's
    # loop over the samples goes: the step takes the longest of the GPU's other work and the host time kept
    after = max(gpu_busy - k_ns, host_kept)
    fs.put("batched_ops_gain_pct", max(0.0, 100.0 * (1.0 - after / iter_now)), src)


FACTS = [
    fact("between_steps_kernels_per_iter", "", "kernels launched between the NVTX step ranges, per step (a batch assembled on the GPU one sample at a time launches one or more per sample)", _PW),
    fact("between_steps_kernel_share_pct", "%", "share of the kernels launched from the first step to the last that were launched between the step ranges", _PW),
    fact("between_steps_kernel_median_us", "us", "median duration of the kernels launched between the step ranges", _PW),
    fact("between_steps_top_kernel", "", "the kernel launched most often between the step ranges (a per-sample conversion, pad or copy; an optimizer or zero_grad left outside the step range would show here)", _PW),
    fact("between_steps_top_kernel_share_pct", "%", "that kernel's share of the kernels launched between the step ranges", _PW),
    fact("batched_ops_gain_pct", "%", "gain of making the batch with batched operations (one stack, one conversion) instead of per-sample ones between the steps: the step then takes the longest of the GPU's other work and the host time that stays (the step range's own time, the CUDA waits between the steps)", _PW),
]
