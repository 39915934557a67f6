"""CUDA graphs: launches whose kernels the GPU trace does not show (the GPU was not idle, it was unseen)."""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import timeline
from .base import Context, of_kinds
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


def launch_ids(prof) -> pl.Series | None:
    """The correlation ids of the CUDA graph launch calls (None without the API trace): a graph's kernels
    carry its launch's id (torch.profiler's correlation; an nsys export traced by node)."""
    api = prof.tables.get("api_trace")
    if api is None or api.height == 0:
        return None
    return api.filter(api_base(api).is_in(sorted(GRAPH_LAUNCH_APIS)))["corr_id"].drop_nulls()


# whole graph executions holding this share of the kernel work or more: what the itemized kernels say about
# kernel classes is not the step's (the graphs' own kernels are not traced one by one)
WHOLE_GRAPHS_MAX_PCT = 50.0


def launch_units(w: pl.DataFrame, k: pl.DataFrame, ids: pl.Series | None) -> tuple[pl.DataFrame, dict]:
    """The window's launches as units the host paid for: a kernel launched on its own, a whole graph
    execution, and the kernels one graph launch replayed (one unit, from the first's start to the last's
    end). ``w``: the window's GPU operations; ``k``: its kernels. Also the graphs' share of the kernel work:
    ``graph_kernels`` (itemized kernels a graph launched), ``graph_ns`` (theirs and whole executions' time),
    ``whole_ns`` (whole executions'), ``work_ns`` (all kernel work)."""
    whole = of_kinds(w, ("graph",)) if w.height and (w["kind"] == "graph").any() else w.clear()
    if ids is not None and ids.len() and k.height and "corr_id" in k.columns:
        by_graph = pl.col("corr_id").is_in(ids.implode())
        graphed, single = k.filter(by_graph), k.filter(~by_graph | pl.col("corr_id").is_null())
    else:
        graphed, single = k.clear(), k
    replays = graphed.group_by("corr_id").agg((pl.col("end_ns").max() - pl.col("start_ns").min()).alias("dur_ns"))
    units = pl.concat([single.select(pl.col("dur_ns").cast(pl.Int64)), whole.select(pl.col("dur_ns").cast(pl.Int64)),
                       replays.select(pl.col("dur_ns").cast(pl.Int64))])
    whole_ns = float(whole["dur_ns"].sum()) if whole.height else 0.0
    graph_ns = float(graphed["dur_ns"].sum()) + whole_ns if graphed.height else whole_ns
    work_ns = float(k["dur_ns"].sum()) + whole_ns if k.height else whole_ns
    return units, {"graph_kernels": graphed.height, "graph_ns": graph_ns, "whole_ns": whole_ns, "work_ns": work_ns}


TIMELINE_FACTS = ("gpu_active_pct", "gpu_idle_pct", "kernel_active_pct", "memcpy_active_pct", "gpu_idle_gap_count",
                   "gpu_longest_gap_ms", "gpu_idle_short_gaps_pct", "gpu_idle_long_gaps_pct", "kernel_count",
                   "kernel_median_us", "kernel_small_share_pct", "memcpy_share_of_busy_pct", "nccl_share_of_busy_pct",
                   "gpu_idle_host_elim_pct", *(f"gpu_idle_{c}_pct" for c in timeline.CAUSES))


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("graph_launch_count", "", "CUDA graph launches in the window", ("api_trace", "api_sum")),
    fact("graph_kernel_count", "", "kernels in the window that a CUDA graph launch replayed, traced one by one (their correlation id is the graph launch's: torch.profiler, nsys --cuda-graph-trace=node); counted as launched by the graph, not one launch each; put where the window launches graphs", ("gpu_trace", "api_trace")),
    fact("graph_share_of_kernel_pct", "%", "share of the window's kernel work launched by CUDA graphs: kernels a graph launch replayed and whole graph executions (nsys's default --cuda-graph-trace=graph); the step is replayed by a graph when it is most of it; put where the window launches graphs", ("gpu_trace", "api_trace")),
]
