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
        last = new.shift(-1).fill_null(True)
        out = pl.DataFrame({"s": d["s"].filter(new), "e": cm.filter(last),
                            **{k: d[k].filter(new) for k in keep_first}})
        return out.with_columns(pl.col("s").set_sorted())
    prev_max = pl.col("e").cum_max().shift(1).over(by)
    d = d.with_columns(prev_max.alias("_pm"))
    d = d.with_columns(((pl.col("s") > pl.col("_pm")) | pl.col("_pm").is_null()).cum_sum().alias("_g"))
    aggs = [pl.col("s").first(), pl.col("e").max()] + [pl.col(k).first() for k in keep_first]
    return d.group_by(keys + ["_g"], maintain_order=True).agg(aggs).drop("_g")


def clip(df: pl.DataFrame, start: int, end: int) -> pl.DataFrame:
    """Keep the parts of intervals inside [start, end)."""
    return (df.filter((pl.col("e") > start) & (pl.col("s") < end))
              .with_columns(pl.col("s").clip(lower_bound=start), pl.col("e").clip(upper_bound=end)))


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
    b = busy.sort("s")
    g = b.select(pl.col("e").shift(1).fill_null(start).alias("s"), pl.col("s").alias("e"), *carry)
    tail = pl.DataFrame({"s": [int(b["e"].max())], "e": [end], **{c: [None] for c in carry}},
                        schema=g.schema)
    out = pl.concat([g, tail]).filter(pl.col("e") > pl.col("s"))
    return out


def _block_index(starts: pl.Series, t: pl.Series) -> pl.Series:
    """For each time t, the index of the last (sorted, disjoint) interval starting at or before t; -1 if none.
    A binary search per value: no sort of the (possibly million-long) query side."""
    return starts.search_sorted(t, side="right").cast(pl.Int64) - 1


def coverage(targets: pl.DataFrame, cover: pl.DataFrame) -> pl.Series:
    """For each target interval, the ns of it covered by the (merged, disjoint) ``cover`` set."""
    if targets.height == 0:
        return pl.Series("covered", [], pl.Int64)
    if cover.height == 0:
        return pl.repeat(0, targets.height, dtype=pl.Int64, eager=True).alias("covered")
    c = cover.sort("s")
    cs, ce = c["s"], c["e"]
    before = ((ce - cs).cum_sum() - (ce - cs)).alias("before")   # covered time before each interval

    def covered_before(t: pl.Series) -> pl.Series:
        idx = _block_index(cs, t)
        gi = idx.clip(lower_bound=0)
        df = pl.DataFrame({"t": t, "ok": idx >= 0, "s": cs.gather(gi), "e": ce.gather(gi), "b": before.gather(gi)})
        return df.select(pl.when(pl.col("ok")).then(pl.col("b") + pl.min_horizontal("t", "e") - pl.col("s"))
                         .otherwise(0)).to_series()

    return (covered_before(targets["e"]) - covered_before(targets["s"])).alias("covered")


def containing(points: pl.Series, cover: pl.DataFrame, tolerance: int = 0) -> pl.Series:
    """For each time point, whether it lies in one of the merged ``cover`` intervals (± tolerance)."""
    if points.len() == 0:
        return pl.Series("inside", [], pl.Boolean)
    if cover.height == 0:
        return pl.repeat(False, points.len(), dtype=pl.Boolean, eager=True).alias("inside")
    c = cover.sort("s")
    idx = _block_index(c["s"], points + tolerance)
    ends = c["e"].gather(idx.clip(lower_bound=0))
    return ((idx >= 0) & (ends + tolerance >= points)).alias("inside")
