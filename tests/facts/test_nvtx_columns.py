"""The NVTX work in columns gives what the code it replaced gave (issue 47, autograd-NVTX profiles):
range parents from times (nesting_times against phases' loop), nesting levels (rank and binary
search against the sorted sweep), per-name time in nvtx (codes and sums against a merge per name),
range-name groups once per distinct name, and the phase table matched by Polars (against re)."""
from __future__ import annotations

import random

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsys_expert.facts import intervals, nesting_times, phases
from nsys_expert.facts.nvtx import _per_name
from nsys_expert.facts.window import group_expr, group_names
from nsys_expert.load.sqlite import tables as sqlite_tables


def _laminar(rnd: random.Random, m: int, t0: int) -> list[tuple[int, int]]:
    """Random push/pop ranges of one thread: nested or disjoint, with zero-length and touching ones."""
    out: list[tuple[int, int]] = []

    def rec(s, e, depth):
        x = s
        while x < e and len(out) < m:
            a = x + rnd.choice([0, 0, 1, 2, 5])
            if a > e:
                return
            b = min(e, a + rnd.choice([0, 0, 1, 3, 10, 40]))
            out.append((a, b))
            if depth < 4 and b > a:
                rec(a, b, depth + 1)
            x = b + rnd.choice([0, 0, 1, 3])
    rec(t0, t0 + 200, 0)
    return out


def _trace(seed: int, crossing: bool) -> pl.DataFrame:
    rnd = random.Random(seed)
    rows = []
    for pid in rnd.sample([1, 2], rnd.randint(1, 2)):
        for tid in rnd.sample([10, 11, 12], rnd.randint(1, 3)):
            for a, b in _laminar(rnd, rnd.randint(1, 25), rnd.choice([0, 5, 50])):
                rows.append((pid, tid, a, b))
                if rnd.random() < 0.05:
                    rows.append((pid, tid, a, b))   # an exact duplicate
    if crossing:
        a = rnd.randint(0, 150)
        rows.append((rows[0][0], rows[0][1], a, a + rnd.randint(1, 60)))
    rnd.shuffle(rows)
    t = pl.DataFrame(rows, schema={"pid": pl.Int64, "tid": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64},
                     orient="row")
    return t.with_row_index("range_id", offset=1).with_columns(pl.col("range_id").cast(pl.Int64))


def _loop(t: pl.DataFrame, monkeypatch) -> pl.Series:
    monkeypatch.setattr(phases, "VECTOR_NESTING_FROM", 10 ** 12)
    return phases._parents_from_times(t)["parent_id"]


@pytest.mark.slow   # 150 examples: 3.2 s in the fast set on the shared 2-core machine (issue 56, item 14)
@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10 ** 9), crossing=st.booleans())
def test_parents_in_columns_are_the_loops(seed, crossing):
    t = _trace(seed, crossing)
    with pytest.MonkeyPatch.context() as mp:
        want = _loop(t, mp)
    got = nesting_times.parents(t)
    if got is None:   # only where two ranges of a thread cross
        assert crossing
        return
    assert got.to_list() == want.to_list()


def test_parents_in_columns_are_used_and_fall_back(monkeypatch):
    t = _trace(7, crossing=False)
    monkeypatch.setattr(phases, "VECTOR_NESTING_FROM", 1)
    called = []
    real = nesting_times.parents
    monkeypatch.setattr(nesting_times, "parents", lambda f: called.append(1) or real(f))
    got = phases._parents_from_times(t)["parent_id"]
    assert called and got.null_count() < t.height
    crossed = pl.DataFrame({"start_ns": [0, 5], "end_ns": [10, 20], "range_id": [1, 2], "pid": [1, 1], "tid": [1, 1]})
    assert nesting_times.parents(crossed) is None
    assert phases._parents_from_times(crossed)["parent_id"].to_list() == [None, None]


def _old_levels(n: pl.DataFrame) -> pl.Series:
    pp = n.filter((pl.col("event") == sqlite_tables.NVTX_PUSHPOP) & pl.col("end_ns").is_not_null()
                  & (pl.col("end_ns") >= pl.col("start_ns")))
    starts = pp.select("range_id", "gtid", pl.col("start_ns").alias("t"), pl.lit(1).alias("order"),
                       (-pl.col("end_ns")).alias("tie"), pl.lit(1).alias("step"))
    ends = pp.select("range_id", "gtid", pl.col("end_ns").alias("t"),
                     pl.when(pl.col("end_ns") == pl.col("start_ns")).then(2).otherwise(0).alias("order"),
                     pl.lit(0, pl.Int64).alias("tie"), pl.lit(-1).alias("step"))
    ev = pl.concat([starts, ends]).sort(["gtid", "t", "order", "tie"], maintain_order=True)
    ev = ev.with_columns(pl.col("step").cum_sum().over("gtid").alias("depth")).filter(pl.col("step") == 1)
    lv = ev.select("range_id", (pl.col("depth") - 1).cast(pl.Int64).alias("level"))
    return n.join(lv, on="range_id", how="left", maintain_order="left")["level"]


@pytest.mark.slow   # 150 examples: 1.4 s in the fast set on the shared 2-core machine (issue 56, item 14)
@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 30), st.sampled_from([0, 0, 1, 2, 5, 10, 20, None]),
                               st.sampled_from([59, 59, 59, 60]), st.sampled_from([1, 2, None])), min_size=1, max_size=40))
def test_levels_by_rank_are_the_sweeps(rows):
    n = pl.DataFrame([(s, None if d is None else s + d, ev, g) for s, d, ev, g in rows],
                     schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "event": pl.Int64, "gtid": pl.Int64}, orient="row")
    n = n.sort("start_ns", maintain_order=True).with_row_index("range_id", offset=1).with_columns(
        pl.col("range_id").cast(pl.Int64))
    want = _old_levels(n)
    assert sqlite_tables._level_column(n).to_list() == want.to_list()
    pp = n.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_r"), "gtid", "start_ns", "end_ns", "event").filter(
        (pl.col("event") == 59) & pl.col("end_ns").is_not_null())
    assert sqlite_tables._level_sweep(n, pp).to_list() == want.to_list()


@pytest.mark.slow   # 150 examples: 1.3 s in the fast set on the shared 2-core machine (issue 56, item 14)
@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 100), st.integers(0, 30)), min_size=1, max_size=60),
       start=st.integers(0, 50), end=st.integers(50, 140))
def test_nvtx_time_per_name_is_the_merge(rows, start, end):
    n = pl.DataFrame([(a, s, s + d) for a, s, d in rows], schema=["name", "start_ns", "end_ns"], orient="row")
    n = n.filter((pl.col("end_ns") > start) & (pl.col("start_ns") < end))
    if n.height == 0:
        return
    iv = intervals.clip(intervals.merge(n.select("name", pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")),
                                        by="name"), start, end)
    want = (iv.group_by("name").agg((pl.col("e") - pl.col("s")).sum().alias("t"))
              .join(n.group_by("name").agg(pl.len().alias("count")), on="name", how="left")
              .sort(["t", "name"], descending=[True, False]))
    assert _per_name(n, start, end).rows() == want.rows()


def test_group_names_once_per_name_are_the_regexs():
    rnd = random.Random(3)
    parts = ["step 3", "ProfilerStep#12", "", "12", "a_7\n", "aten::mm, seq = 4", "::x"]
    names = [rnd.choice(parts) + str(rnd.randint(0, 50)) if rnd.random() < 0.9 else None for _ in range(20_000)]
    df = pl.DataFrame({"name": names}, schema={"name": pl.String})
    got = df.select(group_names(pl.col("name")))["name"]
    assert got.to_list() == df.select(group_expr(pl.col("name")))["name"].to_list()
    assert got.null_count() > 0 and "ProfilerStep" in got.to_list()


def test_classify_all_is_classify():
    rnd = random.Random(4)
    words = ("data load loader forward fwd backward bwd optimizer step train eval ckpt save log nccl allreduce "
             "ddp ProfilerStep aten mm seq grad epoch val metrics : :: # _ - . 12 , = prefill get_batch "
             "optimizer.step DataLoader FORWARD Val_Step \u0130 \u212a \u017f \n \x1f").split(" ") + [" "]
    names = sorted({"".join(rnd.choice(words) for _ in range(rnd.randint(1, 6))) for _ in range(5000)})
    table = phases.builtin_table()
    want = [phases.classify(n, table) for n in names]
    assert phases.classify_all(names, table) == want
    assert sum(w is not None for w in want) > 100
    # a pack's pattern Polars would read otherwise (a look-ahead): every name through re
    odd = phases.merged_table([{"phase": "data", "re": "load(?!er)"}])
    assert phases.classify_all(names, odd) == [phases.classify(n, odd) for n in names]
