"""Where an iteration's time goes by phase, and what happens between the iterations (issue 46).

A trace with NVTX steps (the window's iterations) and the launch time of every GPU operation says, for
each phase range nested in the steps (``forward``, ``backward``, ``optimizer``, ``metrics``, ... as
``phases.yaml`` names them, PyTorch's ``Optimizer.step#...`` record_function ranges too), how long the
host spends in it per iteration, how many kernels it launches and how busy they keep the GPU; and
for the time *outside* the step ranges (between iterations) and the slow iterations, what pauses the
run: long pauses every few steps with device-to-host copies and file writes are a checkpoint.

Facts (all from the traces; none without them):
- ``optimizer_phase_*``: the optimizer range's share of the window, its milliseconds, kernels and
  median kernel per iteration, its kernels' GPU time over its wall time, the share of its kernel time
  in multi-tensor / fused optimizer kernels, and ``optimizer_fused_gain_pct``: the gain of a fused
  optimizer (the phase then takes ``FUSED_TIME_FACTOR`` of its kernels' GPU time).
- ``between_steps_share_pct``; ``pause_*``: pauses (a gap between steps, or the excess of a slow
  iteration, of at least ``PAUSE_MIN_MS`` and ``PAUSE_OVER_MEDIAN`` x the typical one) with their
  count, period in iterations, median length, share of the window, device-to-host megabytes and
  file-write time each, and ``checkpoint_async_gain_pct``: the gain of saving asynchronously.
- ``step_d2h_*``: device-to-host copies launched inside the steps, every step: megabytes per
  iteration, and the exposed time (``step_d2h_exposed_pct``): from the GPU's last work before each
  copy (or the copy call, when later) to the next operation after it: the copy, the staging of a
  pageable copy, and the host work that waited for it.
The report's per-phase table is ``tables["phase_work"]``.
"""
from __future__ import annotations

import bisect
import re

import polars as pl

from ..notes import Note
from . import between_ops, intervals
from .base import Context, in_window, pct
from .declare import fact, group, on_timeline
from .names import matching
from .phases import OPERATOR_NAME, classify_all, merged_table

# the facts this group puts (registry.py collects them): name, unit, doc, the inputs that can supply it
_PW = ("gpu_trace", "api_trace", "nvtx_trace")   # the traces and NVTX steps
FACTS = [
    fact("optimizer_phase_share_pct", "%", "share of the window in the NVTX optimizer ranges nested in the steps (optimizer, opt_step, Optimizer.step#...)", _PW),
    fact("optimizer_phase_ms_per_iter", "ms", "wall time in the optimizer ranges per iteration", _PW),
    fact("optimizer_phase_kernels_per_iter", "", "kernels launched inside the optimizer ranges per iteration", _PW),
    fact("optimizer_phase_kernel_median_us", "us", "median duration of the kernels launched inside the optimizer ranges", _PW),
    fact("optimizer_phase_gpu_busy_pct", "%", "GPU time of the optimizer ranges' kernels over the ranges' wall time (low: the host launching one small kernel after another)", _PW),
    fact("optimizer_phase_fused_kernel_share_pct", "%", "share of the optimizer ranges' kernel time in multi-tensor or fused optimizer kernels (multi_tensor_apply, fused_adam): near 100 the optimizer is fused already", _PW),
    fact("optimizer_phase_names", "", "the NVTX range names taken as the optimizer phase", _PW),
    fact("optimizer_fused_gain_pct", "%", "gain of a fused optimizer: the optimizer ranges' wall time per iteration minus 0.35 of their kernels' GPU time, as a share of the iteration", _PW),
    fact("zero_fill_run_per_iter", "", "the longest run of back-to-back fill / zero kernels of floating-point tensors launched in a step (no other kernel between their launches; integer fills apart), median over the steps: zero_grad(set_to_none=False) launches one per parameter tensor", _PW),
    fact("zero_fill_run_ms_per_iter", "ms", "the host time of that run a step (from its first launch call to its last, median over the steps): the time zero_grad spends zeroing the gradients one tensor at a time", _PW),
    fact("idle_top_phase", "", "the NVTX phase nested in the steps (optimizer, forward, backward, data, ...) that holds most of the GPU's idle time", _PW),
    fact("idle_top_phase_names", "", "the NVTX range names of that phase", _PW),
    fact("idle_top_phase_share_pct", "%", "share of the GPU's idle time in the window that lies in that phase", _PW),
    fact("between_steps_share_pct", "%", "share of the window between the NVTX step ranges (outside every iteration range)", _PW),
    fact("between_steps_ms_per_iter", "ms", "median time from the end of one step range to the start of the next", _PW),
    fact("between_steps_gpu_idle_pct", "%", "GPU idle time between the step ranges, as a share of the window", _PW),
    fact("loader_workers_gain_pct", "%", "gain of making the batch between the steps in 8 DataLoader workers: the step then takes the longest of the GPU's work and the training thread's time: the step range's own time (slowed by half the share of the step moved beside it), the CUDA calls between the steps that stay (allocator, sync, copy calls) and an eighth of the rest", _PW),
    fact("h2d_copies_per_iter", "", "host-to-device copies in the window per step: a batch made on the host reaches the GPU by one or more every step; none means the host's work between the steps is not an input batch", _PW),
    fact("between_steps_cuda_ms_per_iter", "ms", "host time in CUDA calls between the step ranges that no DataLoader worker takes over (allocator calls, syncs, host-device copies), per step", _PW),
    fact("input_prefetch_gain_pct", "%", "gain of copying the input batches (host-to-device copy calls that take a quarter or more of the time between the step ranges) from pinned memory one step ahead on a side stream: the GPU's step loses their copy time, the training thread their calls and the batch hand-over", _PW),
    fact("pause_count", "", "pauses in the window: a gap between steps, or the excess of a slow step, of 5 ms or more and 3x the typical step", _PW),
    fact("pause_every_iters", "", "median number of iterations from one pause to the next", _PW),
    fact("pause_median_ms", "ms", "median length of a pause", _PW),
    fact("pause_share_pct", "%", "share of the window in pauses", _PW),
    fact("pause_between_steps_share_pct", "%", "share of the pauses' time that lies between the step ranges (rather than inside slow steps)", _PW),
    fact("pause_d2h_mb", "MB", "device-to-host megabytes launched in each pause (mean)", _PW),
    fact("pause_write_ms", "ms", "file-write time (write, pwrite64, fsync, ...; OS runtime trace, any thread) in each pause (mean)", ("osrt_trace",)),
    fact("pause_host_ms", "ms", "the host's part of each pause (mean): its file writes (OS runtime trace), or the pause less its copies' GPU time when that is more", _PW),
    fact("checkpoint_async_gain_pct", "%", "gain of saving asynchronously: each pause shrinks to its device-to-host bytes at 25 GB/s (pinned, side stream) plus the host part (serialising, writing) that outlasts the steps until the next pause", _PW),
    fact("pause_api_calls", "", "CUDA API calls (any thread) started in each pause (mean): none means the host was busy in its own code", _PW),
    fact("pause_osrt_ms", "ms", "OS runtime call time (the thread that makes the CUDA calls; memory mapping such as mmap, munmap, brk, madvise left out) in each pause (mean): file I/O, waits, sleeps", ("osrt_trace",)),
    fact("pause_gpu_busy_pct", "%", "GPU busy time in the pauses, as a share of their time", _PW),
    fact("host_pause_gain_pct", "%", "gain of removing the pauses: their excess over the typical gap between steps (a pause between the steps) or the typical step (a slow step), as a share of the window", _PW),
    fact("step_d2h_mb_per_iter", "MB", "device-to-host megabytes copied inside each step (median over the steps; copies of 1 MB or more, in 80 % of the steps or more)", _PW),
    fact("step_d2h_copies_per_iter", "", "device-to-host copies of 1 MB or more per step", _PW),
    fact("step_d2h_pageable_share_pct", "%", "share of those copies that go to pageable host memory", _PW),
    fact("step_d2h_copy_share_of_exposed_pct", "%", "share of that exposed time in which the copies themselves ran (the rest: staging and host work waiting for them)", _PW),
    fact("cat_copy_iters_pct", "%", "share of the steps that launch concatenation kernels (CatArrayBatchedCopy, cat_...)", _PW),
    fact("cat_copy_ms_per_iter", "ms", "GPU time of the concatenation kernels per step (median)", _PW),
    fact("cat_copy_trend", "", "rank correlation of the concatenation kernels' time per step with the step's number (1: it grows every step, as a cache grown by torch.cat does; a short window of a long decode grows little but steadily)", _PW),
    fact("cat_copy_growth_pct", "%", "growth of the concatenation kernels' time per step from the first quarter of the steps to the last (medians): a tensor grown by torch.cat copies more every step", _PW),
    fact("launch_interval_us", "us", "median time from one kernel-launch call to the next inside a step (the host's pace where nothing else runs between launches)", _PW),
    fact("kv_static_gain_pct", "%", "gain of a preallocated cache written in place: the step becomes the longer of the GPU's work less the concatenation kernels and the step's launches at the median launch-to-launch pace (the long host stretches that each new shape costs go)", _PW),
    fact("step_d2h_exposed_pct", "%", "time those copies cost the GPU, as a share of the window: from its last work before each copy (or the copy call, when later) to the next operation after it (the copy, a pageable copy's staging, the host work that waited for it)", _PW),
]

PHASES = ("data", "forward", "backward", "optimizer", "comm", "log", "eval", "checkpoint")
# a fused optimizer (one multi-tensor kernel per group) moves the same bytes in one pass, not one kernel
# per parameter per operation: its time is this share of the unfused kernels' GPU time (AdamW reads
# p, g, m, v and writes p, m, v once; foreach=False passes over them in ~5 kernels of 2-3 tensors each)
FUSED_TIME_FACTOR = 0.35
FUSED_OPT = r"(?i)multi_tensor_apply|fused_adam|fusedadam|_fused_|adam_kernel|FusedOptimizer|fused_sgd"
# kernels that zero or fill a floating-point tensor, as a gradient is (PyTorch's fill_ / zero_: FillFunctor;
# a foreach zero_'s kernels); an integer fill is a buffer's (Triton's autotuner clears the L2 with an int
# buffer's zero_ before each timed launch: a run of a hundred in a recompiling program that has no gradient);
# memsets are not counted, nor do they break a run
ZERO_FILL_KERNEL = r"(?i)FillFunctor|fill_kernel|ZeroFunctor|zero_kernel"
INT_FILL_KERNEL = r"(?i)FillFunctor<\s*(int|long|bool|unsigned|signed|char|short|u?int\d+_t|c10::complex)"
PAUSE_MIN_MS = 5.0
PAUSE_OVER_MEDIAN = 3.0
MIN_PAUSES = 2
WRITE_CALLS = ("write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2", "fwrite", "fsync", "fdatasync", "msync")
D2H_MIN_BYTES = 1_000_000
PINNED_GBPS = 25.0   # a conservative pinned device-to-host bandwidth (PCIe 4/5: 25-55 GB/s measured)


def compute(ctx: Context) -> None:
    win = ctx.win
    it = win.iterations
    gpu = ctx.prof.tables.get("gpu_trace")
    if it is None or not win.source.startswith("nvtx:") or gpu is None or "launch_s" not in gpu.columns:
        return
    steps = it.slice(win.skipped).filter((pl.col("host_s") >= win.start_ns) & (pl.col("host_s") < win.end_ns)) \
        .sort("host_s")
    if steps.height < 2 or not win.length_ns:
        return
    ops = in_window(gpu, win)   # a slice of the trace; copied only where some operation has no launch time
    if ops["launch_s"].null_count():
        ops = ops.filter(pl.col("launch_s").is_not_null())
    src = ctx.prof.source_name("gpu_trace") or ""
    d2h = ops.filter((pl.col("kind") == "memcpy") & (pl.col("copy_kind") == "DtoH"))   # once: a million rows
    # the phases of two whole steps are known (a torch.profiler cycle of three with its cut-off last step
    # left out, issue 56, item 3: the optimizer phase of kineto_optimizer's #7 and #8 went unmeasured and the
    # fused-optimizer advice with it); what repeats across the steps (pauses, the time between them, copies
    # in every step, growth) needs three
    rows = _phases(ctx, steps, ops, src)
    if steps.height >= 3:
        rows += _pauses(ctx, steps, d2h, src)
        _between_work(ctx, steps, ops, src)
        _step_d2h(ctx, steps, ops, d2h, src)
        _cat_growth(ctx, steps, ops, src)
        _zero_fills(ctx, steps, ops, src)
    if rows:
        ctx.fs.tables["phase_work"] = rows


def _launched_in(ops: pl.DataFrame, cover: pl.DataFrame) -> pl.DataFrame:
    return ops.filter(intervals.containing(ops["launch_s"], cover))


def _phases(ctx: Context, steps: pl.DataFrame, ops: pl.DataFrame, src: str) -> list[dict]:
    """Per phase nested in the steps: wall time, kernels, GPU busy, device-to-host bytes per iteration."""
    fs, win = ctx.fs, ctx.win
    nv = ctx.prof.tables.get("nvtx_trace")
    if nv is None or not {"name", "start_ns", "end_ns"} <= set(nv.columns):
        return []
    table = merged_table(ctx.phases)
    step_cover = intervals.merge(steps.select(pl.col("host_s").alias("s"), pl.col("host_e").alias("e")))
    r = nv.filter(pl.col("end_ns").is_not_null() & (pl.col("start_ns") >= win.start_ns) & (pl.col("start_ns") < win.end_ns))
    # operator ranges (autograd-NVTX: "aten::embedding_backward, op_id = 3146") are not phases
    names = [n for n in r["name"].drop_nulls().unique().to_list() if not re.search(OPERATOR_NAME, str(n))]
    phase_of = {}
    for n, p in zip(names, classify_all(names, table)):
        if p and p["phase"] in PHASES:
            phase_of[n] = p["phase"]
    n_it, wlen = steps.height, win.length_ns
    out = []
    if "optimizer" not in phase_of.values():
        for f in ("optimizer_phase_share_pct", "optimizer_phase_kernels_per_iter", "optimizer_phase_gpu_busy_pct",
                  "optimizer_phase_fused_kernel_share_pct", "optimizer_fused_gain_pct"):
            fs.absent[f] = Note("absent.no_optimizer_range")
    for phase in PHASES:
        sel = r.filter(pl.col("name").is_in([n for n, p in phase_of.items() if p == phase]))
        sel = sel.filter(intervals.containing(sel["start_ns"], step_cover))
        if sel.height < n_it // 2:
            continue
        cover = intervals.merge(sel.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")))
        wall = intervals.total(cover)
        mine = _launched_in(ops, cover)
        k = mine.filter(pl.col("kind") == "kernel")
        busy = float(k["dur_ns"].sum()) if k.height else 0.0
        d2h = mine.filter((pl.col("kind") == "memcpy") & (pl.col("copy_kind") == "DtoH"))
        row = {"phase": phase, "names": ", ".join(sorted(str(n) for n, p in phase_of.items() if p == phase))[:120],
               "ms_per_iter": wall / n_it / 1e6, "share_pct": pct(wall, wlen), "kernels_per_iter": k.height / n_it,
               "gpu_busy_pct": min(100.0, pct(busy, wall) or 0.0), "d2h_mb_per_iter": float(d2h["bytes"].fill_null(0).sum()) / 1e6 / n_it}
        row["gpu_idle_ms_per_iter"] = max(0.0, wall - _busy_in(fs, cover)) / n_it / 1e6
        out.append(row)
        if phase == "optimizer":
            _optimizer(fs, row, k, busy, wall, n_it, steps, src)
    _idle_top(fs, out, n_it, src)
    return out


def _busy_in(fs, cover: pl.DataFrame) -> float:
    """GPU busy time (the first device's union) inside the merged intervals ``cover``."""
    busy = fs.work.busy
    if cover.height == 0 or not isinstance(busy, dict) or not busy:
        return 0.0
    dev = busy[sorted(busy)[0]]
    if dev.height == 0:
        return 0.0
    # the busy union lies in the window: the busy time covering each (merged, disjoint) interval, by binary
    # searches over the union made ready once (busy.py), not an intersection of a million busy intervals
    ready = fs.work.busy_cover if len(busy) == 1 else None
    return float(intervals.coverage(cover.select("s", "e"), dev, ready).sum())


def _idle_top(fs, rows: list[dict], n_it: int, src: str) -> None:
    """The phase that holds most of the GPU's idle time: where a class finding's time lies."""
    idle_all = (fs.run.get("gpu_idle_pct") or 0.0) / 100.0 * fs.window.length_ns / n_it / 1e6 if fs.window else 0.0
    if not rows or idle_all <= 0:
        return
    top = max(rows, key=lambda r: r["gpu_idle_ms_per_iter"])
    if top["gpu_idle_ms_per_iter"] <= 0:
        return
    fs.put("idle_top_phase", top["phase"], src)
    fs.put("idle_top_phase_names", top["names"], src)
    fs.put("idle_top_phase_share_pct", min(100.0, 100.0 * top["gpu_idle_ms_per_iter"] / idle_all), src)


def _optimizer(fs, row: dict, k: pl.DataFrame, busy: float, wall: float, n_it: int, steps: pl.DataFrame, src: str) -> None:
    fs.put("optimizer_phase_share_pct", row["share_pct"], src)
    fs.put("optimizer_phase_ms_per_iter", row["ms_per_iter"], src)
    fs.put("optimizer_phase_kernels_per_iter", row["kernels_per_iter"], src)
    fs.put("optimizer_phase_gpu_busy_pct", row["gpu_busy_pct"], src)
    fs.put("optimizer_phase_names", row["names"], src)
    if k.height:
        fs.put("optimizer_phase_kernel_median_us", float(k["dur_ns"].median()) / 1e3, src)
        fused = float(k.filter(pl.col("name").cast(pl.String).str.contains(FUSED_OPT))["dur_ns"].sum())
        fs.put("optimizer_phase_fused_kernel_share_pct", pct(fused, busy) if busy else 0.0, src)
    iter_ns = float((steps["host_e"] - steps["host_s"]).sum() + _between_ns(steps)) / n_it
    after = FUSED_TIME_FACTOR * busy / n_it
    fs.put("optimizer_fused_gain_pct", max(0.0, pct(wall / n_it - after, iter_ns) or 0.0), src)


def _zero_fills(ctx: Context, steps: pl.DataFrame, ops: pl.DataFrame, src: str) -> None:
    """The gradients zeroed one tensor at a time: per step, the longest run of floating-point fill / zero
    kernels launched back to back (no other kernel launched between them), its length and the
    host time from its first launch to its last; the median over the steps. zero_grad(set_to_none=False)
    fills every parameter's gradient (a run as long as the parameter tensors); a model's own zeros
    (torch.zeros, a buffer's fill_) come one or a few at a time between its other kernels."""
    fs = ctx.fs
    kernel = pl.col("kind") == "kernel"
    o = ops.select(pl.col("launch_s").filter(kernel), pl.col("name").filter(kernel))   # two columns copied
    if o.height == 0:
        return
    n = pl.col("name").cast(pl.String)
    fills = o.select(pl.col("name").unique()).filter(
        (n.str.contains(ZERO_FILL_KERNEL) & ~n.str.contains(INT_FILL_KERNEL)).fill_null(False))
    if fills.height:
        # each launch flagged by its name's value (``is_in`` over the codes), not a join of every launch
        if not o["launch_s"].is_sorted():
            o = o.sort("launch_s")
        o = o.with_columns(
            fill=pl.col("name").is_in(fills["name"].cast(pl.String).to_list()).fill_null(False))
        o = o.with_columns(run=(pl.col("fill") != pl.col("fill").shift(1)).fill_null(True).cum_sum())
        runs = (o.filter("fill").group_by("run")
                  .agg(pl.len().alias("n"), pl.col("launch_s").min().alias("t0"), pl.col("launch_s").max().alias("t1")))
    else:               # no fill kernel: no run (the million launches neither sorted nor grouped)
        runs = pl.DataFrame()
    per_step = []
    if runs.height:
        bounds = list(steps.select("host_s", "host_e").iter_rows())
        runs = runs.sort("t0")
        starts, counts = runs["t0"].to_list(), runs["n"].to_list()
        spans = (runs["t1"] - runs["t0"]).to_list()
        for hs, he in bounds:
            lo, hi = bisect.bisect_left(starts, hs), bisect.bisect_right(starts, he)
            best = max(((counts[i], spans[i]) for i in range(lo, hi)), default=(0, 0))
            per_step.append(best)
    else:
        per_step = [(0, 0)] * steps.height
    ns = pl.DataFrame({"n": [p[0] for p in per_step], "ns": [p[1] for p in per_step]},
                      schema={"n": pl.Int64, "ns": pl.Int64})
    fs.put("zero_fill_run_per_iter", float(ns["n"].median() or 0.0), src)
    fs.put("zero_fill_run_ms_per_iter", float(ns["ns"].median() or 0.0) / 1e6, src)


def _between_ns(steps: pl.DataFrame) -> int:
    s, e = steps["host_s"], steps["host_e"]
    return int((s.slice(1) - e.slice(0, s.len() - 1)).clip(lower_bound=0).sum())


def _pauses(ctx: Context, steps: pl.DataFrame, d2h_all: pl.DataFrame, src: str) -> list[dict]:
    """Long pauses between the steps (or inside slow steps) and what filled them (``d2h_all``: the
    window's device-to-host copies)."""
    fs, win = ctx.fs, ctx.win
    s, e = steps["host_s"].to_list(), steps["host_e"].to_list()
    gaps = [max(0, s[i + 1] - e[i]) for i in range(len(s) - 1)]
    durs = [e[i] - s[i] for i in range(len(s))]
    fs.put("between_steps_share_pct", pct(sum(gaps), win.length_ns), src)
    med_gap, med_dur = sorted(gaps)[len(gaps) // 2], sorted(durs)[len(durs) // 2]
    typical = med_gap + med_dur
    pauses = []   # (iteration index, start, end, length)
    for i, g in enumerate(gaps):
        if g >= PAUSE_MIN_MS * 1e6 and g >= PAUSE_OVER_MEDIAN * typical:
            pauses.append((i, e[i], s[i + 1], g))
    for i, d in enumerate(durs):   # a slow step is a pause only where it copies to the host (a step range
        # times the host, which runs ahead of the GPU until the launch queue fills: slow host steps alone
        # are the queue, not a pause)
        if d - med_dur >= PAUSE_MIN_MS * 1e6 and d >= PAUSE_OVER_MEDIAN * typical:
            b = d2h_all.filter(pl.col("launch_s").is_between(s[i], e[i]))["bytes"].fill_null(0).sum()
            if b and b >= D2H_MIN_BYTES:
                pauses.append((i, s[i], e[i], d - med_dur))
    if len(pauses) < MIN_PAUSES:   # no periodic pause: the checkpoint rule is evaluated, and quiet
        fs.put("pause_count", len(pauses), src)
        fs.put("pause_share_pct", pct(sum(p[3] for p in pauses), win.length_ns) or 0.0, src)
        fs.put("pause_d2h_mb", 0.0, src)
        fs.put("host_pause_gain_pct", pct(sum(max(0.0, p[3] - (med_gap if p[2] in s else 0)) for p in pauses), win.length_ns) or 0.0, src)
        if pauses:
            _pause_contents(ctx, pl.DataFrame({"s": [p[1] for p in pauses], "e": [p[2] for p in pauses]},
                                              schema={"s": pl.Int64, "e": pl.Int64}), len(pauses), s, src)
        else:   # no pause: the pause rules are evaluated, and quiet
            fs.put("pause_api_calls", 0.0, src)
            fs.put("pause_gpu_busy_pct", 0.0, src)
        return []
    pauses.sort()
    idx = [p[0] for p in pauses]
    every = sorted(b - a for a, b in zip(idx, idx[1:]))
    cover = intervals.merge(pl.DataFrame({"s": [p[1] for p in pauses], "e": [p[2] for p in pauses]},
                                         schema={"s": pl.Int64, "e": pl.Int64}))
    d2h = _launched_in(d2h_all, cover)
    d2h_bytes = float(d2h["bytes"].fill_null(0).sum())
    total = sum(p[3] for p in pauses)
    n = len(pauses)
    fs.put("pause_count", n, src)
    fs.put("pause_every_iters", every[len(every) // 2] if every else None, src)
    fs.put("pause_median_ms", sorted(p[3] for p in pauses)[n // 2] / 1e6, src)
    fs.put("pause_share_pct", pct(total, win.length_ns), src)
    fs.put("pause_d2h_mb", d2h_bytes / 1e6 / n, src)
    fs.put("pause_between_steps_share_pct", pct(sum(p[3] for p in pauses if p[2] in s), total), src)
    write_ms = _writes_in(ctx, cover)
    if write_ms is not None:
        fs.put("pause_write_ms", write_ms / n, ctx.prof.source_name("osrt_trace") or src)
    # saved asynchronously: a pinned copy on a side stream (exposed at most at the pinned bandwidth) and
    # the serialising and writing done by a thread while the next steps run (exposed only where it outlasts
    # them). The host's part of a pause is the pause less its copies' GPU time: the file writes the OS
    # runtime trace shows, or (torch.save writes through buffered C++ streams the trace may not see) the rest
    copy_ns = float((d2h["end_ns"] - d2h["start_ns"]).sum()) if d2h.height else 0.0
    host_ns = max((write_ms or 0.0), max(0.0, total - copy_ns)) / n
    fs.put("pause_host_ms", host_ns / 1e6, src)
    step_ns = (fs.run.get("iter_median_ms") or typical / 1e6) * 1e6
    steps_between = (every[len(every) // 2] if every else 1) * step_ns
    residual = d2h_bytes / n / PINNED_GBPS + max(0.0, host_ns - steps_between)
    fs.put("checkpoint_async_gain_pct", pct(sum(max(0.0, p[3] - residual) for p in pauses), win.length_ns), src)
    _pause_contents(ctx, cover, n, s, src)
    # a pause between the steps stands for its excess over the typical gap (the work every gap holds stays);
    # a slow step's pause is its excess over the typical step already
    excess = sum(max(0.0, p[3] - (med_gap if p[2] in s else 0)) for p in pauses)
    fs.put("host_pause_gain_pct", pct(excess, win.length_ns), src)
    return [{"phase": "pauses", "names": f"{n} × {sorted(p[3] for p in pauses)[n // 2] / 1e6:.0f} ms, every {every[len(every) // 2] if every else '?'} steps",
             "ms_per_iter": total / steps.height / 1e6, "share_pct": pct(total, win.length_ns), "kernels_per_iter": None,
             "gpu_busy_pct": None, "d2h_mb_per_iter": d2h_bytes / 1e6 / steps.height}]


MEM_CALLS = ("mmap", "mmap64", "munmap", "mremap", "brk", "sbrk", "madvise", "mprotect")


def _pause_contents(ctx: Context, cover: pl.DataFrame, n: int, step_starts: list, src: str) -> None:
    """What the host did in the pauses: CUDA API calls, OS runtime calls (memory mapping left out: an
    allocator growing its heap), GPU busy. None of them: the host ran its own code (a garbage collection)."""
    fs = ctx.fs
    total = intervals.total(cover)
    fs.put("pause_gpu_busy_pct", min(100.0, pct(_busy_in(fs, cover), total) or 0.0), src)
    api = ctx.prof.tables.get("api_trace")
    lo, hi = int(cover["s"].min()), int(cover["e"].max())
    if api is not None and "start_ns" in api.columns:
        a = api.filter(pl.col("start_ns").is_between(lo, hi))
        calls = int(intervals.containing(a["start_ns"], cover).sum()) if a.height else 0
        fs.put("pause_api_calls", calls / n, ctx.prof.source_name("api_trace") or src)
    tid = None   # the training thread: the one that opens the step ranges (autograd's and the loader's threads wait)
    nv = ctx.prof.tables.get("nvtx_trace")
    if nv is not None and {"tid", "start_ns"} <= set(nv.columns):
        t = nv.filter(pl.col("start_ns").is_in(step_starts))["tid"].drop_nulls()
        tid = t.mode().sort()[0] if t.len() else None
    o = ctx.prof.tables.get("osrt_trace")
    if o is None or not {"name", "start_ns", "end_ns"} <= set(o.columns):
        return
    w = o.filter(~pl.col("name").cast(pl.String).is_in(list(MEM_CALLS)) & (pl.col("end_ns") > lo) & (pl.col("start_ns") < hi))
    if tid is not None and "tid" in o.columns:   # the training thread's calls: other threads wait all the time
        w = w.filter(pl.col("tid") == tid)
    calls = intervals.merge(w.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))) if w.height else None
    ns = 0
    for ps, pe in cover.select("s", "e").iter_rows():   # a few pauses
        if calls is not None:
            c = calls.filter((pl.col("e") > ps) & (pl.col("s") < pe))
            ns += int((c["e"].clip(upper_bound=pe) - c["s"].clip(lower_bound=ps)).sum()) if c.height else 0
    ms = ns / 1e6
    fs.put("pause_osrt_ms", ms / n, ctx.prof.source_name("osrt_trace") or src)


CAT_KERNELS = r"CatArrayBatchedCopy|CatArray|\bcat_|_cat_kernel"
CAT_MIN_ITERS = 8


def _cat_growth(ctx: Context, steps: pl.DataFrame, ops: pl.DataFrame, src: str) -> None:
    """Concatenation kernels in every step whose time grows step after step (a key / value cache grown with
    torch.cat in decoding), and the gain of a preallocated cache written in place."""
    fs, win = ctx.fs, ctx.win
    n = steps.height
    if n < CAT_MIN_ITERS or "name" not in ops.columns:
        return
    # each distinct name tested once (a regex over a million kernel names cast to text: ~0.1 s)
    k = matching(ops, CAT_KERNELS).filter(pl.col("kind") == "kernel")
    cover = intervals.merge(steps.select(pl.col("host_s").alias("s"), pl.col("host_e").alias("e")))
    k = _launched_in(k, cover)
    if k.height == 0:   # no concatenation in the steps: the rule is evaluated, and quiet
        fs.put("cat_copy_iters_pct", 0.0, src)
        fs.put("cat_copy_growth_pct", 0.0, src)
        fs.put("kv_static_gain_pct", 0.0, src)
        return
    it_of = steps["host_s"].search_sorted(k["launch_s"], side="right").cast(pl.Int64) - 1
    per = k.with_columns(it_of.alias("it")).group_by("it").agg(pl.col("dur_ns").sum()).sort("it")
    fs.put("cat_copy_iters_pct", pct(per.height, n), src)
    if per.height < 0.8 * n:   # not every step: no growing cache
        fs.put("cat_copy_growth_pct", 0.0, src)
        fs.put("kv_static_gain_pct", 0.0, src)
        return
    ms = (per["dur_ns"] / 1e6).to_list()
    q = max(1, len(ms) // 4)
    first, last = sorted(ms[:q])[q // 2], sorted(ms[-q:])[q // 2]
    med = sorted(ms)[len(ms) // 2]
    fs.put("cat_copy_ms_per_iter", med, src)
    fs.put("cat_copy_growth_pct", 100.0 * (last / first - 1.0) if first > 0 else None, src)
    trend = per.select(pl.corr("it", "dur_ns", method="spearman")).item()
    fs.put("cat_copy_trend", float(trend) if trend is not None and trend == trend else 0.0, src)
    api = ctx.prof.tables.get("api_trace")
    if api is None or "base_name" not in api.columns:
        return
    lo, hi = int(steps["host_s"].min()), int(steps["host_e"].max())
    la = api.filter(pl.col("start_ns").is_between(lo, hi) & pl.col("base_name").cast(pl.String).str.contains("(?i)launch"))
    la = la.filter(intervals.containing(la["start_ns"], cover)).sort("start_ns")
    if la.height < 2 * n:
        return
    st = la["start_ns"]
    it = steps["host_s"].search_sorted(st, side="right").cast(pl.Int64)
    d = pl.DataFrame({"it": it, "gap": st.diff()}).filter(pl.col("it") == pl.col("it").shift(1))["gap"]
    interval = float(d.median())
    fs.put("launch_interval_us", interval / 1e3, src)
    iter_now = (fs.run.get("iter_median_ms") or 0.0) * 1e6 or win.length_ns / n
    gpu = (fs.run.get("gpu_active_pct") or 0.0) / 100.0 * win.length_ns / n
    after = max(gpu - med * 1e6, la.height / n * interval)
    fs.put("kv_static_gain_pct", max(0.0, 100.0 * (1.0 - after / iter_now)), src)


LOADER_WORKERS = 8
# the training thread shares its process and memory bus with the work moved beside it (the pin-memory
# thread, which holds the GIL while it takes each batch from the workers' queue, and the workers'
# copies): measured on the trainapp pairs, its step range's host time grows by about half the share of
# the step that the moved work took (host_after_sync: 5.4 -> 7.2 ms with 66 % of the step moved;
# pageable_input: 9.9 -> 13.1 ms with 67 %), and the fixed runs show the waits (gpu_idle_wait_pct, gil)
CONTENTION = 0.5
# copies between the steps are the input batches' when their calls, and their host-to-device GPU time, take
# this share of the time there
INPUT_COPY_SHARE = 0.25


def _between_work(ctx: Context, steps: pl.DataFrame, ops: pl.DataFrame, src: str) -> None:
    """Host time between the step ranges in every step (a batch made in the training loop, outside the
    annotated step) and the gain of making it in ``LOADER_WORKERS`` DataLoader workers: the step then
    takes the longest of the GPU's work and the training thread's own time: the step range's host time
    (slowed by the work moved beside it, ``CONTENTION``), the CUDA calls between the steps that no worker
    takes (allocator calls, syncs, the copies of the batch to the device) and a worker's share of the rest
    (the loader's rate). Where the input copies fill the time between the steps, also the gain of copying
    them from pinned memory one step ahead on a side stream (``input_prefetch_gain_pct``)."""
    fs, win = ctx.fs, ctx.win
    s, e = steps["host_s"], steps["host_e"]
    n = steps.height
    gaps = (s.slice(1) - e.slice(0, n - 1)).clip(lower_bound=0)
    if gaps.len() < 2:
        return
    gap_med = float(gaps.median())
    cover = intervals.merge(pl.DataFrame({"s": e.slice(0, n - 1), "e": s.slice(1)}).filter(pl.col("e") > pl.col("s")))
    busy_in_gaps = _busy_in(fs, cover)
    idle_in_gaps = max(0.0, float(gaps.sum()) - busy_in_gaps)
    fs.put("between_steps_ms_per_iter", gap_med / 1e6, src)
    fs.put("between_steps_gpu_idle_pct", pct(idle_in_gaps, win.length_ns) or 0.0, src)
    if gap_med <= 0:
        return
    host = fs.work.host if isinstance(getattr(fs.work, "host", None), dict) else {}

    def calls_in_gaps(kind: str) -> float:   # host time in these CUDA calls between the steps, per gap
        iv = host.get(kind)
        if iv is None or iv.height == 0 or cover.height == 0:
            return 0.0
        return float(intervals.coverage(cover.select("s", "e"), iv).sum()) / gaps.len()

    copy_ns = calls_in_gaps("memcpy")
    waits_ns = calls_in_gaps("alloc") + calls_in_gaps("sync")
    kept = min(gap_med, copy_ns + waits_ns)
    fs.put("between_steps_cuda_ms_per_iter", kept / 1e6, src)
    h2d_all = ops.filter((pl.col("kind") == "memcpy") & (pl.col("copy_kind") == "HtoD")).height
    fs.put("h2d_copies_per_iter", h2d_all / n, src)
    iter_now = (fs.run.get("iter_median_ms") or 0.0) * 1e6 or win.length_ns / n   # a typical step, start to start
    gpu_busy = (fs.run.get("gpu_active_pct") or 0.0) / 100.0 * win.length_ns / n
    in_step = float((e - s).median())

    def host_after(moved: float, stays: float) -> float:
        return in_step * (1.0 + CONTENTION * min(1.0, moved / iter_now)) + stays + moved / LOADER_WORKERS

    movable = max(0.0, gap_med - kept)
    after = max(gpu_busy, host_after(movable, kept))
    fs.put("loader_workers_gain_pct", max(0.0, 100.0 * (1.0 - after / iter_now)), src)
    between_ops.put(fs, ops, cover, steps, gaps.len(), iter_now, gpu_busy, in_step + kept, src)
    # the batches' host-to-device copies launched between the steps: pinned (the DataLoader's pin-memory
    # thread takes each batch off the training thread) and copied one step ahead on a side stream, they
    # leave both the thread and the compute stream: the GPU's step loses their time
    h2d = _launched_in(ops.filter((pl.col("kind") == "memcpy") & (pl.col("copy_kind") == "HtoD")), cover)
    h2d_ns = float((h2d["end_ns"] - h2d["start_ns"]).sum()) / gaps.len() if h2d.height else 0.0
    if min(copy_ns, h2d_ns) < INPUT_COPY_SHARE * gap_med:   # no input batch copied there (a checkpoint's
        return                                                # device-to-host copies are not one)
    moved = max(0.0, gap_med - waits_ns)
    after = max(gpu_busy - h2d_ns, host_after(moved, min(gap_med, waits_ns)))
    fs.put("input_prefetch_gain_pct", max(0.0, 100.0 * (1.0 - after / iter_now)), src)


def _writes_in(ctx: Context, cover: pl.DataFrame) -> float | None:
    """File-write time (OS runtime trace, any thread, clipped to the pauses) in ns; None without the trace."""
    o = ctx.prof.tables.get("osrt_trace")
    if o is None or not {"name", "start_ns", "end_ns"} <= set(o.columns):
        return None
    w = o.filter(pl.col("name").cast(pl.String).is_in(list(WRITE_CALLS)))
    if w.height == 0:
        return 0.0
    writes = intervals.merge(w.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")))
    lo, hi = int(cover["s"].min()), int(cover["e"].max())
    return float(intervals.total(intervals.common([writes, cover.select("s", "e")], lo, hi)))


def _step_d2h(ctx: Context, steps: pl.DataFrame, ops: pl.DataFrame, d2h_all: pl.DataFrame, src: str) -> None:
    """Device-to-host copies inside the steps, in most steps: size and exposed time."""
    fs, win = ctx.fs, ctx.win
    cover = steps.select(pl.col("host_s").alias("s"), pl.col("host_e").alias("e"))
    # the copies first, then which of them were launched in the steps (a million kernels tested: 0.04 s)
    d2h = _launched_in(d2h_all.filter(pl.col("bytes").fill_null(0) >= D2H_MIN_BYTES), intervals.merge(cover))
    if d2h.height == 0:   # no read-back of 1 MB or more in the steps: the rule is evaluated, and quiet
        fs.put("step_d2h_mb_per_iter", 0.0, src)
        fs.put("step_d2h_exposed_pct", 0.0, src)
        fs.put("step_d2h_copy_share_of_exposed_pct", 0.0, src)
        return
    it_of = steps["host_s"].search_sorted(d2h["launch_s"], side="right").cast(pl.Int64) - 1
    per = d2h.with_columns(it_of.alias("it")).group_by("it").agg(pl.col("bytes").sum())
    if per.height < 0.8 * steps.height:   # not every step: a periodic copy (the pauses' facts say what)
        fs.put("step_d2h_mb_per_iter", 0.0, src)
        fs.put("step_d2h_exposed_pct", 0.0, src)
        fs.put("step_d2h_copy_share_of_exposed_pct", 0.0, src)
        return
    fs.put("step_d2h_mb_per_iter", float(per["bytes"].median()) / 1e6, src)
    fs.put("step_d2h_copies_per_iter", d2h.height / steps.height, src)
    pageable = d2h.filter(pl.col("dst_kind").cast(pl.String).str.to_lowercase().str.contains("pageable").fill_null(False))
    fs.put("step_d2h_pageable_share_pct", pct(pageable.height, d2h.height), src)
    allops = ops.select("start_ns", "end_ns").sort("start_ns")
    starts = allops["start_ns"]
    prev_end = allops["end_ns"].cum_max()
    exposed, copying = 0, int((d2h["end_ns"] - d2h["start_ns"]).sum())
    for cs, ce, ls in d2h.select("start_ns", "end_ns", "launch_s").iter_rows():   # a few per step
        i = int(starts.search_sorted(cs, side="left")) - 1
        before = int(prev_end[i]) if i >= 0 else cs
        t0 = max(min(before, cs), int(ls))
        j = int(starts.search_sorted(ce, side="left"))
        nxt = int(starts[j]) if j < starts.len() else min(ce, win.end_ns)
        exposed += max(0, nxt - t0)
    fs.put("step_d2h_exposed_pct", min(100.0, pct(exposed, win.length_ns) or 0.0), src)
    fs.put("step_d2h_copy_share_of_exposed_pct", min(100.0, pct(copying, exposed) or 0.0), src)

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("phase_work", compute, on_timeline,
          reads=("fact:gpu_active_pct", "fact:gpu_idle_pct", "fact:iter_median_ms", "input:api_trace", "input:gpu_trace", "input:nvtx_trace",
                 "input:osrt_trace", "work:busy", "work:busy_cover", "work:host"),
          puts=(FACTS + between_ops.FACTS, "table:phase_work")),
]
