"""The summary evidence tier: what the trace facts measure, estimated from the summary reports.

Most users have what ``nsys stats`` prints by default (``cuda_gpu_kern_sum``, ``cuda_api_sum``,
``cuda_gpu_mem_time_sum``, ``nvtx_sum``, ``osrt_sum``, maybe ``nvtx_gpu_proj_sum``) and no trace.
These facts estimate, per iteration, what the window facts measure on a trace, so that the same rules
can decide from either (a rule's summary branch uses them; a finding resting on them is ``likely``):

- the iteration: the repeated top-level NVTX range (library domains and operator ranges left out, as
  for the trace); its time per instance is the larger of the host range's median and the median of its
  GPU projection (``nvtx_gpu_proj_sum``: from the first to the last GPU operation it launched), since
  an asynchronous loop's host range ends before its GPU work does;
- GPU work per iteration: kernel + copy + memset time over the whole profile divided by the
  iterations, capped by the projection's median (the GPU work launched inside one range cannot be longer
  than the span it projects to). Start-up work outside the iterations makes it an upper bound: a GPU
  called idle from these numbers is at least that idle;
- blocking sync calls and their time per iteration, kernel launches per sync, launch-call time per
  iteration, copy time per iteration, allocator calls per iteration, data-loading NVTX ranges.

Every fact written here has tier ``summary`` (``FactSet.tiers``). Runs whose GPU work is in CUDA
graphs that the summaries leave out (``cudaGraphLaunch`` with the default ``--cuda-graph-trace=graph``)
get no GPU-work estimate: their idle time would be invented.
"""
from __future__ import annotations

import polars as pl

from ..notes import Note
from . import api_oneoff
from .base import Context, pct
from .names import DEVICE_ALLOC_APIS, GRAPH_LAUNCH_APIS, KERNEL_LAUNCH_APIS, SYNC_APIS, SYNC_MEM_APIS, base_expr, data_range_expr
from .window import iteration_from_summary
from .declare import fact, group

TIER = "summary"
# facts of this tier that need the iteration estimate (the reason they are absent otherwise)
_PER_ITER = ("gpu_active_est_pct", "gpu_idle_est_pct", "kernel_active_est_pct", "memcpy_active_est_pct",
             "sync_wait_share_est_pct", "launch_api_share_est_pct", "gpu_work_per_iter_ms", "iter_est_median_ms",
             "iter_est_count", "sync_calls_per_iter_est", "alloc_calls_per_iter_est", "kernels_per_iter_est")


def compute(ctx: Context) -> None:
    fs, prof = ctx.fs, ctx.prof
    if "gpu_active_pct" in fs.run or ctx.graph_hidden:   # a trace measured it: no estimate needed
        return
    t = prof.tables

    def put(name, value, *tables):
        fs.put(name, value, " + ".join(prof.source_name(x) for x in tables if prof.source_name(x)), TIER)

    api = t.get("api_sum")
    api = api if api is not None and api.height else None
    ks = t.get("kern_sum")
    kern_ns, copy_ns, memset_ns = _gpu_work_ns(t)
    gpu_tabs = [x for x in ("kern_sum", "mem_time_sum", "gpu_sum") if x in t]

    counts = _api_counts(api, prof, put) if api is not None else {}
    graphs = counts.get("graph", (0, 0))[0]
    if graphs and "gpu_trace" not in t:
        fs.absent.update({k: Note("absent.graph_summaries_per_iter", {"n": graphs})
                          for k in ("gpu_active_est_pct", "gpu_idle_est_pct", "kernel_active_est_pct", "gpu_work_per_iter_ms")})

    it = _iteration(prof) or _step_phase(ctx) or _trace_steps(ctx)
    if it is None:
        why = Note("absent.needs_summary_steps")
        for k in _PER_ITER:
            fs.absent.setdefault(k, why)
        return
    name, n, iter_ns, table, proj_med = it
    fs.tables["iteration_estimate"] = {"range": name, "instances": n, "median_ms": iter_ns / 1e6, "source": prof.source_name(table)}
    put("iter_est_count", n, table)
    put("iter_est_median_ms", iter_ns / 1e6, table)
    total_iter = iter_ns * n
    if kern_ns is not None and not graphs:
        work = kern_ns + (copy_ns or 0.0) + (memset_ns or 0.0)
        per = work / n
        # not capped: past 100 the profile holds more GPU work than iteration time (work outside the
        # iterations, or concurrent streams), and the capped shares below are bounds, not estimates
        put("gpu_work_to_iter_pct", pct(per, iter_ns), table, *gpu_tabs)
        if proj_med is not None:
            per = min(per, proj_med)
        put("gpu_work_per_iter_ms", per / 1e6, table, *gpu_tabs)
        active = min(100.0, pct(per, iter_ns) or 0.0)
        put("gpu_active_est_pct", active, table, *gpu_tabs)
        put("gpu_idle_est_pct", 100.0 - active, table, *gpu_tabs)
        kper = kern_ns / n if proj_med is None else min(kern_ns / n, proj_med)
        put("kernel_active_est_pct", min(100.0, pct(kper, iter_ns) or 0.0), table, *gpu_tabs)
    if copy_ns is not None:
        _share(fs, put, "memcpy_active_est_pct", copy_ns, total_iter, table, *gpu_tabs)
    if ks is not None and ks.height:
        put("kernels_per_iter_est", float(ks["count"].sum()) / n, table, "kern_sum")
    if counts:
        n_sync, t_sync = counts["sync"]
        put("sync_calls_per_iter_est", n_sync / n, table, "api_sum")
        put("alloc_calls_per_iter_est", counts["alloc"][0] / n, table, "api_sum")
        for fact, ns in (("sync_wait_share_est_pct", t_sync), ("launch_api_share_est_pct", counts["launch"][1]),
                         ("alloc_api_share_est_pct", counts["alloc"][1])):
            _share(fs, put, fact, ns, total_iter, table, "api_sum")
    _data_ranges(ctx, name, total_iter, put)


def _gpu_work_ns(t: dict) -> tuple[float | None, float | None, float | None]:
    """(kernel, copy, memset) ns of the whole profile from the summaries: cuda_gpu_kern_sum and
    cuda_gpu_mem_time_sum, else cuda_gpu_sum."""
    ks, ms, gs = t.get("kern_sum"), t.get("mem_time_sum"), t.get("gpu_sum")
    kern_ns = float(ks["total_ns"].sum()) if ks is not None and ks.height else None
    copy_ns = memset_ns = None
    if ms is not None:
        copy_ns = float(ms.filter(pl.col("name").str.contains("(?i)memcpy"))["total_ns"].sum())
        memset_ns = float(ms["total_ns"].sum()) - copy_ns
    if gs is not None and gs.height and (kern_ns is None or copy_ns is None):
        kern_ns = float(gs.filter(pl.col("category").str.contains("(?i)kernel"))["total_ns"].sum()) if kern_ns is None else kern_ns
        if copy_ns is None:
            mem = gs.filter(~pl.col("category").str.contains("(?i)kernel"))
            copy_ns = float(mem.filter(pl.col("name").str.contains("(?i)memcpy"))["total_ns"].sum())
            memset_ns = float(mem["total_ns"].sum()) - copy_ns
    return kern_ns, copy_ns, memset_ns


def _api_counts(api: pl.DataFrame, prof, put) -> dict:
    """Calls and ns per kind (sync, launch, alloc, graph) in cuda_api_sum, without one-off start-up calls'
    times; puts the whole-profile call facts."""
    steady = api_oneoff.steady(api, prof)   # times without one-off (start-up) calls, counts of all calls

    def calls(names):
        sel = steady.filter(base_expr("name").is_in(sorted(names)))
        return int(sel["count"].sum()), float(sel["total_ns"].sum())
    counts = {"sync": calls(SYNC_APIS | SYNC_MEM_APIS), "launch": calls(KERNEL_LAUNCH_APIS),
              "alloc": calls(DEVICE_ALLOC_APIS), "graph": calls(GRAPH_LAUNCH_APIS)}
    n_sync, _ = counts["sync"]
    n_launch, _ = counts["launch"]
    if n_sync:
        put("launches_per_sync", n_launch / n_sync, "api_sum")
    put("sync_calls", n_sync, "api_sum")
    put("alloc_calls", counts["alloc"][0], "api_sum")
    put("alloc_api_ms", counts["alloc"][1] / 1e6, "api_sum")
    return counts


def _share(fs, put, fact: str, ns: float, total_iter: float, *tables) -> None:
    """A summed time as a share of the iterations' time; never clipped: a sum longer than all the
    iterations (calls of several threads, or outside the iterations) is no share of them."""
    share = pct(ns, total_iter) or 0.0
    if share > 100.0:
        fs.absent[fact] = Note("absent.sum_over_iterations", {"sum_ms": ns / 1e6, "iter_ms": total_iter / 1e6})
        return
    put(fact, share, *tables)


def _iteration(prof) -> tuple[str, int, float, str, float | None] | None:
    """(range name, instances, time per instance in ns, table, GPU projection median or None)."""
    proj = prof.tables.get("nvtx_gpu_proj_sum")
    for table in ("nvtx_gpu_proj_sum", "nvtx_sum", "nvtx_pushpop_sum"):
        df = prof.tables.get(table)
        if df is None or df.height == 0:
            continue
        if table == "nvtx_gpu_proj_sum":
            df = df.select("name", "count", pl.col("total_range_ns").alias("total_ns"),
                           pl.lit(None, pl.Float64).alias("med_ns"), "avg_range_level")
        best = iteration_from_summary(df)
        if best is None:
            continue
        name, n, total, med = best
        host_med = med if med is not None else total / n
        proj_med = None
        if proj is not None and proj.height:
            p = proj.filter(pl.col("name") == name)
            if p.height:
                proj_med = float(p["proj_med_ns"][0]) if p["proj_med_ns"][0] is not None else float(p["total_proj_ns"][0]) / n
        if table == "nvtx_gpu_proj_sum":   # the host medians are in nvtx_sum when it is there
            for other in ("nvtx_sum", "nvtx_pushpop_sum"):
                o = prof.tables.get(other)
                if o is not None and o.height and "med_ns" in o.columns:
                    row = o.filter(pl.col("name") == name)
                    if row.height and row["med_ns"][0] is not None:
                        host_med = float(row["med_ns"][0])
                        break
        return name, n, max(host_med, proj_med or 0.0), table, proj_med
    return None


def _step_phase(ctx: Context) -> tuple[str, int, float, str, float | None] | None:
    """No repeated range marks iterations, but a range named like a step (facts/phases.yaml: ``step``,
    ``training_step``, ``train_step``...) of one or two instances holds the work: it is the iteration.
    GPU work per instance is then the whole profile's over its instances, still an upper bound."""
    ph = ctx.fs.tables.get("phases") or {}
    rows = [r for r in ph.get("rows", []) if r.get("phase") == "step" and r.get("count")]
    if not rows or ph.get("nesting") == "trace":
        return None
    r = max(rows, key=lambda x: x["total_ms"])
    table = next((t for t in ("nvtx_sum", "nvtx_pushpop_sum", "nvtx_gpu_proj_sum") if t in ctx.prof.tables), None)
    if table is None:
        return None
    n = int(r["count"])
    per = (r["median_ms"] if r.get("median_ms") is not None else r["total_ms"] / n) * 1e6
    return r["name"], n, per, table, None


def _trace_steps(ctx: Context) -> tuple[str, int, float, str, float | None] | None:
    """No NVTX summary, but an NVTX trace whose repeated range chose the window (the window's iterations):
    its instances (warm-up included: the GPU work of the summaries is the whole profile's) and their median
    host time. More input never says less than a summary (issue 56, item 8: the kernel and API summaries
    beside the NVTX trace were "undetermined: no NVTX step ranges in the summary reports")."""
    win = ctx.win
    it = win.iterations
    if not win.source.startswith("nvtx:") or it is None or it.height < 2 or "nvtx_trace" not in ctx.prof.tables:
        return None
    s, e = ("host_s", "host_e") if "host_s" in it.columns else ("s", "e")
    lens = (it[e] - it[s]).drop_nulls()
    if lens.len() < 2 or not lens.median() or lens.median() <= 0:
        return None
    return win.source[len("nvtx:"):], it.height, float(lens.median()), "nvtx_trace", None


def _data_ranges(ctx: Context, iter_name: str, total_iter: float, put) -> None:
    """Data-loading NVTX ranges (by name) as a share of the iteration time."""
    for table in ("nvtx_sum", "nvtx_pushpop_sum", "nvtx_gpu_proj_sum"):
        df = ctx.prof.tables.get(table)
        if df is None or df.height == 0:
            continue
        col = "total_range_ns" if table == "nvtx_gpu_proj_sum" else "total_ns"
        d = df.filter(data_range_expr("name") & (pl.col("name") != iter_name))
        _share(ctx.fs, put, "data_range_share_est_pct", float(d[col].sum()), total_iter, table)
        return


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("iter_est_count", "", "instances of the iteration range in the NVTX summary (whole profile)", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("iter_est_median_ms", "ms", "time per iteration: the larger of the step range's median and its GPU projection's median", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("gpu_work_per_iter_ms", "ms", "kernel + copy + memset time over the iterations (capped by the projection median): an upper bound", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("gpu_work_to_iter_pct", "%", "GPU work of the whole profile per iteration / time per iteration, not capped: above 100 the summaries hold more GPU work than iteration time (work outside the iterations or on concurrent streams) and the busy share is a bound, not an estimate", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("gpu_active_est_pct", "%", "GPU work per iteration / time per iteration, from the summaries (an upper bound)", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("gpu_idle_est_pct", "%", "100 - gpu_active_est_pct: the GPU is idle at least this share of each iteration", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("kernel_active_est_pct", "%", "kernel time per iteration / time per iteration, from the summaries", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("memcpy_active_est_pct", "%", "copy time / iteration time, from the summaries", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("kernels_per_iter_est", "", "kernels per iteration (whole-profile kernel count / iterations)", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("sync_calls_per_iter_est", "", "blocking sync calls per iteration (whole profile / iterations)", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("sync_wait_share_est_pct", "%", "host time in blocking sync calls / iteration time, from the summaries", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("launch_api_share_est_pct", "%", "host time in kernel-launch calls / iteration time, from the summaries", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("alloc_calls_per_iter_est", "", "cudaMalloc / cudaFree (and driver) calls per iteration, from the summaries (pinned-host allocations left out: a pinned DataLoader's buffers)", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("data_range_share_est_pct", "%", "time in NVTX ranges named like input work / iteration time, from the summaries", ("nvtx_sum", "nvtx_gpu_proj_sum")),
    fact("launches_per_sync", "", "kernel launch calls per blocking sync call (whole profile)", ("api_sum", "api_trace")),
    fact("sync_calls", "", "blocking sync calls (whole profile)", ("api_sum", "api_trace")),
    fact("alloc_calls", "", "device allocator calls in cuda_api_sum: cudaMalloc / cudaFree and their driver forms (pinned-host allocations left out)", ("api_sum", "api_trace")),
    fact("alloc_api_ms", "ms", "host time in device allocator calls (cuda_api_sum; pinned-host allocations left out)", ("api_sum", "api_trace")),
    fact("alloc_api_share_est_pct", "%", "host time in device allocator calls / iteration time, from the summaries (start-up included; pinned-host allocations left out)", ("nvtx_sum", "nvtx_gpu_proj_sum")),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("estimates", compute,
          reads=("fact:gpu_active_pct", "input:api_sum", "input:gpu_sum", "input:kern_sum", "input:mem_time_sum",
                 "input:nvtx_gpu_proj_sum", "input:nvtx_pushpop_sum", "input:nvtx_sum", "input:nvtx_trace",
                 "table:phases"),
          puts=(FACTS, "table:iteration_estimate")),
]
