"""CUDA graphs: launches whose kernels the GPU trace does not show (the GPU was not idle, it was unseen)."""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import timeline
from .base import Context
from .names import GRAPH_LAUNCH_APIS, api_base, base_expr
from .declare import fact


def check(ctx: Context) -> bool:
    """CUDA graph launches whose kernels the trace does not show: the GPU was not idle, it was unseen."""
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    api = prof.tables.get("api_trace")
    gpu = prof.tables.get("gpu_trace")
    if api is not None and api.height:
        in_win = api
        if win.start_ns is not None and win.source != "whole":
            in_win = api.filter((pl.col("start_ns") >= win.start_ns) & (pl.col("start_ns") < win.end_ns))
        gl = in_win.filter(api_base(api).is_in(sorted(GRAPH_LAUNCH_APIS)))
        fs.put("graph_launch_count", gl.height, prof.source_name("api_trace"))
        if gl.height == 0:
            return False
        seen = 0
        if gpu is not None and gpu.height:
            seen = gpu.join(gl.select("corr_id"), on="corr_id", how="semi").height
        if seen:
            return False
        fs.warnings.append(Note("facts.graph_not_traced", {
            "n": gl.height, "file": prof.source_name("gpu_trace") or Note("phrase.the_gpu_trace")}))
        fs.absent.update({k: Note("absent.graph_hidden") for k in TIMELINE_FACTS})
        return True
    s = prof.tables.get("api_sum")
    if s is not None and s.height:
        n = int(s.filter(base_expr("name").is_in(sorted(GRAPH_LAUNCH_APIS)))["count"].sum())
        if n:
            fs.put("graph_launch_count_span", n, prof.source_name("api_sum"))
            if gpu is not None and gpu.height:
                fs.warnings.append(Note("facts.graph_unknown", {"n": n, "file": prof.source_name("api_sum")}))
                fs.absent.update({k: Note("absent.graph_maybe_hidden") for k in TIMELINE_FACTS})
                return True
    return False


TIMELINE_FACTS = ("gpu_active_pct", "gpu_idle_pct", "kernel_active_pct", "memcpy_active_pct", "gpu_idle_gap_count",
                   "gpu_longest_gap_ms", "gpu_idle_short_gaps_pct", "gpu_idle_long_gaps_pct", "kernel_count",
                   "kernel_median_us", "kernel_small_share_pct", "memcpy_share_of_busy_pct", "nccl_share_of_busy_pct",
                   "gpu_idle_host_elim_pct", *(f"gpu_idle_{c}_pct" for c in timeline.CAUSES))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("graph_launch_count", "", "CUDA graph launches in the window", ("api_trace", "api_sum")),
]
