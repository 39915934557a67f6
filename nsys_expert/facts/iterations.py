"""Iterations (NVTX step ranges): count, median time measured completion to completion, jitter, warm-up."""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import intervals, timeline
from ..load import Profile
from .base import Context, pct
from .declare import fact, group


def iteration_ends(prof: Profile, win) -> list[int]:
    """When each iteration was really done: the later of its host range end and the end of the GPU
    work it launched (matched by correlation id; without the API trace, by GPU start time)."""
    it = win.iterations
    starts = it["s"].to_list()
    host_end = it["e"].to_list()
    gpu = prof.tables.get("gpu_trace")
    gend = [None] * len(starts)
    if gpu is not None and gpu.height:
        marks = pl.Series("t", starts, dtype=pl.Int64)   # iteration starts, sorted
        # the iteration each operation was launched in: the last start at or before its launch time
        if "launch_iter" in gpu.columns:   # timeline.with_launch_times found it with the launch times
            ops = gpu.select("end_ns", pl.col("launch_iter").alias("i"))
        else:
            t = gpu["launch_s"] if "launch_s" in gpu.columns else gpu["start_ns"]
            ops = pl.DataFrame({"end_ns": gpu["end_ns"], "i": timeline.iteration_of(t, marks)})
        # (a step left out of the iterations after the launch look-up, a cut-off last ProfilerStep: no index)
        for i, e in ops.filter(pl.col("i").is_between(0, len(starts) - 1)).group_by("i").agg(
                pl.col("end_ns").max()).iter_rows():
            gend[int(i)] = int(e)
    ends, run = [], None
    for i in range(len(starts)):
        e = max(host_end[i], gend[i] or host_end[i])
        run = e if run is None else max(run, e)
        ends.append(run)
    return ends


def compute(ctx: Context) -> None:
    fs, prof, win, graph_hidden = ctx.fs, ctx.prof, ctx.win, ctx.graph_hidden
    it = win.iterations
    if it is None or it.height < 2:
        return
    if graph_hidden:  # the GPU work of each iteration is not in the trace: its time would be host-only
        fs.put("iter_count", win.steady_iters, prof.source_name("nvtx_trace"))
        for k in ("iter_median_ms", "iter_max_over_median", "first_iter_over_median"):
            fs.absent[k] = Note("absent.graph_iterations")
        return
    src = prof.source_name("nvtx_trace")
    starts = it["s"].to_list()
    ends = iteration_ends(prof, win)
    # iteration i lasts from the completion of i-1 (its own start for the first) to its completion
    dur = [ends[0] - starts[0]] + [ends[i] - ends[i - 1] for i in range(1, len(ends))]
    begin = [starts[0]] + ends[:-1]
    steady = dur[win.skipped:] if win.skipped < len(dur) else dur
    if not steady:
        return
    srt = sorted(steady)
    mid = len(srt) // 2
    med = srt[mid] if len(srt) % 2 else (srt[mid - 1] + srt[mid]) / 2
    fs.put("iter_count", len(steady), src)
    fs.put("iter_median_ms", med / 1e6, src)
    if med > 0:
        fs.put("iter_max_over_median", max(steady) / med, src)
        if win.skipped >= 1:
            fs.put("first_iter_over_median", dur[0] / med, src)
    busy = fs.work.busy
    b = busy[min(busy)] if busy and len(busy) == 1 else None
    iv = pl.DataFrame({"s": begin, "e": ends}, schema={"s": pl.Int64, "e": pl.Int64})
    cov = intervals.coverage(iv, b, fs.work.busy_cover).to_list() if b is not None else [None] * len(starts)
    fs.tables["iterations"] = [
        {"index": i + 1, "ms": dur[i] / 1e6, "gpu_busy_pct": pct(cov[i], dur[i]) if cov[i] is not None else None,
         "warmup": i < win.skipped} for i in range(len(starts))]


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("iter_count", "", "iterations in the window", ("nvtx_trace",)),
    fact("iter_median_ms", "ms", "median iteration time (start to next start)", ("nvtx_trace",)),
    fact("iter_max_over_median", "x", "slowest iteration in the window / median", ("nvtx_trace",)),
    fact("first_iter_over_median", "x", "first (warm-up) iteration / median iteration", ("nvtx_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("iterations", compute, reads=("input:gpu_trace", "work:busy", "work:busy_cover"), puts=(FACTS, "table:iterations")),
]
