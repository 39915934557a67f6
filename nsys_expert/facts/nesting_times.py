"""Each NVTX range's parent from the time stamps, in columns: what ``phases._parents_from_times``'s
loop gives, for the traces where every thread's ranges nest (push/pop ranges always do).

The loop walks the ranges by start (longest first at one start) with a stack per thread: a range's
parent is the innermost range of its own thread that holds it, or, for a range at the top of its
thread, the shortest range of another thread of the process that holds it. Where each thread's
ranges are laminar (two ranges are disjoint or one holds the other), that is:

- a range's depth is the number of earlier ranges of its thread (in that order) that end after it
  starts: a rank less a binary search over the ends;
- its own parent is the last earlier range of its thread one level up (an as-of join);
- for a top range, on each other thread of its process, the innermost range that holds it (not an
  equal one) is an ancestor of the last range of that thread that started before it: a walk up the
  parents, one column step per level; the shortest wins, the first thread seen on a tie.

Laminarity is checked on the result (every range's parent holds it: with the depths so counted,
that holds only when no two ranges of a thread cross); :func:`parents` returns None where it fails,
the keys would overflow, or the pairs of top ranges and threads would be too many, and the loop
decides. Exactly tied ranges (same thread, start and end) take their row order.
"""
from __future__ import annotations

import polars as pl

MAX_PAIRS = 5_000_000


def parents(t: pl.DataFrame) -> pl.Series | None:
    """``parent_id`` (range ids of ``t``'s ``range_id``) for each row of ``t`` (start_ns, end_ns, range_id
    [, pid, tid]; end >= start), or None where the columns cannot decide (module docstring)."""
    n = t.height
    pid = t["pid"] if "pid" in t.columns else pl.repeat(None, n, dtype=pl.Int64, eager=True)
    tid = t["tid"] if "tid" in t.columns else pl.repeat(None, n, dtype=pl.Int64, eager=True)
    f = pl.DataFrame({"i": pl.int_range(n, eager=True), "pid": pid, "tid": tid, "s": t["start_ns"],
                      "e": t["end_ns"], "rid": t["range_id"]})
    f = f.sort(["s", "e"], descending=[False, True], maintain_order=True).with_row_index("P")
    keys = f.select("pid", "tid").unique(maintain_order=True).with_row_index("th")   # first seen first
    f = f.join(keys, on=["pid", "tid"], how="left", nulls_equal=True, maintain_order="left")
    t0, span = int(f["s"].min()), int(f["e"].max() - f["s"].min()) + 1
    if keys.height * span >= 2 ** 62:
        return None
    f = _depths(f, t0, span)
    own = _own_parents(f)
    if own is None:
        return None
    f = f.with_columns(own.alias("par"))
    top = _top_parents(f, keys)
    if top is None:
        return None
    f = f.join(top, on="P", how="left").with_columns(pl.coalesce("par", "xpar").alias("par"))
    rid = f.select("P", "rid")
    out = f.join(rid.rename({"P": "par", "rid": "parent_id"}), on="par", how="left").sort("i")
    return out["parent_id"].cast(pl.Int64)


def _depths(f: pl.DataFrame, t0: int, span: int) -> pl.DataFrame:
    """depth: the earlier ranges of the thread (in start order) that end after this one starts."""
    base = f["th"].cast(pl.Int64) * span
    f = f.with_columns((base + (f["s"] - t0)).alias("ks"), (base + (f["e"] - t0)).alias("ke"))
    # rank in (thread, order); the ends at or before each start, minus those that are not earlier:
    # zero-length ranges at that very start, which come after it (or after a zero-length one's rank)
    by_th = f.select("P", "th").with_row_index("_k").sort(["th", "P"])
    rank = pl.Series(dtype=pl.UInt32).extend_constant(0, f.height).scatter(
        by_th["_k"], pl.int_range(f.height, eager=True, dtype=pl.UInt32))
    ended = f["ke"].sort().search_sorted(f["ks"], side="right")
    zero = f.filter(pl.col("s") == pl.col("e"))
    zr = zero.select("P", pl.int_range(pl.len()).over("th", "s").alias("zr"), pl.len().over("th", "s").alias("z"))
    f = f.with_columns(rank.cast(pl.Int64).alias("rank"), ended.cast(pl.Int64).alias("ended"))
    f = f.join(zr, on="P", how="left").join(
        zero.group_by("th", "s").agg(pl.len().alias("zs")), on=["th", "s"], how="left")
    later = pl.when(pl.col("s") == pl.col("e")).then(pl.col("z") - pl.col("zr")).otherwise(pl.col("zs").fill_null(0))
    return f.with_columns((pl.col("rank") - pl.col("ended") + later.cast(pl.Int64)).alias("depth")) \
        .drop("zr", "z", "zs", "rank", "ended")


def _own_parents(f: pl.DataFrame) -> pl.Series | None:
    """The last earlier range of the thread one level up; None unless each such parent holds its range."""
    right = f.select("th", pl.col("depth").alias("want"), pl.col("P").alias("par"), pl.col("e").alias("pe"))
    left = f.select("P", "th", (pl.col("depth") - 1).alias("want"), "s", "e", "depth").with_columns(
        pl.col("P").set_sorted())
    j = left.join_asof(right.with_columns(pl.col("par").set_sorted()), left_on="P", right_on="par", by=["th", "want"],
                       strategy="backward", allow_exact_matches=False, check_sortedness=False)
    ok = (j["depth"] == 0) | (j["par"].is_not_null() & (j["pe"] >= j["e"]) & (j["pe"] > j["s"]))
    if not ok.all():
        return None
    return j.select(pl.when(pl.col("depth") > 0).then(pl.col("par"))).to_series()


def _top_parents(f: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame | None:
    """(P, xpar) for the top ranges: the shortest holding range of another thread of the process."""
    top = f.filter(pl.col("depth") == 0).select("P", "pid", "th", "s", "e")
    threads = keys.select(pl.col("th").alias("k"), "pid")
    pairs_n = top.group_by("pid").len().join(threads.group_by("pid").len(), on="pid", nulls_equal=True)
    if top.height == 0 or keys.height < 2:
        return pl.DataFrame(schema={"P": pl.UInt32, "xpar": pl.UInt32})
    if int((pairs_n["len"] * pairs_n["len_right"]).sum()) > MAX_PAIRS:
        return None
    pairs = top.join(threads, on="pid", nulls_equal=True).filter(pl.col("k") != pl.col("th")).sort("P")
    right = f.select(pl.col("th").alias("k"), pl.col("P").alias("c")).with_columns(pl.col("c").set_sorted())
    c = pairs.with_columns(pl.col("P").set_sorted()).join_asof(
        right, left_on="P", right_on="c", by="k", strategy="backward", allow_exact_matches=False,
        check_sortedness=False).select("P", "k", "s", "e", "c")
    info = f.select(pl.col("P").alias("c"), pl.col("s").alias("cs"), pl.col("e").alias("ce"), pl.col("par").alias("up"))
    done = []
    while c.height:
        c = c.filter(pl.col("c").is_not_null()).join(info, on="c", how="left")
        hit = (pl.col("ce") >= pl.col("e")) & (pl.col("ce") > pl.col("s")) & (pl.col("cs") <= pl.col("s")) \
            & ~((pl.col("cs") == pl.col("s")) & (pl.col("ce") == pl.col("e")))
        done.append(c.filter(hit).select("P", "k", "c", (pl.col("ce") - pl.col("cs")).alias("len")))
        c = c.filter(~hit).select("P", "k", "s", "e", pl.col("up").alias("c"))
    found = pl.concat(done) if done else pl.DataFrame(schema={"P": pl.UInt32, "k": pl.UInt32, "c": pl.UInt32,
                                                               "len": pl.Int64})
    return found.sort(["P", "len", "k"]).group_by("P", maintain_order=True).first().select(
        "P", pl.col("c").alias("xpar"))
