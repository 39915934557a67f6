"""What surrounds each blocking sync (issue 54, "evidence before pattern"): the copy that precedes it and
where in the step it falls.

A blocking read of a result (``loss.item()``, ``.cpu()``) and a data-dependent shape (boolean-mask
indexing, ``nonzero``, ``masked_select``, ``unique``) both show as a small device-to-host copy followed by
a stream synchronisation. They differ in how often and where: a read for a log line comes once or twice
a step, at its end; a data-dependent shape comes inside the forward and backward passes, once per layer
(per expert), with the step's work queued before and after it. So, over the blocking calls of the window:

- ``sync_small_d2h_share_pct``: the share that follows (same thread, within 200 us of its end) a
  device-to-host copy call of at most 64 bytes (a count or a scalar), or is one;
- ``sync_mid_step_share_pct``: the share with a fifth or more of their step's kernel launches still to
  come (inside the passes, not at the step's end);
- ``sync_small_d2h_per_iter``: those syncs after small copies, per iteration;
- ``sync_op_host_pct``: the host's time in the operations around those syncs, as a share of the window:
  for each, from the end of the CUDA call before the kernel that made the count (the last launch before
  the copy) to the end of the ``OP_LAUNCHES_AFTER``-th launch after the sync (the compaction that uses
  the count and the gather that uses its result: ``nonzero``'s select kernels, the index): the Python
  time before each call included, the spans merged. Where the host is the critical path (a launch-bound
  step: the host cannot queue ahead of a GPU it drains at every sync), this is what fixed-shape code
  returns.
- ``sync_small_d2h_api_share_pct``: the launching thread's time blocked in them, share of the window;
- ``sync_explicit_per_iter``: the synchronisations (cuda*Synchronize) with no copy or set call just
  before them on their thread, per iteration: ``torch.cuda.synchronize()`` (a step timer, a log line),
  not a read of a value (that copies first) nor PyTorch's sync after a pageable ``.to('cuda')``;
- ``gpu_idle_explicit_sync_pct``: the GPU's idle time in the gaps that begin while such a call waits
  (it drained the queue) and last until the next operation, share of the window (per GPU, averaged);
- ``gpu_idle_explicit_sync_host_after_pct``: of that, the part after the call had returned: the host's
  own work (timing, logging) between the sync and its next launch, which the GPU waits for.
"""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, pct, srcs
from .declare import fact, group
from . import intervals
from .names import ASYNC_MEM_APIS, KERNEL_LAUNCH_APIS, SYNC_APIS, SYNC_MEM_APIS, api_base

SMALL_BYTES = 64
FOLLOW_NS = 200_000       # a sync this soon after a small copy call ended on its thread reads that copy back
MID_SHARE = 0.2
# a data-dependent index after its count is read back: the compaction kernels (cub's select: init and
# sweep) and the gather that uses the indices (pair_moe_mask: DeviceCompactInit, DeviceSelectSweep,
# index / gather after each cudaStreamSynchronize)
OP_LAUNCHES_AFTER = 3


def applies(ctx: Context) -> bool:
    api = ctx.prof.tables.get("api_trace")
    return api is not None and api.height > 0 and ctx.win.length_ns > 0 and "tid" in api.columns


def compute(ctx: Context) -> None:
    prof, win = ctx.prof, ctx.win
    api, gpu = prof.tables["api_trace"], prof.tables.get("gpu_trace")
    a = timeline.starting_in(api, win.start_ns, win.end_ns).select(
        "start_ns", "end_ns", "tid", "corr_id", api_base(api).alias("base"))
    blocking = sorted(SYNC_APIS | SYNC_MEM_APIS)
    syncs = a.filter(pl.col("base").is_in(blocking))
    src = prof.source_name("api_trace")
    if syncs.height == 0:           # no blocking call: none after a small copy, none mid-step
        for name in ("sync_small_d2h_share_pct", "sync_small_d2h_per_iter", "sync_mid_step_share_pct",
                     "sync_small_d2h_api_share_pct", "sync_explicit_per_iter", "gpu_idle_explicit_sync_pct",
                     "gpu_idle_explicit_sync_host_after_pct"):
            ctx.fs.put(name, 0.0, src)
        return
    if gpu is None or not {"corr_id", "bytes", "copy_kind"} <= set(gpu.columns):
        return
    small = gpu.filter((pl.col("copy_kind") == "DtoH") & (pl.col("bytes") <= SMALL_BYTES)).select("corr_id")
    copies = a.join(small, on="corr_id", how="semi").select("tid", pl.col("start_ns").alias("copy_s"),
                                                          pl.col("end_ns").alias("copy_e"))
    # a sync that is the small copy (a synchronous cudaMemcpy), or that starts soon after one ended on its
    # thread (a copy into pageable memory waits for the GPU itself: from its end, not its start)
    s = syncs.sort("start_ns").join_asof(copies.sort("copy_e"), left_on="start_ns", right_on="copy_e", by="tid",
                                         strategy="backward", tolerance=FOLLOW_NS, check_sortedness=False)
    s = s.join(copies.select("tid", pl.col("copy_s").alias("same_s")), left_on=["tid", "start_ns"],
               right_on=["tid", "same_s"], how="left", coalesce=False)
    s = s.with_columns((pl.col("copy_e").is_not_null() | pl.col("same_s").is_not_null()).alias("after_small"))
    n = s.height
    n_small = int(s["after_small"].sum())
    ctx.fs.put("sync_small_d2h_share_pct", pct(n_small, n), src)
    small_iv = intervals.clip(intervals.merge(s.filter(pl.col("after_small")).select(
        pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))), win.start_ns, win.end_ns)
    ctx.fs.put("sync_small_d2h_api_share_pct", pct(intervals.total(small_iv), win.length_ns), src)
    explicit = _explicit(a, s)
    n_explicit = explicit.height
    _explicit_idle(ctx, explicit, src)
    iters = win.iterations
    if win.steady_iters < 1:
        return
    it = iters.slice(win.skipped).select(pl.col("host_s").alias("s"), pl.col("host_e").alias("e")).drop_nulls()
    it = it.filter((pl.col("s") >= win.start_ns) & (pl.col("s") < win.end_ns)).with_row_index("it")
    if it.height == 0:
        return
    ctx.fs.put("sync_small_d2h_per_iter", n_small / it.height, src)
    ctx.fs.put("sync_explicit_per_iter", n_explicit / it.height, src)
    launches = a.select(pl.col("start_ns").filter(pl.col("base").is_in(sorted(KERNEL_LAUNCH_APIS))))   # one column copied
    mid = _mid_step(s.select("start_ns"), launches, it)
    if mid is not None:
        ctx.fs.put("sync_mid_step_share_pct", mid, src)
    if n_small:
        op = _op_spans(s.filter(pl.col("after_small")), a)
        cover = intervals.merge(op) if op.height else op
        ctx.fs.put("sync_op_host_pct", pct(intervals.total(intervals.clip(cover, win.start_ns, win.end_ns)) if op.height else 0,
                                           win.length_ns) or 0.0, src)


def _op_spans(syncs: pl.DataFrame, a: pl.DataFrame) -> pl.DataFrame:
    """Per sync after a small copy, the host span of its operation (``sync_op_host_pct``): s, e."""
    launch_apis = sorted(KERNEL_LAUNCH_APIS)
    la = a.filter(pl.col("base").is_in(launch_apis)).select("tid", "start_ns", "end_ns").sort("tid", "start_ns") \
        .with_columns(pl.int_range(pl.len()).over("tid").alias("k"))
    work = a.filter(pl.col("base").is_in(launch_apis + sorted(SYNC_APIS | SYNC_MEM_APIS))   # launches, syncs, copies
                    | pl.col("base").cast(pl.String).str.contains("(?i)memcpy|memset")).select("tid", pl.col("end_ns").alias("p_e")).sort("p_e")
    sy = syncs.select("tid", pl.col("start_ns").alias("sync_s"), pl.col("end_ns").alias("sync_e"),
                      pl.coalesce("copy_s", "same_s", "start_ns").alias("c0"))
    # the launch of the count: the last launch on the thread before the copy
    sy = sy.sort("c0").join_asof(la.select("tid", pl.col("start_ns").alias("l_s")).sort("l_s"), left_on="c0",
                                 right_on="l_s", by="tid", strategy="backward", check_sortedness=False)
    # the call before it (launch, copy or sync): the Python time between them is the operation's too
    sy = sy.with_columns((pl.coalesce("l_s", "c0") - 1).alias("before")).sort("before") \
        .join_asof(work, left_on="before", right_on="p_e", by="tid", strategy="backward", check_sortedness=False)
    # the OP_LAUNCHES_AFTER-th launch after the sync returned
    sy = sy.sort("sync_e").join_asof(la.select("tid", pl.col("start_ns").alias("n_s"), "k").sort("n_s"), left_on="sync_e",
                                     right_on="n_s", by="tid", strategy="forward", check_sortedness=False)
    sy = sy.with_columns((pl.col("k") + OP_LAUNCHES_AFTER - 1).alias("k_end")).join(
        la.select("tid", pl.col("k").alias("k_end"), pl.col("end_ns").alias("op_e")), on=["tid", "k_end"], how="left")
    out = sy.select(pl.coalesce("p_e", "l_s", "c0").alias("s"), pl.coalesce("op_e", "sync_e").alias("e"))
    return out.filter(pl.col("e") > pl.col("s")).with_columns(pl.col("s").cast(pl.Int64), pl.col("e").cast(pl.Int64))


def _explicit(a: pl.DataFrame, s: pl.DataFrame) -> pl.DataFrame:
    """The synchronisation calls (``SYNC_APIS``, not a blocking copy) that read nothing back: no small copy
    before them, and the call just before each on its thread is not a copy or a set (PyTorch's sync after
    a pageable ``.to('cuda')``, a ``.cpu()``): start_ns, end_ns."""
    syn = s.filter(pl.col("base").is_in(sorted(SYNC_APIS)) & ~pl.col("after_small")).select("tid", "start_ns", "end_ns")
    if syn.height == 0:
        return syn.select("start_ns", "end_ns")
    mem = sorted(ASYNC_MEM_APIS | SYNC_MEM_APIS)
    # the call just before each on its thread: an as-of join of the few syncs into the calls (in start
    # order: the trace's), not the whole window's calls sorted by thread and joined back (0.35 s and
    # +290 MB at 2 M calls)
    calls = a.select("tid", "start_ns", pl.col("base").alias("prev"))
    if not calls["start_ns"].is_sorted():
        calls = calls.sort("start_ns", maintain_order=True)
    syn = syn.sort("start_ns")
    lo, hi = calls.select(pl.col("tid").min().alias("lo"), pl.col("tid").max().alias("hi")).row(0)
    if lo is not None and lo == hi and not calls["tid"].null_count():
        # one thread (the usual trace): the call before each is a binary search away
        i = calls["start_ns"].search_sorted(syn["start_ns"], side="left").cast(pl.Int64) - 1
        j = syn.with_columns(pl.when(i >= 0).then(calls["prev"].gather(i.clip(lower_bound=0))).alias("prev"))
    else:
        j = syn.join_asof(calls, on="start_ns", by="tid", strategy="backward", allow_exact_matches=False,
                          check_sortedness=False)
    # a call of no known thread follows nothing
    j = j.with_columns(pl.when(pl.col("tid").is_not_null()).then(pl.col("prev")).alias("prev"))
    return j.filter(pl.col("prev").is_null() | ~pl.col("prev").is_in(mem)).select("start_ns", "end_ns").unique().sort("start_ns")


def _explicit_idle(ctx: Context, explicit: pl.DataFrame, src: str) -> None:
    """The GPU's idle time in the gaps that begin while an explicit sync waits (it drained the queue),
    and the part of it after the call returned, as shares of the window (per GPU, averaged)."""
    busy, win = ctx.fs.work.busy, ctx.win
    if not ctx.timeline_ok or busy is None or not busy:
        return
    both = srcs(src, ctx.prof.source_name("gpu_trace"))
    if explicit.height == 0:
        ctx.fs.put("gpu_idle_explicit_sync_pct", 0.0, both)
        ctx.fs.put("gpu_idle_explicit_sync_host_after_pct", 0.0, both)
        return
    calls = explicit.select(pl.col("start_ns").alias("_t"), pl.col("end_ns").alias("_se")).sort("_t")
    idle = after = 0
    for d in sorted(busy):
        g = intervals.gaps(busy[d], win.start_ns, win.end_ns).select("s", "e")
        if g.height == 0:
            continue
        if not g["s"].is_sorted():
            g = g.sort("s")
        i_, a_ = _idle_in(g, calls) if g["e"].is_sorted() and not g.null_count().sum_horizontal().item() \
            else _idle_joined(g, calls)
        idle, after = idle + i_, after + a_
    n = max(1, len(busy))
    ctx.fs.put("gpu_idle_explicit_sync_pct", pct(idle / n, win.length_ns), both)
    ctx.fs.put("gpu_idle_explicit_sync_host_after_pct", pct(after / n, win.length_ns), both)


def _idle_joined(g: pl.DataFrame, calls: pl.DataFrame) -> tuple[int, int]:
    """(idle, after) of the gaps ``g`` (s, e; by start) that begin while an explicit sync (``calls``: _t, _se;
    the last begun at or before the gap's start) waits: their length, and their part after the call ended."""
    j = g.join_asof(calls, left_on="s", right_on="_t", strategy="backward").filter(
        pl.col("_se").is_not_null() & (pl.col("_se") >= pl.col("s")))
    i_, a_ = j.select((pl.col("e") - pl.col("s")).sum().alias("idle"),
                      (pl.col("e") - pl.col("_se").clip(pl.col("s"), pl.col("e"))).sum().alias("after")).row(0)
    return int(i_ or 0), int(a_ or 0)


def _idle_in(g: pl.DataFrame, calls: pl.DataFrame) -> tuple[int, int]:
    """:func:`_idle_joined` by binary searches, for gaps in order and apart (a busy union's: their ends in
    order too): the gaps of call k are those starting in [_t(k), _t(k+1)) and at or before _se(k), one
    run of rows; their lengths summed as prefix-sum differences, the part after _se(k) a suffix of that
    run (the gaps whose end is past it). A few searches per call instead of a join of a million gaps."""
    s, e = g["s"], g["e"]
    n = g.height
    c = calls.filter(pl.col("_t").is_not_null())
    t, se = c["_t"], c["_se"]
    lo = s.search_sorted(t, side="left").cast(pl.Int64)
    k = pl.DataFrame({"lo": lo, "nxt": lo.shift(-1).fill_null(n),
                      "hs": s.search_sorted(se.fill_null(0), side="right").cast(pl.Int64),
                      "m": e.search_sorted(se.fill_null(0), side="right").cast(pl.Int64), "se": se})
    k = k.with_columns(pl.when(pl.col("se").is_null()).then(pl.col("lo"))
                       .otherwise(pl.max_horizontal(pl.col("lo"), pl.min_horizontal("nxt", "hs"))).alias("hi"))
    k = k.with_columns(pl.min_horizontal(pl.max_horizontal("m", "lo"), "hi").alias("m"))
    zero = pl.Series([0], dtype=pl.Int64)
    length = pl.concat([zero, (e - s).cast(pl.Int64).cum_sum()])
    ends = pl.concat([zero, e.cast(pl.Int64).cum_sum()])
    i_ = (length.gather(k["hi"]) - length.gather(k["lo"])).sum()
    a_ = (ends.gather(k["hi"]) - ends.gather(k["m"]) - (k["hi"] - k["m"]) * k["se"].fill_null(0)).sum()
    return int(i_ or 0), int(a_ or 0)


def _by_start(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` by ``start_ns``: as it is when in order already (a window's launches: a million rows sorted again)."""
    return df if df["start_ns"].is_sorted() else df.sort("start_ns")


def _in_iter(points: pl.DataFrame, it: pl.DataFrame) -> pl.DataFrame:
    """``points`` (start_ns) with the iteration (``it``) whose host range holds each; the others dropped."""
    j = _by_start(points).join_asof(it.sort("s"), left_on="start_ns", right_on="s", strategy="backward")
    return j.filter(pl.col("e").is_not_null() & (pl.col("start_ns") <= pl.col("e")))


def _mid_step(syncs: pl.DataFrame, launches: pl.DataFrame, it: pl.DataFrame) -> float | None:
    """Share of the syncs (inside an iteration) with MID_SHARE or more of that iteration's launches after them."""
    sy, la = _in_iter(syncs, it), _in_iter(launches, it)
    if sy.height == 0 or la.height == 0:
        return None
    la = _by_start(la).with_columns(pl.len().over("it").alias("n_it"),
                                          pl.int_range(pl.len()).over("it").alias("k"))
    # launches of the same iteration at or before each sync: an as-of join by iteration
    j = _by_start(sy).join_asof(la.select("start_ns", "it", "k", "n_it"), on="start_ns", by="it",
                                      strategy="backward", check_sortedness=False)
    tot = la.group_by("it").agg(pl.len().alias("tot"))
    j = j.join(tot, on="it", how="left").with_columns(
        (pl.col("tot") - pl.col("k").fill_null(-1) - 1).alias("after"))
    mid = j.filter(pl.col("after") >= MID_SHARE * pl.col("tot")).height
    return pct(mid, j.height)


FACTS = [
    fact("sync_small_d2h_share_pct", "%", "share of the window's blocking sync calls that follow (or are) a device-to-host copy of 64 bytes or less on their thread: a scalar or a count read back (loss.item(), or a data-dependent shape: nonzero, a boolean-mask index)", ("api_trace", "gpu_trace")),
    fact("sync_small_d2h_per_iter", "", "blocking syncs after such small device-to-host copies, per iteration", ("api_trace", "gpu_trace")),
    fact("sync_op_host_pct", "%", "host time in the operations around the syncs after small device-to-host copies, as a share of the window: from the CUDA call before the kernel that made the count to the end of the third launch after the sync (the compaction and the gather that use it), merged", ("api_trace", "gpu_trace")),
    fact("sync_small_d2h_api_share_pct", "%", "host time inside the blocking syncs that follow such small device-to-host copies (reads of a value: loss.item()), as a share of the window", ("api_trace", "gpu_trace")),
    fact("sync_explicit_per_iter", "", "synchronisation calls (cuda*Synchronize) per iteration with no small device-to-host copy before them and no copy or set call just before them on their thread: an explicit torch.cuda.synchronize() (a step timer, a log line), not a read of a value nor the sync after a pageable copy", ("api_trace", "gpu_trace")),
    fact("gpu_idle_explicit_sync_pct", "%", "GPU idle time in the gaps that begin while such an explicit synchronisation waits (it drained the queue), until the next operation, as a share of the window", ("api_trace", "gpu_trace")),
    fact("gpu_idle_explicit_sync_host_after_pct", "%", "of the idle time after explicit synchronisations, the part after the call had returned, before the host queued more work (its own work: timing, logging), as a share of the window", ("api_trace", "gpu_trace")),
    fact("sync_mid_step_share_pct", "%", "share of the blocking syncs inside an iteration with a fifth or more of that iteration's kernel launches still to come (in the middle of the forward / backward passes, not at the step's end)", ("api_trace",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("sync_context", compute, applies, reads=("input:api_trace", "input:gpu_trace", "work:busy"), puts=(FACTS,)),
]
