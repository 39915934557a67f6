"""The run of a dependency model (``depmodel.Model``) and its critical path, column by column (issue 47).

The model is the event-by-event run of docs/gains.md: host items one after the other, each operation when
its call began plus the launch latency and its stream is free (plus the stream gap), a blocking item
until the work it waits on is done. Python walked it item by item (14 s on a 93 k-kernel decode
iteration); here the same run is computed in columns:

- Between two items that may block, the host's time is the sum of its items' durations plus a delay
  ``delta`` that only a blocking item raises (each segment of items between two of them shares one).
- On a stream, in submission order, end_i = max(ready_i, end_{i-1} + gap) + dur_i unrolls to
  end_i = P_i + max(free, max_{j <= i} (Q_j + delta_j)) with P_i = D_i + i * gap and
  Q_j = ready0_j - D_{j-1} - j * gap (D the stream's running sum of durations, ready0 the ready time
  without the delay): a running maximum over the stream.
- Only the blocking items are walked in Python, each in O(streams), to find the delays; then every
  operation's end, its predecessor on the critical path and each iteration's completion are columns.
- The critical path is walked back run by run (a run of items between two bound items, a run of
  operations queued back to back), not item by item.

The same arithmetic as the event-by-event run, in another order: the results agree to the last
rounding of a sum (tests/facts/test_replay_columns.py checks them against the event-by-event reference).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import polars as pl

NEG = float("-inf")


@dataclass
class Run:
    total: float            # ns from the slice start to the end of the last host item or operation
    host_ns: float          # on the critical path: the host's own time (work, CUDA calls)
    gpu_ns: float           # on the critical path: operations and the gaps between them
    latency_ns: float       # on the critical path: launch and return latencies
    iter_host: list[float]  # host time at each iteration's first item
    comp: list[float]       # when each iteration's work was done (host or GPU)

    @property
    def period(self) -> float:
        """Completion to completion over the replayed iterations (the work carried in cancels out)."""
        return self.comp[-1] - self.comp[0] if len(self.comp) >= 2 else self.total


def _item_columns(items: pl.DataFrame, ops: pl.DataFrame) -> pl.DataFrame:
    """Per item: host time after it without delays (``si``), whether it may block (``pb``), its segment
    (the blocking items before it)."""
    lb = items.select(pl.arg_where((pl.col("kind") == "L") & pl.col("block") & (pl.col("wait") < 0))).to_series()
    may = ((pl.col("kind") == "L") & pl.col("block") & (pl.col("wait") >= 0)) \
        | ((pl.col("kind") == "O") & (pl.col("wait") >= 0)) | (pl.col("kind") == "S")
    ic = items.select(pl.col("dur").cum_sum().alias("si"), may.alias("pb"), "kind")
    if lb.len():   # a blocking launch without a known wait blocks when it launched something
        pb = ic["pb"].scatter(lb, lb.cast(pl.Int64).is_in(ops["item"].drop_nulls().implode()))
        ic = ic.with_columns(pb)
    return ic.with_columns((pl.col("pb").cast(pl.Int64).cum_sum() - pl.col("pb").cast(pl.Int64)).alias("seg"))


def _op_columns(m, ic: pl.DataFrame) -> pl.DataFrame:
    """The simulated operations (those of launch items) in submission order, with P, Q and their segment."""
    sim = m.ops.with_row_index("op").filter(pl.col("item").is_not_null())
    sim = sim.filter(ic["kind"].gather(sim["item"]) == "L")
    if not (sim["seq"].is_sorted() and sim["item"].is_sorted()):   # (a model built from a trace is in order)
        sim = sim.sort("item", "seq")
    sx = (ic["si"] - m.items["dur"]).gather(sim["item"])
    g = m.gap
    one = sim["stream"].n_unique() <= 1      # one stream (a decode loop): running sums without windows

    def by(e: pl.Expr, *keys: str) -> pl.Expr:
        keys = keys[1:] if one else keys
        return e.over(*keys) if keys else e
    free = (pl.col("stream").replace_strict({int(k): float(v) for k, v in m.carry.items()}, default=0.0,
                                            return_dtype=pl.Float64) if m.carry else pl.lit(0.0)).alias("free")
    return (sim.select(pl.col("op").cast(pl.Int64), "item", "dur", "stream",
                       pl.col("lat").fill_null(m.latency).alias("lat"))
               .with_columns((sx + pl.col("lat")).alias("r0"), ic["seg"].gather(sim["item"]).alias("seg"),
                             pl.int_range(pl.len(), dtype=pl.Int64).alias("pos"),
                             by(pl.int_range(pl.len(), dtype=pl.Int64), "stream").alias("idx"),
                             by(pl.col("dur").cum_sum(), "stream").alias("D"), free)
               .with_columns((pl.col("D") + pl.col("idx") * g).alias("P"),
                             (pl.col("r0") - (pl.col("D") - pl.col("dur")) - pl.col("idx") * g).alias("Q"))
               .with_columns(by(pl.col("Q").cum_max(), "stream", "seg").alias("cq")))


def _blocking(m, ic: pl.DataFrame, oc: pl.DataFrame):
    """What the walk over the blocking items reads: each segment's streams (in the order their last
    operation was submitted: max Q, P and id of the last operation, carried-in end), the blocking items
    (row, kind, wait, ret, host time after them without delays, segment), the operations of blocking
    launches, and (stream, segment, P, cq) of every operation a blocking item may wait for."""
    segs = (oc.group_by("seg", "stream").agg(pl.col("Q").max().alias("mq"), pl.col("P").last().alias("pl"),
                                             pl.col("op").last().alias("lo"), pl.col("pos").last().alias("lp"),
                                             pl.col("free").first().alias("f"))
              .sort("seg", "lp"))
    by_seg: dict[int, list] = {}
    for row in segs.iter_rows():
        by_seg.setdefault(row[0], []).append(row[1:])
    at = ic.select(pl.arg_where(pl.col("pb"))).to_series().cast(pl.Int64)
    bk = pl.concat([at.alias("k").to_frame(), m.items.select("kind", "wait", "ret").gather(at),
                    ic.select("si", "seg").gather(at)], how="horizontal")
    own: dict[int, list[int]] = {}
    if bk.height:
        for k, o in (oc.filter(pl.col("item").is_in(bk.filter(pl.col("kind") == "L")["k"].cast(pl.Int64).implode()))
                       .select("item", "op").iter_rows()):
            own.setdefault(k, []).append(o)
    opx = {}
    want = set(bk.filter(pl.col("wait") >= 0)["wait"].to_list()) | {o for v in own.values() for o in v}
    if want:
        for o, st, sg, p, cq in oc.filter(pl.col("op").is_in(sorted(want))).select("op", "stream", "seg", "P",
                                                                                     "cq").iter_rows():
            opx[o] = (st, sg, p, cq)
    return by_seg, bk, own, opx


def _delays(m, ic: pl.DataFrame, oc: pl.DataFrame):
    """Walk the items that may block, in order: -> (delay of each segment, bound op of each bound item,
    done, done_op at the end). O(streams) per blocking item."""
    by_seg, bk, own, opx = _blocking(m, ic, oc)
    R: dict[int, float] = {}
    rstart: dict[tuple[int, int], float] = {}
    deltas = [0.0]
    done = max(m.carry.values(), default=0.0)
    done_op = -1
    bind: dict[int, int] = {}

    def end_of(o: int) -> float:
        x = opx.get(o)
        if x is None:
            return 0.0               # not simulated (an operation of a call that is not a launch)
        st, sg, p, cq = x
        return p + max(rstart[(st, sg)], deltas[sg] + cq)

    def run_segment(t: int) -> None:
        nonlocal done, done_op
        d = deltas[t]
        for st, mq, p_last, last_op, _lp, f in by_seg.get(t, ()):
            r = R.get(st, f)
            rstart[(st, t)] = r
            r = max(r, d + mq)
            R[st] = r
            e = p_last + r
            if e > done:
                done, done_op = e, last_op
    for k, kind, wait, ret, si, t in bk.select("k", "kind", "wait", "ret", "si", "seg").iter_rows():
        run_segment(t)
        host = si + deltas[t]
        w, x = -1, NEG
        if kind == "L":
            w = wait if wait >= 0 else max(own[k], key=end_of)
            x = end_of(w) + (m.ret if ret is None else ret)
        elif kind == "O":
            w, x = wait, end_of(wait) + m.ret
        elif done_op >= 0:
            w, x = done_op, done + m.ret
        if x > host:
            bind[k] = w
            deltas.append(x - si)
        else:
            deltas.append(deltas[t])
    run_segment(len(deltas) - 1)
    return deltas, bind, done, done_op


EVENTS_BELOW = 6_000   # items + operations: below this a model is run event by event (depevents; measured crossover 6-7 k)


def simulate(m) -> Run:
    if m.items.height + m.ops.height < EVENTS_BELOW:
        from . import depevents
        return depevents.run(m, Run)
    return run_columns(m)


def run_columns(m) -> Run:
    items, n = m.items, m.items.height
    ic = _item_columns(items, m.ops)
    oc = _op_columns(m, ic)
    deltas, bind, done, done_op = _delays(m, ic, oc)
    dl = pl.Series("d", deltas, dtype=pl.Float64)
    oc = (oc.with_columns(dl.gather(oc["seg"]).alias("dd"))
            .with_columns((pl.col("P") + pl.max_horizontal("free", (pl.col("Q") + pl.col("dd")).cum_max().over("stream")))
                          .alias("e"), (pl.col("r0") + pl.col("dd")).alias("r"))
            .with_columns(pl.col("e").shift(1).over("stream").alias("pe"))
            .with_columns(pl.when(pl.col("pe").is_null()).then(pl.col("free")).otherwise(pl.col("pe") + m.gap).alias("sf"))
            .with_columns((pl.col("sf") > pl.col("r")).alias("by_op")))
    its = items["iteration"]
    if its.is_sorted():
        # the host is done with an iteration at its last item (host time only grows): the iterations'
        # first and last items, not every item
        edge = items.select(pl.arg_where(pl.col("iteration") != pl.col("iteration").shift(-1).fill_null(-1)))
        last = edge.to_series().cast(pl.Int64)
        firsts = pl.concat([pl.Series([0], dtype=pl.Int64), last.head(-1) + 1]) if n else last
    else:
        last = firsts = pl.int_range(0, n, dtype=pl.Int64, eager=True)
    host_after = ic["si"].gather(last) + dl.gather(ic["seg"].gather(last) + ic["pb"].gather(last).cast(pl.Int64))
    host = float(host_after[-1]) if n else 0.0
    total = max(host, done)
    comps = _completions(its, last, oc, host_after)
    iter_host = _iter_host(items, ic, dl, firsts)
    h, g, lat = _walk(m, ic, oc, bind, host, done, done_op)
    return Run(total, h, g, lat, iter_host, comps)


def _completions(its: pl.Series, at: pl.Series, oc: pl.DataFrame, host_after: pl.Series) -> list[float]:
    """When each iteration's work was done (its host or its operations, whichever later), running max."""
    if not its.len():
        return []
    hosts = pl.DataFrame({"i": its.gather(at), "h": host_after}).group_by("i").agg(pl.col("h").max())
    gpu = pl.DataFrame({"i": its.gather(oc["item"]), "e": oc["e"]}).group_by("i").agg(pl.col("e").max())
    c = (hosts.join(gpu, on="i", how="left").sort("i")
              .select(pl.max_horizontal("h", pl.col("e").fill_null(NEG)).cum_max()))
    return c.to_series().to_list()


def _iter_host(items: pl.DataFrame, ic: pl.DataFrame, dl: pl.Series, at: pl.Series) -> list[float]:
    """Host time at each iteration's first item (where the iteration changes)."""
    its = items["iteration"].gather(at)
    first = (its != its.shift(1)).fill_null(True)
    at = at.filter(first)
    return (ic["si"].gather(at) - items["dur"].gather(at) + dl.gather(ic["seg"].gather(at))).to_list()


def _walk(m, ic: pl.DataFrame, oc: pl.DataFrame, bind: dict[int, int], host: float, done: float,
          done_op: int) -> tuple[float, float, float]:
    """The critical path walked back from the end, run by run: -> (host, GPU, latency) ns on it. The path
    reaches operations only at the end and where a blocking item waited: those, and their runs' heads,
    are looked up once."""
    n = m.items.height
    bound = sorted(bind)
    si = ic["si"].gather(bound).to_list() if bound else []
    rets = m.items["ret"].gather(bound).to_list() if bound else []
    last_si = float(ic["si"][n - 1]) if n else 0.0
    ops = _runs(oc, set(bind.values()) | {done_op})
    h = g = lat = 0.0
    cur = ("op", done_op) if done > host and done_op >= 0 else ("item", n - 1)
    guard = 0
    while cur is not None and guard < 4 * (len(bound) + 2) + 10:
        guard += 1
        kind, i = cur
        if kind == "item":
            if i < 0:
                break
            j = bisect.bisect_right(bound, i) - 1
            at = last_si if i == n - 1 else None
            if at is None:
                at = float(ic["si"][i])
            if j < 0:
                h += at
                break
            h += at - si[j]
            lat += m.ret if rets[j] is None else rets[j]
            cur = ("op", bind[bound[j]])
            continue
        row = ops.get(i)
        if row is None:           # an operation the run never launched: its own time, then nothing
            g += float(m.ops["dur"][i])
            break
        head, d_i, idx_i = row[:3]
        _h, d_h, idx_h, dur_h, item_h, lat_h, none_h = ops[head]
        g += d_i - d_h + dur_h + (idx_i - idx_h) * m.gap
        if none_h:                # the stream was busy with work carried into the slice
            break
        lat += lat_h
        cur = ("item", item_h - 1)
    return h, g, lat


def _runs(oc: pl.DataFrame, want: set[int]) -> dict[int, tuple]:
    """For the operations in ``want`` and the first operation of their runs (operations queued back to
    back on a stream, each waiting for the one before it): op -> (head, D, idx, dur, item, lat, whether
    the head waited for work carried into the slice)."""
    pred_op = pl.col("by_op") & pl.col("pe").is_not_null()
    runs = oc.with_columns(pl.when(~pred_op).then(pl.col("op")).forward_fill().over("stream").alias("head"))
    cols = ("op", "head", "D", "idx", "dur", "item", "lat", (pl.col("by_op") & pl.col("pe").is_null()).alias("none"))
    rows = runs.filter(pl.col("op").is_in(sorted(want))).select(cols)
    heads = runs.filter(pl.col("op").is_in(rows["head"].implode())).select(cols)
    return {r[0]: r[1:] for r in pl.concat([rows, heads]).iter_rows()}
