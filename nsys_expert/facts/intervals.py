"""Interval algebra on Polars frames with integer ``s`` / ``e`` columns (ns, half-open [s, e)).

Everything here is vectorised (sort + cumulative max + as-of joins), so a million GPU operations
cost one sort, never a Python loop.
"""
from __future__ import annotations

import polars as pl


def merge(df: pl.DataFrame, by: str | None = None, keep_first: list[str] | None = None) -> pl.DataFrame:
    """Union of overlapping intervals -> disjoint, sorted intervals (per ``by`` group if given).

    ``keep_first`` columns are carried from the earliest interval of each merged block (e.g. the
    correlation id of the operation that starts a busy period).
    """
    keep_first = keep_first or []
    if df.height == 0:
        cols = {"s": pl.Int64, "e": pl.Int64, **{k: df.schema.get(k, pl.Int64) for k in keep_first}}
        if by:
            cols[by] = df.schema.get(by, pl.Int64)
        return pl.DataFrame(schema=cols)
    keys = [by] if by else []
    d = df.select(keys + ["s", "e"] + keep_first)
    if by or not d["s"].is_sorted():
        d = d.sort(keys + ["s"])
    if not by:
        # one pass, no hashing: a block starts where s passes the running max of the ends so far,
        # and ends at the running max just before the next block starts
        cm = d["e"].cum_max()
        new = (d["s"] > cm.shift(1)).fill_null(True)
        if new.all() and d["e"].is_sorted():
            # nothing overlaps (one stream's kernels): every row is its own block, and the columns are
            # shared with the input rather than copied (four columns of a ten-million-row trace: 300 MB)
            return pl.DataFrame({"s": d["s"].set_sorted(), "e": d["e"], **{k: d[k] for k in keep_first}})
        last = new.shift(-1).fill_null(True)
        return pl.DataFrame({"s": d["s"].filter(new).set_sorted(), "e": cm.filter(last),
                             **{k: d[k].filter(new) for k in keep_first}})
    prev_max = pl.col("e").cum_max().shift(1).over(by)
    d = d.with_columns(prev_max.alias("_pm"))
    d = d.with_columns(((pl.col("s") > pl.col("_pm")) | pl.col("_pm").is_null()).cum_sum().alias("_g"))
    aggs = [pl.col("s").first(), pl.col("e").max()] + [pl.col(k).first() for k in keep_first]
    return d.group_by(keys + ["_g"], maintain_order=True).agg(aggs).drop("_g")


def flag_sorted(df: pl.DataFrame, col: str) -> pl.DataFrame:
    """``df`` with ``col`` flagged sorted (its Series flagged in place of the column: flagging through an
    expression costs a pass over a million rows)."""
    return pl.DataFrame([df[c].set_sorted() if c == col else df[c] for c in df.columns])


def clip(df: pl.DataFrame, start: int, end: int) -> pl.DataFrame:
    """Keep the parts of intervals inside [start, end)."""
    if df.height and df["s"].flags["SORTED_ASC"] and df["e"].is_sorted():
        # a merged set (starts and ends both sorted): the intervals inside are one slice, found by two
        # binary searches; only its first and last interval can stick out
        i0 = int(df["e"].search_sorted(start, side="right"))
        i1 = int(df["s"].search_sorted(end, side="left"))
        out = df.slice(i0, max(0, i1 - i0))
        if out.height and (out["s"][0] < start or out["e"][-1] > end):
            out = out.with_columns(pl.col("s").clip(lower_bound=start), pl.col("e").clip(upper_bound=end))
        return flag_sorted(out, "s")
    out = (df.filter((pl.col("e") > start) & (pl.col("s") < end))
             .with_columns(pl.col("s").clip(lower_bound=start), pl.col("e").clip(upper_bound=end)))
    if df.height and df["s"].flags["SORTED_ASC"]:   # clipping keeps the order: say so, later steps skip a sort
        out = flag_sorted(out, "s")
    return out


def total(df: pl.DataFrame) -> int:
    if df.height == 0:
        return 0
    return int(df.select((pl.col("e") - pl.col("s")).sum()).item())


def gaps(busy: pl.DataFrame, start: int, end: int, carry: list[str] | None = None) -> pl.DataFrame:
    """Idle intervals of a merged, sorted, clipped busy set inside [start, end).

    Each gap also gets the ``carry`` columns of the busy interval that ends it (``None`` for a
    trailing gap), so a gap knows which operation the GPU was waiting for.
    """
    carry = carry or []
    if busy.height == 0:
        return pl.DataFrame({"s": [start], "e": [end], **{c: [None] for c in carry}},
                            schema={"s": pl.Int64, "e": pl.Int64, **{c: busy.schema.get(c, pl.Int64) for c in carry}})
    b = busy if busy["s"].is_sorted() else busy.sort("s")
    g = b.select(pl.col("e").shift(1, fill_value=start).alias("s"), pl.col("s").alias("e"), *carry)
    last = int(b["e"].max())
    tail = pl.DataFrame({"s": [last], "e": [end], **{c: [None] for c in carry}}, schema=g.schema)
    if (b["s"].flags["SORTED_ASC"] and b["e"].is_sorted() and b["s"][0] >= start and last <= end
            and g.slice(1).select((pl.col("e") > pl.col("s")).all()).item()):
        # a merged, clipped set (merge, clip): the gaps between blocks are never empty; only the
        # first (before the first block) and the trailing one can be
        if b["s"][0] == start:
            g = g.slice(1)
        return pl.concat([g, tail], rechunk=False) if end > last else g
    return pl.concat([g, tail], rechunk=False).filter(pl.col("e") > pl.col("s"))


def common(sets: list[pl.DataFrame], start: int, end: int) -> pl.DataFrame:
    """The times inside every one of the merged, clipped ``sets`` within [start, end): outside the union
    of their complements."""
    outside = pl.concat([gaps(x, start, end).select("s", "e") for x in sets])
    return gaps(merge(outside), start, end).select("s", "e")


def _block_index(starts: pl.Series, t: pl.Series) -> pl.Series:
    """For each time t, the index of the last (sorted, disjoint) interval starting at or before t; -1 if none.
    A binary search per value: no sort of the (possibly million-long) query side."""
    return starts.search_sorted(t, side="right").cast(pl.Int64) - 1


def _last_starting(c: pl.DataFrame, t: pl.Series) -> pl.DataFrame:
    """For each time t, the row of ``c`` (sorted by ``_t``) whose ``_t`` is the last at or before t
    (nulls where none is). Sorted times take one linear as-of merge; others a binary search each."""
    if t.is_sorted():
        return pl.DataFrame({"_t": t.set_sorted()}) \
                 .join_asof(c, on="_t", strategy="backward").drop("_t")
    idx = _block_index(c["_t"], t)
    picked = c.drop("_t")[idx.clip(lower_bound=0)]
    return picked.select(pl.when(idx >= 0).then(pl.col(k)).alias(k) for k in picked.columns)


def _prepared(cover: pl.DataFrame, **cols: pl.Expr) -> pl.DataFrame:
    c = cover if cover["s"].is_sorted() else cover.sort("s")
    return flag_sorted(c.select(pl.col("s").alias("_t"), **cols), "_t")


def prepare(cover: pl.DataFrame) -> pl.DataFrame:
    """A merged, disjoint cover set made ready for :func:`coverage` (one pass; reuse it for several calls
    against a big set, such as a million busy intervals)."""
    length = pl.col("e") - pl.col("s")
    return _prepared(cover, _s=pl.col("s"), _e=pl.col("e"), _b=length.cum_sum() - length)  # _b: covered before it


def coverage(targets: pl.DataFrame, cover: pl.DataFrame, prepared: pl.DataFrame | None = None) -> pl.Series:
    """For each target interval, the ns of it covered by the (merged, disjoint) ``cover`` set
    (``prepared``: the same set already passed through :func:`prepare`)."""
    if targets.height == 0:
        return pl.Series("covered", [], pl.Int64)
    if cover.height == 0:
        return pl.repeat(0, targets.height, dtype=pl.Int64, eager=True).alias("covered")
    touched = _touched(targets, cover)
    if touched is not None:   # a few cover intervals among many targets: only the targets they touch
        zero = pl.repeat(0, targets.height, dtype=pl.Int64, eager=True).alias("covered")
        if touched.len() == 0:
            return zero
        return zero.scatter(touched, _coverage(targets[touched], cover, prepared))
    return _coverage(targets, cover, prepared)


# the targets a small cover set touches are found first when there are at least this many targets,
# and at least SPARSE times as many as cover intervals (and as targets touched)
SPARSE_MIN_TARGETS = 4096
SPARSE = 4


def _touched(targets: pl.DataFrame, cover: pl.DataFrame) -> pl.Series | None:
    """Row numbers of the targets that overlap a cover interval, when the targets are in order (starts
    and ends sorted, as gaps and busy blocks are) and few enough of them are touched; else None. The
    targets one cover interval overlaps are then one run of rows, found by two binary searches. At five
    million gaps against 125 cudaMalloc calls: 0.26 s of as-of merges become a few ms."""
    n = targets.height
    if n < SPARSE_MIN_TARGETS or cover.height * SPARSE > n:
        return None
    ts, te = targets["s"], targets["e"]
    if ts.null_count() or te.null_count() or not (ts.is_sorted() and te.is_sorted()):
        return None
    lo = te.search_sorted(cover["s"], side="right")   # the first target ending after the interval starts
    hi = ts.search_sorted(cover["e"], side="left")    # the first target starting at or after its end
    if int((hi.cast(pl.Int64) - lo.cast(pl.Int64)).clip(lower_bound=0).sum() or 0) * SPARSE > n:
        return None
    return _rows_in_runs(lo, hi).unique(maintain_order=True)   # (a target two intervals touch, once)


def _rows_in_runs(lo: pl.Series, hi: pl.Series) -> pl.Series:
    """The row numbers of the runs [lo, hi) (empty runs give none)."""
    runs = pl.DataFrame({"lo": lo, "hi": hi}).filter(pl.col("hi") > pl.col("lo"))
    return runs.select(pl.int_ranges("lo", "hi", dtype=pl.UInt32).explode()).to_series().drop_nulls()


def _coverage(targets: pl.DataFrame, cover: pl.DataFrame, prepared: pl.DataFrame | None) -> pl.Series:
    c = prepared if prepared is not None else prepare(cover)

    def covered_before(t: pl.Series) -> pl.Series:
        m = _last_starting(c, t)
        return m.select((pl.col("_b") + pl.min_horizontal(t, pl.col("_e")) - pl.col("_s")).fill_null(0)).to_series()

    return (covered_before(targets["e"]) - covered_before(targets["s"])).alias("covered")


SMALL_COVER = 8


def containing(points: pl.Series, cover: pl.DataFrame, tolerance: int = 0) -> pl.Series:
    """For each time point, whether it lies in one of the merged ``cover`` intervals (± tolerance)."""
    if points.len() == 0:
        return pl.Series("inside", [], pl.Boolean)
    if cover.height == 0:
        return pl.repeat(False, points.len(), dtype=pl.Boolean, eager=True).alias("inside")
    if cover.height <= SMALL_COVER:   # a few intervals (one long sync call): a range test each
        p = pl.DataFrame({"p": points})
        tests = [pl.col("p").is_between(s - tolerance, e + tolerance) for s, e in cover.select("s", "e").iter_rows()]
        return p.select(pl.any_horizontal(tests).alias("inside")).to_series()
    n = points.len()
    if n >= SPARSE_MIN_TARGETS and cover.height * SPARSE <= n and not points.null_count() and points.is_sorted():
        # sorted points (gap starts) and a few intervals: the points inside one interval are one run
        inside = _rows_in_runs(points.search_sorted(cover["s"] - tolerance, side="left"),
                               points.search_sorted(cover["e"] + tolerance, side="right"))
        return pl.repeat(False, n, dtype=pl.Boolean, eager=True).alias("inside").scatter(inside, True)
    c = _prepared(cover, _e=pl.col("e"))
    ends = _last_starting(c, points + tolerance)["_e"]
    return (ends + tolerance >= points).fill_null(False).alias("inside")
