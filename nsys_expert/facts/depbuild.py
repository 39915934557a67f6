"""Building the dependency model (``depmodel.Model``) from the traces, in columns (issue 47): the thread's
calls, the host items they make (nested calls and merged query calls joined to their item, host work
between calls as ``W`` items), the blocking marks, the calibration of latencies and gaps, and when each
measured iteration was done. The event-by-event code it replaced is tests/replay_reference.py; the two
are checked against each other on real fixtures (tests/facts/test_replay_columns.py)."""
from __future__ import annotations

import polars as pl

from . import timeline
from .kernels import with_kernel_classes
from .names import ASYNC_MEM_APIS, KERNEL_LAUNCH_APIS, SYNC_APIS, SYNC_MEM_APIS, api_base

SYNC_TOL_NS = timeline.SYNC_TOLERANCE_NS
LONG_CALL_NS = 50_000        # a launch call longer than this (and 10 launches) waited for the GPU
KIND = pl.Enum(["W", "L", "S", "O"])   # host work, a launch, a synchronisation, another call
ITEM_SCHEMA = {"kind": KIND, "dur": pl.Float64, "block": pl.Boolean, "wait": pl.Int64, "ret": pl.Float64,
               "data": pl.Boolean, "api": pl.Categorical, "iteration": pl.Int64, "t": pl.Int64}
# ``item``: the host item that submits the operation (its ``ops``), ``seq``: the order of submission
OP_SCHEMA = {"dur": pl.Float64, "stream": pl.Int64, "kind": pl.String, "copy_kind": pl.String, "bytes": pl.Float64,
             "pageable": pl.Boolean, "cls": pl.String, "fused": pl.Boolean, "simt": pl.Boolean, "name": pl.String,
             "lat": pl.Float64, "item": pl.Int64, "seq": pl.Int64}


def parts(gpu: pl.DataFrame, api: pl.DataFrame, nvtx: pl.DataFrame | None, t0: int, t1: int, t_end: int,
          iter_starts: list[int]) -> tuple | None:
    """The fields of the model (``depmodel.Model``) of the host slice [t0, t1) (whole iterations), measured
    until ``t_end``. None when the slice has no launching thread."""
    if "launch_s" not in gpu.columns:
        gpu = timeline.with_launch_times(gpu, api)
        if gpu is None or "launch_s" not in gpu.columns:
            return None
    # the slice's calls: one slice of the trace in start order (a filter scanned every call)
    calls = (timeline.starting_in(api, t0, t1)
                .select("start_ns", "end_ns", "corr_id", "tid", api_base(api).cast(pl.Categorical).alias("api"))
                .sort("start_ns"))
    if calls.height == 0:
        return None
    # (queued work may run long after its launch) each set filtered from the trace at once: the operations
    # that end after t0 were a copy of the rest of the trace (half of ten million rows, every column)
    ends_after = pl.col("end_ns") > t0
    want = [c for c in ("corr_id", "start_ns", "end_ns", "dur_ns", "stream", "kind", "copy_kind", "bytes", "src_kind",
                        "dst_kind", "name", "launch_s") if c in gpu.columns]
    launched = gpu.filter(ends_after & pl.col("launch_s").is_not_null() & (pl.col("launch_s") >= t0)
                          & (pl.col("launch_s") < t1)).select(want)
    if launched.height == 0:
        return None
    # the thread of each operation's call (correlation ids grow with the calls: a binary search)
    tids = calls["tid"].gather(_call_of(calls["corr_id"], launched["corr_id"]))
    by_tid = (pl.DataFrame({"tid": tids, "dur_ns": launched["dur_ns"]}).filter(tids.is_not_null())
                .group_by("tid").agg(pl.col("dur_ns").sum().alias("t")).sort("t", descending=True))
    if by_tid.height == 0:
        return None
    tid = by_tid["tid"][0]
    tot = float(by_tid["t"].sum()) or 1.0
    other = 100.0 * (1.0 - float(by_tid["t"][0]) / tot)
    mine = calls.filter(pl.col("tid") == tid) if "tid" in calls.columns else calls
    ops_df = with_kernel_classes(launched.filter((tids == tid).fill_null(False)).sort("start_ns"))
    if "src_kind" in ops_df.columns:
        ops_df = ops_df.with_columns(
            (pl.col("src_kind").cast(pl.String).str.to_lowercase().str.contains("pageable").fill_null(False)
             | pl.col("dst_kind").cast(pl.String).str.to_lowercase().str.contains("pageable").fill_null(False)).alias("_pg"))
    ops, real, streams = _ops(ops_df)
    del ops_df, launched, calls, by_tid, tids      # (the model's own columns from here: a 93 k-kernel iteration's peak)
    # work launched before the slice that still runs or waits in it: its streams are busy until it ends
    carry: dict[int, float] = {}
    before = gpu.filter(ends_after & pl.col("launch_s").is_not_null() & (pl.col("launch_s") < t0))
    for st, e in before.group_by("stream").agg(pl.col("end_ns").max()).iter_rows():
        carry[streams.setdefault((st, ), len(streams))] = float(e - t0)
    data = timeline.data_ranges(nvtx, t0, t1) if nvtx is not None else None
    mine, ci = _calls(mine, real, iter_starts, t0)
    real = real.with_columns(ci)
    items, ops = _items(mine, ops, real, data)
    items = _mark_blocking(items, ops, real)
    ops, lat, gap, ret = _calibrate(ops, real, mine, {st: int(e) + t0 for st, e in carry.items()})
    items, ops = _in_submission_order(items, ops)
    return (items, ops, carry, lat, gap, ret, _completions(mine, len(iter_starts), t0), max(1, len(iter_starts)), tid,
            other)


def _in_submission_order(items: pl.DataFrame, ops: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The operations renumbered in the order they were submitted (the run reads them so: no sort), the
    operations that items wait for renumbered with them."""
    order = ops["seq"].arg_sort(nulls_last=True)
    if order.equals(pl.int_range(0, ops.height, dtype=order.dtype, eager=True)):
        return items, ops
    new_id = pl.repeat(0, ops.height, dtype=pl.Int64, eager=True).scatter(order, pl.int_range(0, ops.height, dtype=pl.Int64, eager=True))
    w = items["wait"]
    items = items.with_columns(pl.when(w >= 0).then(new_id.gather(w.clip(0))).otherwise(w).alias("wait"))
    return items, ops.gather(order)


def _ops(ops_df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """The operations in start order (their row number their id) as the model's columns, and what was
    measured of each (``real``: start, end, launch time, correlation id, stream id)."""
    def col(name, default, dtype):
        return pl.col(name).cast(dtype).fill_null(default) if name in ops_df.columns else pl.lit(default, dtype)
    keys = ops_df["stream"].unique(maintain_order=True).to_list()
    streams = {(k, ): i for i, k in enumerate(keys)}
    sid = pl.Series("stream", [streams[(k, )] for k in keys], dtype=pl.Int64)
    st = ops_df["stream"]
    idx = st.to_frame().join(pl.DataFrame({"stream": pl.Series(keys, dtype=st.dtype), "sid": sid}), on="stream",
                             how="left", nulls_equal=True, maintain_order="left")["sid"]
    ops = ops_df.select(pl.col("dur_ns").cast(pl.Float64).alias("dur"), idx.alias("stream"),
                        pl.col("kind").cast(pl.String),
                        (pl.col("copy_kind").cast(pl.String) if "copy_kind" in ops_df.columns
                         else pl.lit(None, pl.String)).alias("copy_kind"),
                        col("bytes", 0.0, pl.Float64).alias("bytes"), col("_pg", False, pl.Boolean).alias("pageable"),
                        col("kernel_class", "", pl.String).alias("cls"), col("fused", False, pl.Boolean).alias("fused"),
                        col("simt", False, pl.Boolean).alias("simt"), col("name", "", pl.String).alias("name"),
                        pl.lit(None, pl.Float64).alias("lat"))
    real = ops_df.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"), pl.col("launch_s").alias("ls"),
                         pl.col("corr_id").alias("corr"), idx.alias("stream")).with_row_index("op")
    return ops, real, streams


LAUNCH_APIS = sorted(KERNEL_LAUNCH_APIS | ASYNC_MEM_APIS | SYNC_MEM_APIS)


def _calls(mine: pl.DataFrame, real: pl.DataFrame, iter_starts: list[int], t0: int) -> tuple[pl.DataFrame, pl.Series]:
    """The thread's calls in start order with their iteration, the host's end before each (``ce``), whether
    it is nested in an earlier call, how many operations it launched and when the last of them ended.
    And ``ci``: for each operation (``real``), the row of the call that launched it."""
    marks = pl.Series(iter_starts or [t0], dtype=pl.Int64)
    c = mine.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"), pl.col("corr_id").alias("corr"),
                    pl.col("api").fill_null(""))
    ci = _call_of(c["corr"], real["corr"])
    own = ci.drop_nulls()
    if own.is_unique().all():    # one operation per call (no graph launch): scattered, no hashing
        nops = pl.repeat(0, c.height, dtype=pl.Int64, eager=True).scatter(own, 1)
        oe = pl.repeat(None, c.height, dtype=pl.Int64, eager=True).scatter(own, real["e"].filter(ci.is_not_null()))
    else:
        per = (pl.DataFrame({"ci": ci, "e": real["e"]}).filter(pl.col("ci").is_not_null())
                 .group_by("ci").agg(pl.len().alias("n"), pl.col("e").max()))
        nops = pl.repeat(0, c.height, dtype=pl.Int64, eager=True).scatter(per["ci"], per["n"].cast(pl.Int64))
        oe = pl.repeat(None, c.height, dtype=pl.Int64, eager=True).scatter(per["ci"], per["e"])
    c = c.with_columns(nops.alias("nops"), oe.alias("oe"), pl.col("e").cum_max().shift(1).fill_null(t0).clip(t0).alias("ce"))
    c = c.with_columns((marks.search_sorted(c["s"], side="right").cast(pl.Int64) - 1).clip(0).alias("it"))
    return c.with_columns((pl.col("s") < pl.col("ce")).alias("nested"),
                          pl.col("api").is_in(sorted(SYNC_APIS)).alias("sync"),
                          pl.col("api").is_in(LAUNCH_APIS).alias("lapi")), ci


def _call_of(calls: pl.Series, ops: pl.Series) -> pl.Series:
    """For each operation's correlation id, the row of the call with that id (null: none). The ids of a
    thread's calls usually grow with their start: then a binary search, else a join."""
    if calls.null_count() == 0 and calls.is_sorted() and calls.len():
        at = calls.search_sorted(ops, side="left").cast(pl.Int64).clip(0, calls.len() - 1)
        return pl.select(pl.when(calls.gather(at) == ops).then(at)).to_series().alias("ci")
    rows = pl.DataFrame({"corr": calls, "ci": pl.int_range(0, calls.len(), dtype=pl.Int64, eager=True)})
    return ops.to_frame("corr").join(rows, on="corr", how="left", maintain_order="left")["ci"]


def _items(c: pl.DataFrame, ops: pl.DataFrame, real: pl.DataFrame, data) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The host items of the thread, in time order; calls nested in another call (driver calls under a
    runtime call) give their operations to the outer one. A short query call right after a launch
    (cuKernelGetName, cudaStreamIsCapturing ...: an 'O' call beginning when the previous one ended, under
    50 us) is the launch's own host time: one item, not two (the replay walks fewer)."""
    cand = c.with_row_index("k").filter(
        ~pl.col("nested") & ~pl.col("sync") & ~pl.col("lapi") & (pl.col("nops") == 0) & (pl.col("s") == pl.col("ce"))
        & (pl.col("e") - pl.col("s") < 50_000) & (pl.col("k") > 0))["k"].to_list()
    c = c.with_columns(_merges(c, cand).alias("creates"))
    # one item per creating call and the calls after it up to the next one (nested calls, merged queries):
    # its totals as differences of running sums at the group's first and last call (no hashing)
    first = c.select(pl.arg_where(pl.col("creates"))).to_series()
    cols = ("s", "e", "sync", "lapi", "nops", "api", "it", "ce")
    if first.len() == c.height:      # no nested call, no merged query (the common trace): one item per call
        g = c.select(cols)
        kind = g.select(pl.when(pl.col("sync")).then(pl.lit("S")).when(pl.col("lapi") | (pl.col("nops") > 0))
                        .then(pl.lit("L")).otherwise(pl.lit("O")).cast(KIND)).to_series()
        dur = (g["e"] - g["s"]).cast(pl.Float64)
    else:
        last = pl.concat([first.slice(1) - 1, pl.Series([c.height - 1], dtype=first.dtype)])
        run = c.select(pl.col("sync").cast(pl.Int64).cum_sum().alias("sy"),
                       (pl.col("nops") > 0).cast(pl.Int64).cum_sum().alias("no"),
                       pl.when(pl.col("nested")).then(0).otherwise(pl.col("e") - pl.col("s")).cum_sum().alias("du"))
        g = c.select(cols).gather(first)
        sums = {k: run[k].gather(last) - run[k].gather(first) for k in ("sy", "no", "du")}
        del run
        anysync = g["sync"] | (sums["sy"] > 0)
        launch = g["lapi"] | (g["nops"] > 0) | (sums["no"] > 0)
        kind = pl.select(pl.when(anysync).then(pl.lit("S")).when(launch).then(pl.lit("L")).otherwise(pl.lit("O"))
                         .cast(KIND)).to_series()
        dur = ((g["e"] - g["s"]) + sums["du"]).cast(pl.Float64)
    hasw = g["s"] > g["ce"]
    # items in time order: each creating call's item, after the host work before it (a W item) where there is some
    pos = (pl.int_range(0, first.len(), dtype=pl.Int64, eager=True) + hasw.cast(pl.Int64).cum_sum())
    n = first.len() + int(hasw.sum())
    wk = g.filter(hasw)
    wpos = pos.filter(hasw) - 1
    wdata = wk.with_columns(_data(wk, data))["data"]

    calls_f = pl.DataFrame({"kind": kind, "dur": dur, "data": pl.repeat(False, first.len(), eager=True),
                            "api": g["api"], "iteration": g["it"].cast(pl.Int64), "t": g["s"].cast(pl.Int64)})
    w_f = pl.DataFrame({"kind": pl.repeat("W", wk.height, eager=True), "dur": (wk["s"] - wk["ce"]).cast(pl.Float64),
                        "data": wdata, "api": pl.repeat("", wk.height, eager=True).cast(g["api"].dtype),
                        "iteration": wk["it"].cast(pl.Int64), "t": pl.repeat(0, wk.height, dtype=pl.Int64, eager=True)})
    order = (pl.repeat(0, n, dtype=pl.Int64, eager=True)
               .scatter(pos, pl.int_range(0, first.len(), dtype=pl.Int64, eager=True))
               .scatter(wpos, pl.int_range(first.len(), n, dtype=pl.Int64, eager=True)))
    both = pl.concat([calls_f, w_f.with_columns(pl.col("kind").cast(KIND))], rechunk=False)
    del calls_f, w_f, g, wk
    items = both.gather(order).select(
        "kind", "dur", pl.lit(False).alias("block"), pl.lit(-1, pl.Int64).alias("wait"), pl.lit(None, pl.Float64).alias("ret"),
        "data", "api", "iteration", "t")
    # each operation: the item of the call that launched it, in call order then start order
    gi = (c["creates"].cast(pl.Int64).cum_sum() - 1)
    ci = real["ci"]
    item = pos.gather(gi).gather(ci)
    seq = real.select((pl.col("ci") * (real.height + 1) + pl.col("op").cast(pl.Int64)).rank("ordinal")
                      .cast(pl.Int64) - 1).to_series()
    ops = ops.with_columns(item.alias("item"), seq.alias("seq"))
    return items.cast(ITEM_SCHEMA), ops


def _merges(c: pl.DataFrame, cand: list[int]) -> pl.Series:
    """Which calls make an item: every call not nested in another, but a candidate query call (``cand``)
    joins the item before it when that item is no synchronisation yet and of the same iteration."""
    creates = ~c["nested"]
    if not cand:
        return creates
    top = c.select(pl.when(~pl.col("nested")).then(pl.int_range(pl.len(), dtype=pl.Int64)).forward_fill()
                    .shift(1).alias("p"))["p"]
    syncs = c["sync"].cast(pl.Int64).cum_sum()
    its = c["it"]
    owner: dict[int, int] = {}
    for k in cand:
        p = top[k]
        if p is None:
            continue
        cr = owner.get(p, p)
        # no synchronisation among the item's calls before this one (its kind is L or O), one iteration
        if syncs[k - 1] - (syncs[cr - 1] if cr else 0) == 0 and its[cr] == its[k]:
            owner[k] = cr
    if owner:
        creates = creates.clone().scatter(list(owner), False)
    return creates


def _data(wk: pl.DataFrame, data) -> pl.Expr:
    """Host work (from ``ce`` to ``s``) at least half inside NVTX data ranges (the next four ranges that
    end after it begins)."""
    if data is None or not data.height:
        return pl.lit(False).alias("data")
    rs, re_ = data["s"].cast(pl.Int64), data["e"].cast(pl.Int64)
    n = data.height
    first = re_.search_sorted(wk["ce"], side="right").cast(pl.Int64)
    inside = pl.lit(0, pl.Int64)
    for j in range(4):
        i = (first + j)
        ok = i < n
        ic = i.clip(0, n - 1)
        s2, e2 = rs.gather(ic), re_.gather(ic)
        part = (pl.min_horizontal(pl.lit(e2), pl.col("s")) - pl.max_horizontal(pl.lit(s2), pl.col("ce"))).clip(0)
        inside = inside + pl.when(pl.lit(ok)).then(part).otherwise(0)
    return (inside >= 0.5 * (pl.col("s") - pl.col("ce"))).alias("data")


def per_item(n: int, ops: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
    """Per item (``n`` of them): how many operations it submits, and whether all are kernels (an item
    without any: no)."""
    own = ops["item"].drop_nulls()
    if own.is_sorted():     # (a model built from a trace: operations in submission order) runs, no hashing
        runs = own.rle().struct.unnest()
        nops = pl.repeat(0, n, dtype=pl.Int64, eager=True).scatter(runs["value"], runs["len"].cast(pl.Int64))
    else:
        per = own.value_counts()
        nops = pl.repeat(0, n, dtype=pl.Int64, eager=True).scatter(per["item"], per["count"].cast(pl.Int64))
    other = ops.filter(pl.col("item").is_not_null() & (pl.col("kind") != "kernel"))["item"].unique()
    allk = (nops > 0).scatter(other, False) if other.len() else (nops > 0)
    return nops, allk


def _mark_blocking(items: pl.DataFrame, ops: pl.DataFrame, real: pl.DataFrame) -> pl.DataFrame:
    """A call that ended with its copy waited for it (synchronous copies, pageable ``cudaMemcpyAsync``):
    ``block``, and its own host time is then what such a call costs without waiting (the median kernel
    launch call). A launch (or other call) that took far longer than a launch waited for the GPU (a full
    launch queue, an allocator call that synchronizes): for the operation that ended last before the
    call returned, among those submitted before it. Only the items with operations, and the long ones,
    are looked at; the changes are scattered into the columns."""
    copy = pl.col("kind").is_in(["memcpy", "memset"])
    nops, allk = per_item(items.height, ops)
    launch_durs = items["dur"].filter((items["kind"] == "L") & allk).sort()
    base = float(launch_durs[launch_durs.len() // 2]) if launch_durs.len() else 5_000.0
    # the copies of each item that submitted some (few items): when they began and ended
    per = (ops.select("item", "kind").hstack(real.select("s", "e")).filter(copy & pl.col("item").is_not_null())
              .group_by("item").agg(pl.col("s").min().alias("cs"), pl.col("e").max().alias("ce"))
              .sort("item"))
    per = per.hstack(items.select("kind", "dur", "t").gather(per["item"]))
    call_e = pl.col("t") + pl.col("dur")
    cw = ((pl.col("cs") < call_e) & (call_e >= pl.col("ce") - SYNC_TOL_NS)).fill_null(False)
    per = per.with_columns(cw.alias("cw"))
    thr = max(LONG_CALL_NS, 10 * base)
    waiting = per.filter(pl.col("cw"))["item"]
    longs = (items.with_row_index("k").filter(pl.col("kind").is_in(["L", "O"]) & (pl.col("dur") > thr))
                  .filter(~pl.col("k").is_in(waiting.cast(pl.UInt32).implode())).select("k", "t", "dur"))
    waits = _long_waits(longs, real)
    cb = per.filter((pl.col("kind") == "L") & pl.col("cw"))
    dur, block, wait, ret = (items[c].clone() for c in ("dur", "block", "wait", "ret"))
    s = items.select(pl.arg_where(pl.col("kind") == "S")).to_series()
    dur = dur.scatter(s, dur.gather(s).clip(upper_bound=base)) if s.len() else dur
    if cb.height:
        k = cb["item"]
        dur = dur.scatter(k, cb["dur"].clip(upper_bound=base))
        block = block.scatter(k, True)
        ret = ret.scatter(k, cb.select((call_e - pl.col("ce")).clip(0).cast(pl.Float64)).to_series())
    if waits:
        k = pl.Series(list(waits), dtype=pl.Int64)
        dur = dur.scatter(k, base)
        block = block.scatter(k, True)
        wait = wait.scatter(k, pl.Series(list(waits.values()), dtype=pl.Int64))
    return items.with_columns(dur, block, wait, ret)


def _long_waits(longs: pl.DataFrame, real: pl.DataFrame) -> dict[int, int]:
    """item -> the operation a long call waited for (the last to end before the call returned, of those
    submitted before it): for each long call, the operations that ended while it ran, latest first. The
    calls' ranges of operations found by two binary searches over all calls, their rows gathered at once
    (a few Polars calls, not three a call: 480 a run on the shared healthy case)."""
    if not longs.height:
        return {}
    srt = real.select("op", "e", "ls").sort("e", "op")
    ends = srt["e"]
    starts = longs["t"]
    lo = ends.search_sorted(starts, side="right").cast(pl.Int64)
    hi = ends.search_sorted(starts + longs["dur"] + SYNC_TOL_NS, side="right").cast(pl.Int64)
    runs = pl.DataFrame({"lo": lo, "hi": hi}).filter(pl.col("hi") > pl.col("lo"))
    rows = runs.select(pl.int_ranges("lo", "hi").explode()).to_series()
    ops, ls = srt["op"].gather(rows).to_list(), srt["ls"].gather(rows).to_list()
    out = {}
    pos = 0
    for k, call_s, a, b in zip(longs["k"].to_list(), starts.to_list(), lo.to_list(), hi.to_list()):
        n = max(0, b - a)
        for j in range(pos + n - 1, pos - 1, -1):   # latest end first
            if ls[j] is not None and ls[j] < call_s:
                out[k] = ops[j]
                break
        pos += n
    return out


def _calibrate(ops: pl.DataFrame, real: pl.DataFrame, c: pl.DataFrame,
               carried: dict[int, int]) -> tuple[pl.DataFrame, float, float, float]:
    """Launch latency, stream gap and return latency as this trace shows them (medians; defaults when a
    kind of event is missing); each operation's own launch latency where its stream was idle at the call.
    ``carried``: stream -> end of the work queued on it before the slice."""
    car = pl.DataFrame({"stream": list(carried), "_c": list(carried.values())},
                       schema={"stream": pl.Int64, "_c": pl.Int64})
    r = (real.join(car, on="stream", how="left", maintain_order="left")
             .with_columns(pl.max_horizontal(pl.col("e").cum_max().shift(1).over("stream"), "_c").alias("pe")))
    idle = pl.col("pe").is_null() | (pl.col("pe") < pl.col("ls"))
    has = pl.col("ls").is_not_null()
    r = r.select((has & idle & (pl.col("s") >= pl.col("ls"))).alias("lok"), (pl.col("s") - pl.col("ls")).alias("lat"),
                 (has & ~idle & (pl.col("s") - pl.col("pe")).is_between(0, 5_000) & (pl.col("ls") + 2_000 < pl.col("pe")))
                 .fill_null(False).alias("gok"), (pl.col("s") - pl.col("pe")).alias("gap"))
    r = r.with_columns(pl.col("lok").fill_null(False))
    ops = ops.with_columns(pl.when(r["lok"]).then(r["lat"].cast(pl.Float64)).otherwise(None).alias("lat"))
    ends = real.select(pl.col("e").alias("oe")).sort("oe")
    syncs = c.filter(pl.col("sync")).select("s", "e").sort("e")
    rets = (syncs.join_asof(ends, left_on="e", right_on="oe", strategy="backward")
                 .filter(pl.col("oe").is_not_null() & (pl.col("oe") > pl.col("s")))
                 .select((pl.col("e") - pl.col("oe")).alias("v")))["v"] if syncs.height and ends.height else pl.Series([], dtype=pl.Int64)

    def med(v: pl.Series, d: float) -> float:
        v = v.filter(v >= 0).sort()
        return float(v[v.len() // 2]) if v.len() else d
    return ops, med(r["lat"].filter(r["lok"]), 5_000.0), med(r["gap"].filter(r["gok"]), 1_000.0), med(rets, 5_000.0)


def _completions(c: pl.DataFrame, n_iters: int, t0: int) -> list[float]:
    """When each iteration's work was done, as measured: its last call's end or its operations' end."""
    n = max(1, n_iters)
    per = (c.select(pl.col("it").clip(0, n - 1), pl.max_horizontal("e", "oe").alias("end"))
            .group_by("it").agg(pl.col("end").max()))
    comp = [0.0] * n
    for i, e in per.iter_rows():
        comp[i] = max(0.0, float(e - t0))
    for i in range(1, n):
        comp[i] = max(comp[i], comp[i - 1])
    return comp
