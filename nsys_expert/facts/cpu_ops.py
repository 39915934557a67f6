"""Facts from the CPU operators of a torch.profiler (Kineto) trace: what nsys does not record.

The trace's ``cpu_op`` events (``cpu_trace``) and ``user_annotation`` ranges (``nvtx_trace``) say what
the host was doing in PyTorch's terms, on which thread:

- the DataLoader: ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` ranges (the iterator
  class says whether batches are made in the main process, ``num_workers=0``, or come from workers);
- the optimizer: ``Optimizer.step#AdamW.step`` ranges;
- the backward pass: ``autograd::engine::evaluate_function: XBackward0`` operators (the autograd
  engine's threads run them);
- the operator behind each synchronisation and each copy from pageable memory: the runtime call
  (``cudaStreamSynchronize``, ``hipMemcpyWithStream``, ...) lies inside the operators that made it on
  the same thread (``aten::item`` > ``aten::_local_scalar_dense`` > ``cudaMemcpyAsync`` +
  ``cudaStreamSynchronize``), found by time containment, the outermost and the innermost named.

Kernel time is split by the phase whose host range holds the kernel's launch call (same thread):
DataLoader, optimizer, backward, and the rest (forward pass, loss, anything else). A sync is
weighed by the GPU idle time that followed it (the gaps facts/gaps.py gave the cause ``sync``), or,
where no sync left the GPU idle, by the time the host waited in it.
"""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, pct, srcs
from .names import ASYNC_MEM_APIS, SYNC_APIS, SYNC_MEM_APIS, api_base
from .declare import fact, group

DATALOADER = r"^enumerate\(DataLoader\)#"
SINGLE_PROCESS = "_SingleProcessDataLoaderIter"
OPTIMIZER = r"^Optimizer\.step#"
BACKWARD = r"^autograd::engine::evaluate_function: "
PHASES = ("dataloader", "optimizer", "backward", "forward")
NO_OP = "(no operator)"


def applies(ctx: Context) -> bool:
    t = ctx.prof.tables.get("cpu_trace")
    return t is not None and t.height > 0 and ctx.win.length_ns > 0


def _ranges(ctx: Context, pattern: str) -> pl.DataFrame:
    """Host ranges (``s``, ``e``, ``pid``, ``tid``, ``name``) whose name matches, from the CPU operators and
    the user annotations (the same name is a ``cpu_op`` in some eras, a ``user_annotation`` in others)."""
    parts = []
    for t in ("cpu_trace", "nvtx_trace"):
        df = ctx.prof.tables.get(t)
        if df is not None and df.height and "tid" in df.columns:
            parts.append(df.filter(pl.col("name").str.contains(pattern)).select(
                pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"), pl.col("pid").cast(pl.Int64),
                pl.col("tid").cast(pl.Int64), pl.col("name")))
    if not parts:
        return pl.DataFrame(schema={"s": pl.Int64, "e": pl.Int64, "pid": pl.Int64, "tid": pl.Int64, "name": pl.String})
    return pl.concat(parts).unique(["s", "e", "pid", "tid"], maintain_order=True)


def _merged(df: pl.DataFrame, win) -> pl.DataFrame:
    """Per thread, the union of the ranges, clipped to the window."""
    d = df.with_columns(thread_key())
    m = intervals.merge(d.select("thr", "s", "e"), by="thr")
    return m.with_columns(pl.col("s").clip(lower_bound=win.start_ns), pl.col("e").clip(upper_bound=win.end_ns)) \
            .filter(pl.col("e") > pl.col("s"))


def _inside(points: pl.DataFrame, ranges: pl.DataFrame) -> pl.Series:
    """For each point (``thr``, ``t``): does a range of the same thread hold it? (ranges merged per thread)"""
    if ranges.height == 0 or points.height == 0:
        return pl.Series([False] * points.height)
    r = ranges.select("thr", pl.col("s").alias("_s"), pl.col("e").alias("_e")).sort("thr", "_s")
    p = points.with_row_index("_i").sort("thr", "t")
    j = p.join_asof(r, left_on="t", right_on="_s", by="thr", strategy="backward", check_sortedness=False)
    j = j.with_columns((pl.col("_e").is_not_null() & (pl.col("_e") > pl.col("t"))).alias("_in")).sort("_i")
    return j["_in"]


def thread_key(expr_pid: str = "pid", expr_tid: str = "tid") -> pl.Expr:
    """One int64 per (process, thread): packed where the ids fit, a hash where a hostile id would wrap around."""
    from ..load.sanity import pair_key

    return pair_key(pl.col(expr_pid).fill_null(0), pl.col(expr_tid).fill_null(0)).alias("thr")


def holders(calls: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """For each call (``cid``, ``thr``, ``t0``, ``t1``): the outermost and innermost operator of the same
    thread whose span holds it (``outer``, ``inner``; null when none does)."""
    if calls.height == 0:
        return calls.with_columns(pl.lit(None, pl.String).alias("outer"), pl.lit(None, pl.String).alias("inner"))
    o = ops.with_row_index("oi").select(pl.col("thr").alias("othr"), pl.col("start_ns").alias("os"),
                                        pl.col("end_ns").alias("oe"), pl.col("name").alias("oname"), "oi")
    # only the operators that start before the last call ends and end after the first begins
    o = o.filter((pl.col("os") <= calls["t1"].max()) & (pl.col("oe") >= calls["t0"].min()))
    j = calls.join_where(o, pl.col("os") <= pl.col("t0"), pl.col("oe") >= pl.col("t1")) \
             .filter(pl.col("othr") == pl.col("thr"))
    if j.height == 0:
        return calls.with_columns(pl.lit(None, pl.String).alias("outer"), pl.lit(None, pl.String).alias("inner"))
    # operators with the same span (an operator and the one it calls at once) in the trace's order: the
    # outer one first (a tie left to the sort gave another operator from run to run)
    srt = j.sort(["cid", "os", "oe", "oi"], descending=[False, False, True, False], maintain_order=True)
    best = srt.group_by("cid", maintain_order=True).agg(pl.col("oname").first().alias("outer"),
                                                         pl.col("oname").last().alias("inner"))
    return calls.join(best, on="cid", how="left", maintain_order="left")


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    src = prof.source_name("cpu_trace")
    ops = prof.tables["cpu_trace"].with_columns(thread_key())
    wlen = win.length_ns
    steps = fs.run.get("iter_count")
    loader = _ranges(ctx, DATALOADER)
    opt = _ranges(ctx, OPTIMIZER)
    bwd = ops.filter(pl.col("name").str.contains(BACKWARD)).select(
        pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"), "pid", "tid", "name")
    merged = {"dataloader": _merged(loader, win), "optimizer": _merged(opt, win), "backward": _merged(bwd, win)}
    in_window = {k: v.filter(pl.col("s") < pl.col("e")) for k, v in merged.items()}
    # steps: the iterations, else one optimizer step or one batch each
    n_steps = steps or (in_window["optimizer"].height or in_window["dataloader"].height or None)
    both = srcs(src, prof.source_name("nvtx_trace"))
    if loader.height:
        t = intervals.total(in_window["dataloader"])
        fs.put("dataloader_share_pct", pct(t, wlen), both)
        if n_steps:
            fs.put("dataloader_ms_per_step", t / n_steps / 1e6, both)
        names = loader["name"].unique().to_list()
        fs.put("dataloader_in_main_process", int(any(SINGLE_PROCESS in n for n in names)), both)
    if opt.height:
        t = intervals.total(in_window["optimizer"])
        fs.put("optimizer_step_share_pct", pct(t, wlen), both)
        if n_steps:
            fs.put("optimizer_step_ms", t / n_steps / 1e6, both)
    if bwd.height and n_steps:
        fs.put("backward_host_ms_per_step", intervals.total(in_window["backward"]) / n_steps / 1e6, src)
    _kernel_phases(ctx, merged, n_steps, src)
    sync_sources(ctx, src, lambda calls: holders(calls, ops))
    _pageable_sources(ctx, ops, src)


def _launches(ctx: Context) -> pl.DataFrame | None:
    """The window's kernels with the thread and start of the call that launched them."""
    gpu = ctx.fs.work.gpu_trace(ctx.prof)
    api = ctx.prof.tables.get("api_trace")
    if gpu is None or api is None or api.height == 0 or "tid" not in api.columns:
        return None
    k = timeline.starting_in(gpu, ctx.win.start_ns, ctx.win.end_ns)
    if "kind" in k.columns:
        k = k.filter(pl.col("kind").is_in(list(timeline.KERNEL_WORK)))
    k = k.filter(pl.col("corr_id").is_not_null()).select("corr_id", "dur_ns")
    calls = api.filter(pl.col("corr_id").is_not_null()).select("corr_id", pl.col("start_ns").alias("t"), thread_key()) \
               .unique("corr_id", keep="first")
    return k.join(calls, on="corr_id", how="inner")


def _kernel_phases(ctx: Context, merged: dict, n_steps, src) -> None:
    fs = ctx.fs
    k = _launches(ctx)
    if k is None or k.height == 0:
        return
    phase = pl.Series("phase", ["forward"] * k.height)
    for name in ("backward", "optimizer", "dataloader"):   # the later wins: a DataLoader range holds no backward
        hit = _inside(k.select("thr", "t"), merged[name])
        phase = pl.select(pl.when(hit).then(pl.lit(name)).otherwise(phase)).to_series()
    by = dict(k.with_columns(phase.alias("phase")).group_by("phase").agg(pl.col("dur_ns").sum()).iter_rows())
    total = sum(by.values())
    if not total:
        return
    where = srcs(src, ctx.prof.source_name("gpu_trace"), ctx.prof.source_name("api_trace"))
    seen = {"backward": merged["backward"].height, "optimizer": merged["optimizer"].height}
    for name in ("backward", "optimizer", "forward"):
        if name == "forward" or seen[name]:
            fs.put(f"{name}_kernel_share_pct", pct(by.get(name, 0), total), where)
    if seen["backward"] and by.get("forward"):
        fs.put("backward_forward_ratio", by.get("backward", 0) / by["forward"], where)
    fs.tables["cpu_phases"] = [
        {"phase": name, "kernel_ms": by.get(name, 0) / 1e6, "kernel_share_pct": pct(by.get(name, 0), total),
         "host_ms_per_step": (intervals.total(merged[name]) / n_steps / 1e6
                              if name in merged and n_steps and merged[name].height else None)}
        for name in PHASES if by.get(name) or (name in merged and merged[name].height)]


def sync_sources(ctx: Context, src, held_of) -> None:
    """The operator behind each blocking call in the window, weighed by the GPU idle time after it.
    ``held_of(calls)``: the calls (``cid``, ``t0``, ``t1``, ``api``, ``thr``, ``pid``, ``corr_id``) with the
    operators that made each (``outer``, ``inner``; null where none): torch.profiler's CPU operators by
    time containment (this module), or the calls' native call chains (facts/call_ops.py)."""
    fs, win = ctx.fs, ctx.win
    api = ctx.prof.tables.get("api_trace")
    if api is None or api.height == 0 or "tid" not in api.columns:
        return
    blocking = sorted(SYNC_APIS | SYNC_MEM_APIS)
    a = api.filter((pl.col("end_ns") > win.start_ns) & (pl.col("start_ns") < win.end_ns)).with_columns(
        api_base(api).alias("api"))
    ids = [pl.col(c).cast(pl.Int64) for c in ("pid", "corr_id") if c in a.columns]
    calls = a.filter(pl.col("api").is_in(blocking)).select(
        pl.col("start_ns").alias("t0"), pl.col("end_ns").alias("t1"), "api", thread_key(), *ids).sort("t0").with_row_index("cid")
    if calls.height == 0:
        return
    # the idle time each call left: the sync gaps (facts/gaps.py) whose start the call held
    gaps = fs.work.sync_gaps
    idle = pl.Series("idle", [0] * calls.height, dtype=pl.Int64)
    if gaps is not None and gaps.height:
        g = gaps.sort("s").select(pl.col("s").cast(pl.Int64), (pl.col("e") - pl.col("s")).alias("len"))
        j = g.join_asof(calls.select("cid", "t0", "t1").sort("t0"), left_on="s", right_on="t0", strategy="backward",
                        check_sortedness=False)
        j = j.filter(pl.col("t1") + timeline.SYNC_TOLERANCE_NS >= pl.col("s"))
        per = j.group_by("cid").agg(pl.col("len").sum())
        idle = calls.select("cid").join(per, on="cid", how="left", maintain_order="left")["len"].fill_null(0)
    calls = calls.with_columns(idle.alias("idle"), (pl.col("t1").clip(upper_bound=win.end_ns)
                                                    - pl.col("t0").clip(lower_bound=win.start_ns)).alias("wait"))
    held = held_of(calls)
    none = pl.concat_str(pl.col("api"), pl.lit(" " + NO_OP))
    held = held.with_columns(pl.coalesce("outer", none).alias("outer"), pl.coalesce("inner", none).alias("inner"))
    rows = held.group_by("outer", "inner").agg(pl.len().alias("calls"), pl.col("api").mode().sort().first().alias("api"),
                                               pl.col("wait").sum(), pl.col("idle").sum()) \
               .sort(["idle", "wait", "outer"], descending=[True, True, False])
    idle_total, wait_total = int(rows["idle"].sum()), int(rows["wait"].sum())
    by_idle = idle_total > 0
    top = rows.row(0, named=True)
    where = srcs(src, ctx.prof.source_name("api_trace"))
    fs.put("sync_source_op", top["outer"], where)
    if top["inner"] != top["outer"]:
        fs.put("sync_source_inner_op", top["inner"], where)
    fs.put("sync_source_api", top["api"], where)
    fs.put("sync_source_share_pct", pct(top["idle"], idle_total) if by_idle else pct(top["wait"], wait_total), where)
    if fs.run.get("iter_count"):
        fs.put("sync_source_calls_per_iter", top["calls"] / fs.run["iter_count"], where)
    fs.tables["sync_sources"] = [
        {"op": r["outer"], "inner": r["inner"] if r["inner"] != r["outer"] else None, "api": r["api"],
         "calls": r["calls"], "wait_ms": r["wait"] / 1e6, "idle_after_ms": r["idle"] / 1e6,
         "share_pct": pct(r["idle"], idle_total) if by_idle else pct(r["wait"], wait_total)}
        for r in rows.head(5).iter_rows(named=True)]


def _pageable_sources(ctx: Context, ops: pl.DataFrame, src) -> None:
    """The operator behind the copies from / to pageable host memory in the window, weighed by copy time."""
    fs, win = ctx.fs, ctx.win
    gpu = ctx.fs.work.gpu_trace(ctx.prof)
    api = ctx.prof.tables.get("api_trace")
    if gpu is None or api is None or "tid" not in api.columns:
        return
    corr = timeline.pageable_copy_corr_ids(gpu)
    if not corr:
        return
    cp = timeline.starting_in(gpu, win.start_ns, win.end_ns).filter(pl.col("corr_id").is_in(corr)) \
                 .select("corr_id", "dur_ns")
    if cp.height == 0:
        return
    copy_apis = sorted(SYNC_MEM_APIS | ASYNC_MEM_APIS)
    calls = api.filter(pl.col("corr_id").is_in(corr)).filter(api_base(api).is_in(copy_apis)).select(
        "corr_id", pl.col("start_ns").alias("t0"), pl.col("end_ns").alias("t1"), thread_key()).unique("corr_id", keep="first")
    calls = calls.join(cp, on="corr_id", how="inner").with_row_index("cid")
    if calls.height == 0:
        return
    held = holders(calls, ops).with_columns(pl.col("outer").fill_null(NO_OP))
    rows = held.group_by("outer").agg(pl.len().alias("n"), pl.col("dur_ns").sum()).sort(
        ["dur_ns", "outer"], descending=[True, False])
    top = rows.row(0, named=True)
    where = srcs(src, ctx.prof.source_name("gpu_trace"), ctx.prof.source_name("api_trace"))
    fs.put("pageable_copy_op", top["outer"], where)
    fs.put("pageable_copy_op_calls", top["n"], where)
    fs.put("pageable_copy_op_share_pct", pct(top["dur_ns"], int(rows["dur_ns"].sum())), where)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("dataloader_share_pct", "%", "share of the window inside the DataLoader's __next__ (enumerate(DataLoader)#... ranges)", ("cpu_trace",)),
    fact("dataloader_ms_per_step", "ms", "time in the DataLoader's __next__ per step (per iteration; per optimizer step or batch without iterations)", ("cpu_trace",)),
    fact("dataloader_in_main_process", "", "1 when the batches are made in the main process (_SingleProcessDataLoaderIter: num_workers=0), 0 when they come from worker processes", ("cpu_trace",)),
    fact("optimizer_step_share_pct", "%", "share of the window inside Optimizer.step ranges (host time)", ("cpu_trace",)),
    fact("optimizer_step_ms", "ms", "host time in Optimizer.step per step", ("cpu_trace",)),
    fact("backward_host_ms_per_step", "ms", "host time in the autograd engine's backward operators (evaluate_function) per step", ("cpu_trace",)),
    fact("backward_kernel_share_pct", "%", "share of the window's kernel time launched from the backward pass (autograd evaluate_function operators)", ("cpu_trace",)),
    fact("forward_kernel_share_pct", "%", "share of the window's kernel time launched outside the backward pass, the optimizer step and the DataLoader (forward pass, loss, the rest)", ("cpu_trace",)),
    fact("optimizer_kernel_share_pct", "%", "share of the window's kernel time launched from Optimizer.step", ("cpu_trace",)),
    fact("backward_forward_ratio", "x", "kernel time launched from the backward pass / from the forward pass and the rest (about 2 in a plain training step)", ("cpu_trace",)),
    fact("sync_source_op", "", "the outermost PyTorch operator holding the blocking calls that left the GPU idle longest (aten::item, aten::nonzero, aten::to, ...; 'API (no operator)' for a call made outside any operator: torch.cuda.synchronize())", ("cpu_trace", "call_ops")),
    fact("sync_source_inner_op", "", "the innermost operator holding those calls (aten::_local_scalar_dense, aten::copy_), when it is not the outermost", ("cpu_trace", "call_ops")),
    fact("sync_source_api", "", "the blocking runtime call those operators make most (cudaStreamSynchronize, hipMemcpyWithStream, ...)", ("cpu_trace", "call_ops")),
    fact("sync_source_share_pct", "%", "share of the GPU idle time after blocking calls that follows the calls of sync_source_op (of the host's wait in them when no call left the GPU idle)", ("cpu_trace", "call_ops")),
    fact("sync_source_calls_per_iter", "", "blocking calls per iteration made inside sync_source_op", ("cpu_trace", "call_ops")),
    fact("pageable_copy_op", "", "the outermost PyTorch operator issuing most of the copy time to or from pageable host memory (aten::to, aten::copy_, ...)", ("cpu_trace",)),
    fact("pageable_copy_op_calls", "", "copies to or from pageable memory in the window issued inside pageable_copy_op", ("cpu_trace",)),
    fact("pageable_copy_op_share_pct", "%", "share of the window's pageable copy time issued inside pageable_copy_op", ("cpu_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("cpu_ops", compute, applies,
          reads=("fact:iter_count", "input:api_trace", "input:cpu_trace", "input:nvtx_trace", "work:gpu", "work:sync_gaps"),
          puts=(FACTS, "table:cpu_phases", "table:sync_sources")),
]
