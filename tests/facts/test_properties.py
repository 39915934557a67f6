"""Property-based tests (hypothesis) over the interval algebra, the loaders + facts, and rule packs.

Case counts (max_examples) add up to more than 10,000 generated cases per run; `pytest -q
tests/facts/test_properties.py` prints them in its summary (see `test_case_budget`).

Past ~400 lines on purpose: the property tests share one example budget (``BUDGET``, checked by
``test_case_budget``), which a split would have to share across modules.
"""
from __future__ import annotations

import csv
import os
import tempfile

import polars as pl
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nsys_expert import engine, facts, load
from nsys_expert.errors import InputError, RuleError
from nsys_expert.facts import intervals
from nsys_expert.facts import registry, timeline

# every property test runs hundreds to thousands of generated cases (4-40 s each): the full suite
# runs them, the fast development command (README) leaves them out
pytestmark = pytest.mark.slow

BUDGET = {"merge": 3500, "gaps": 2500, "coverage": 2000, "containing": 1500, "pipeline": 300,
          "garbage": 300, "damaged_numbers": 300, "csv_cut": 300, "console_cut": 300, "rules": 800, "sorted_queries": 1000, "clip": 1000, "launch_lookup": 800, "iteration_of": 500,
          "blank_scan": 500, "disjoint_merge": 500, "by_start": 800}
def FAST(n):
    return settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                    derandomize=True, max_examples=n, database=None)

ivs = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 500)), max_size=60).map(
    lambda xs: pl.DataFrame({"s": [a for a, _ in xs], "e": [a + d for a, d in xs]},
                            schema={"s": pl.Int64, "e": pl.Int64}))


def naive_union(df):
    pts = sorted(zip(df["s"].to_list(), df["e"].to_list()))
    out = []
    for a, b in pts:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


@FAST(BUDGET["merge"])
@given(ivs)
def test_merge_is_the_union(df):
    m = intervals.merge(df)
    got = list(zip(m["s"].to_list(), m["e"].to_list()))
    assert got == [tuple(x) for x in naive_union(df)]
    assert intervals.total(m) == sum(b - a for a, b in naive_union(df))


# sorted intervals with a gap (>= 1 ns) before each: the union is the rows themselves, which merge
# returns without copying (issue 19); zero-length intervals included
disjoint = st.lists(st.tuples(st.integers(1, 300), st.integers(0, 300)), max_size=60).map(
    lambda xs: [(sum(g + d for g, d in xs[:i]) + g, sum(g + d for g, d in xs[:i]) + g + d) for i, (g, d) in enumerate(xs)])


@FAST(BUDGET["disjoint_merge"])
@given(disjoint)
def test_merge_of_disjoint_intervals_keeps_every_row_and_its_columns(pairs):
    df = pl.DataFrame({"s": [a for a, _ in pairs], "e": [b for _, b in pairs], "corr_id": list(range(len(pairs)))},
                      schema={"s": pl.Int64, "e": pl.Int64, "corr_id": pl.Int64})
    m = intervals.merge(df, keep_first=["corr_id"])
    assert list(zip(m["s"].to_list(), m["e"].to_list())) == [tuple(x) for x in naive_union(df)]
    if df.height:
        assert m["corr_id"].to_list() == df["corr_id"].to_list() and m["s"].flags["SORTED_ASC"]


@FAST(BUDGET["gaps"])
@given(ivs, st.integers(0, 5000), st.integers(1, 12_000))
def test_gaps_complement_busy(df, start, length):
    end = start + length
    busy = intervals.clip(intervals.merge(df), start, end)
    g = intervals.gaps(busy, start, end)
    assert intervals.total(busy) + intervals.total(g) == end - start
    assert (g["e"] > g["s"]).all() and (g["s"] >= start).all() and (g["e"] <= end).all()


@FAST(BUDGET["coverage"])
@given(ivs, ivs)
def test_coverage_matches_brute_force(targets, cover):
    c = intervals.merge(cover)
    got = intervals.coverage(targets, c).to_list()
    cells = {t for a, b in naive_union(cover) for t in range(a, b)}
    want = [sum(1 for t in range(a, b) if t in cells) for a, b in zip(targets["s"].to_list(), targets["e"].to_list())]
    assert got == want


@FAST(BUDGET["coverage"])
@given(disjoint, ivs)
def test_coverage_of_ordered_targets_by_a_small_cover_matches_brute_force(pairs, cover):
    """Gaps or busy blocks (in order) against a few intervals: only the targets the cover touches are
    measured (intervals._touched); the rest are 0."""
    targets = pl.DataFrame({"s": [a for a, _ in pairs], "e": [b for _, b in pairs]}, schema={"s": pl.Int64, "e": pl.Int64})
    c = intervals.merge(cover)
    old = intervals.SPARSE_MIN_TARGETS
    intervals.SPARSE_MIN_TARGETS = 0
    try:
        got = intervals.coverage(targets, c).to_list()
    finally:
        intervals.SPARSE_MIN_TARGETS = old
    cells = {t for a, b in naive_union(cover) for t in range(a, b)}
    assert got == [sum(1 for t in range(a, b) if t in cells) for a, b in pairs]


@FAST(BUDGET["containing"])
@given(ivs, st.lists(st.integers(0, 11_000), max_size=30), st.integers(0, 50))
def test_containing_matches_brute_force(cover, points, tol):
    c = intervals.merge(cover)
    got = intervals.containing(pl.Series(points, dtype=pl.Int64), c, tol).to_list()
    want = [any(a <= p + tol and p <= b + tol for a, b in naive_union(cover)) for p in points]
    assert got == want


@FAST(BUDGET["containing"])
@given(ivs, st.lists(st.integers(0, 11_000), max_size=30), st.integers(0, 50))
def test_containing_of_sorted_points_matches_brute_force(cover, points, tol):
    """Gap starts (sorted) against a few intervals: each interval's points are found as one run."""
    points = sorted(points)
    c = intervals.merge(cover)
    old = intervals.SPARSE_MIN_TARGETS
    intervals.SPARSE_MIN_TARGETS = 0
    try:
        got = intervals.containing(pl.Series(points, dtype=pl.Int64), c, tol).to_list()
    finally:
        intervals.SPARSE_MIN_TARGETS = old
    assert got == [any(a <= p + tol and p <= b + tol for a, b in naive_union(cover)) for p in points]


# starts: mostly in order with a few late rows, or shuffled, or appended runs; ties are common
starts = st.one_of(
    st.lists(st.integers(0, 40), max_size=80),
    st.lists(st.integers(0, 40), max_size=80).map(sorted).flatmap(
        lambda xs: st.lists(st.integers(-5, 45), max_size=4).map(lambda late: xs[: len(xs) // 2] + late + xs[len(xs) // 2:])),
    st.tuples(st.lists(st.integers(0, 40), max_size=40).map(sorted), st.lists(st.integers(0, 40), max_size=40).map(sorted))
      .map(lambda ab: ab[0] + ab[1]))


@FAST(BUDGET["by_start"])
@given(starts, st.integers(1, 4), st.sampled_from([1, 100]), st.sampled_from([1, 4096]))
def test_by_start_is_the_stable_sort(xs, pieces, late_share, max_runs):
    """chunks.by_start (a few late rows placed by binary search, runs copied as slices, pieces joined)
    gives the rows of a stable sort by start, in one chunk per column."""
    from nsys_expert.load import chunks
    df = pl.DataFrame({"start_ns": xs, "row": list(range(len(xs)))}, schema={"start_ns": pl.Int64, "row": pl.Int64})
    step = max(1, len(xs) // pieces)
    parts = [df.slice(i, step) for i in range(0, len(xs), step)] or [df]
    old = chunks.LATE_SHARE, chunks.MAX_RUNS, chunks.MIN_ROWS
    chunks.LATE_SHARE, chunks.MAX_RUNS, chunks.MIN_ROWS = late_share, max_runs, 0
    try:
        got = chunks.by_start(pl.concat(parts, rechunk=False))
    finally:
        chunks.LATE_SHARE, chunks.MAX_RUNS, chunks.MIN_ROWS = old
    assert got.equals(df.sort("start_ns", maintain_order=True))
    assert all(c.n_chunks() == 1 for c in got.get_columns()) or got.height == 0


# ---- loaders + facts on generated cuda_gpu_trace CSVs (exact 2025 header of the real fixtures) ----
HEADER = ("Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),"
          "Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name")
NAMES = ["void gemm_kernel<float>(T1)", "\"void at::native::elementwise_kernel<(int)4, f>(int, T2)\"",
         "[CUDA memcpy Host-to-Device]", "[CUDA memcpy Device-to-Host]", "[CUDA memset]",
         "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", "\"k<a|b><script>alert(1)</script>\""]
op = st.tuples(st.integers(0, 2_000_000), st.integers(0, 50_000), st.integers(0, 6), st.integers(0, 1),
               st.integers(1, 3), st.sampled_from(["Pageable", "Pinned", ""]))


def trace_csv(ops) -> str:
    """A trace of these ops. A CUDA stream runs its work in order, so ops of one stream never overlap
    in a real trace (a trace where they do is damaged and its timeline is left out: load/sanity.py):
    each generated op gets a stream of its own, and ops still overlap across streams."""
    rows = [HEADER]
    for i, (s, d, n, dev, strm, kind) in enumerate(ops):
        name = NAMES[n]
        is_copy = name.startswith("[CUDA memcpy")
        rows.append(",".join([str(s), str(d), str(i + 1), "", "", "", "", "", "", "", "", "",
                              "1.000" if is_copy else "", "", kind if is_copy else "", "Device" if is_copy else "",
                              f"NVIDIA H200 ({dev})", "1", "", str(strm * 1000 + i), name]))
    return "\n".join(rows) + "\n"


RULES = [r for p in engine.load_packs() for r in p.rules]


def diagnose_dir(d):
    prof = load.load_paths([d])
    fs = facts.compute(prof)
    ev = engine.evaluate(engine.RuleSet.of(RULES), fs, set(prof.tables))
    return prof, fs, ev


@FAST(BUDGET["pipeline"])
@given(st.lists(op, min_size=1, max_size=40), st.randoms(use_true_random=False))
def test_pipeline_invariants(ops, rnd):
    with tempfile.TemporaryDirectory() as d:
        text = trace_csv(ops)
        open(os.path.join(d, "p_cuda_gpu_trace.csv"), "w").write(text)
        prof, fs, ev = diagnose_dir(d)
        w = fs.window
        trace = prof.tables["gpu_trace"]
        if "gpu_active_pct" in fs.run:
            assert 0.0 <= fs.run["gpu_active_pct"] <= 100.0
        if w.start_ns is not None and trace.height:
            assert w.start_ns >= int(trace["start_ns"].min()) and w.end_ns <= int(trace["end_ns"].max())
        ids = {r.id for r in RULES}
        # every rule is evaluated, not evaluated, or waits for an opt-in collection (GPU metrics)
        assert set(ev.evaluated) | {n["rule"] for n in ev.not_evaluated} | set(ev.not_collected) == ids
        assert not set(ev.evaluated) & {n["rule"] for n in ev.not_evaluated}
        assert not (set(ev.evaluated) | {n["rule"] for n in ev.not_evaluated}) & set(ev.not_collected)
        # the same rows in another order give the same facts
        lines = text.splitlines()
        body = lines[1:]
        rnd.shuffle(body)
        open(os.path.join(d, "p_cuda_gpu_trace.csv"), "w").write("\n".join([lines[0]] + body) + "\n")
        _, fs2, _ = diagnose_dir(d)
        assert fs2.run == fs.run


garbage_cell = st.one_of(st.text(max_size=8), st.sampled_from(["nan", "-1", "1e400", "None", "n/a", "", "\"", "9" * 30]))


@FAST(BUDGET["garbage"])
@given(st.lists(st.lists(garbage_cell, min_size=0, max_size=23), min_size=0, max_size=12))
def test_garbage_rows_never_crash(rows):
    with tempfile.TemporaryDirectory() as d:
        body = "\n".join(",".join(c.replace("\n", " ").replace("\r", " ") for c in r) for r in rows)
        open(os.path.join(d, "p_cuda_gpu_trace.csv"), "w", encoding="utf-8", errors="replace").write(HEADER + "\n" + body + "\n")
        try:
            prof, fs, ev = diagnose_dir(d)
        except InputError:
            return
        if "gpu_active_pct" in fs.run:
            assert 0.0 <= fs.run["gpu_active_pct"] <= 100.0


# ---- the CSV and console readers on damaged numbers and cut files (issue 18) ----
def _read_trace(d, text):
    path = os.path.join(d, "p_cuda_gpu_trace.csv")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    prof = load.load_files([path])
    return prof.tables.get("gpu_trace"), prof.warnings


def _pairs(frame):
    return sorted(zip(frame["start_ns"].to_list(), frame["dur_ns"].to_list()))


def _damage(value: int, how: str) -> str:
    if how == "thousands":
        return f'"{value:,}"'
    if how == "scientific":          # exact: as many digits as the number has
        return f"{value:.{max(len(str(value)) - 1, 1)}e}"
    if how == "spaces":
        return f"  {value} "
    return str(value)


@FAST(BUDGET["damaged_numbers"])
@given(st.lists(op, min_size=1, max_size=25),
       st.lists(st.sampled_from(["plain", "thousands", "scientific", "spaces"]), min_size=2, max_size=50))
def test_damaged_numbers_read_as_the_numbers_they_mean(ops, hows):
    """Thousands separators, scientific notation and padding in Start / Duration: the same times as
    the clean trace, and a warning whenever separators or scientific notation were met."""
    clean = trace_csv(ops)
    lines = clean.splitlines()
    out, used = [lines[0]], set()
    for i, ln in enumerate(lines[1:]):
        start, dur, rest = ln.split(",", 2)
        a, b = hows[(2 * i) % len(hows)], hows[(2 * i + 1) % len(hows)]
        used |= {h for h, v in ((a, int(start)), (b, int(dur))) if h != "thousands" or v >= 1000}
        out.append(",".join([_damage(int(start), a), _damage(int(dur), b), rest]))
    with tempfile.TemporaryDirectory() as d:
        want, _ = _read_trace(d, clean)
        got, warnings = _read_trace(d, "\n".join(out) + "\n")
    assert _pairs(got) == _pairs(want)
    if "thousands" in used:
        assert any("thousands separators" in str(w) for w in warnings), warnings
    if "scientific" in used:
        assert any("scientific notation" in str(w) for w in warnings), warnings


@FAST(BUDGET["csv_cut"])
@given(st.lists(op, min_size=1, max_size=25), st.floats(0, 1), st.booleans())
def test_a_cut_trace_never_invents_a_row(ops, where, newline):
    """A trace cut anywhere (then perhaps ended with a newline): every row read is a row of the whole
    trace with its true times, no complete row before the cut is lost, and a row cut before its last
    cell is said."""
    whole = trace_csv(ops)
    header_end = whole.index("\n") + 1
    cut = header_end + int(where * (len(whole) - header_end))
    text = whole[:cut] + ("\n" if newline else "")
    complete = whole[:cut].count("\n") - 1                     # body rows whole before the cut
    partial = whole[:cut].split("\n")[-1]
    with tempfile.TemporaryDirectory() as d:
        full, _ = _read_trace(d, whole)
        try:
            got, warnings = _read_trace(d, text)
        except InputError:
            return
    rows = whole.splitlines()[1:]
    expected = sorted(zip((int(r.split(",")[0]) for r in rows), (int(r.split(",")[1]) for r in rows)))
    pairs = _pairs(got) if got is not None else []
    assert len(pairs) in (complete, complete + 1)
    left = list(expected)
    for p in pairs:                                             # a sub-multiset of the true rows
        assert p in left, (p, partial)
        left.remove(p)
    n_cells = len(next(csv.reader([partial]))) if partial else 0
    if partial and n_cells < 21:                                # cut before the Name cell
        assert any("cut" in str(w) or "middle of a row" in str(w) for w in warnings), (partial, warnings)


CONSOLE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sync_bound_console", "input", "stats_column.txt")


@FAST(BUDGET["console_cut"])
@given(st.floats(0, 1), st.booleans())
def test_a_cut_console_capture_never_misreads_a_number(where, newline):
    """nsys stats console text cut anywhere: each summary row read carries the numbers the whole file
    has for that kernel or call (a count cut from 400 to 4 is never read as 4)."""
    from nsys_expert.load import console

    whole = open(CONSOLE, encoding="utf-8").read()
    true = console.read_console(CONSOLE)
    cut = int(where * len(whole))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stats_column.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(whole[:cut] + ("\n" if newline else ""))
        try:
            part = console.read_console(path)
        except InputError:
            return
    if part is None:
        return
    for table, frame in part.tables.items():
        if not table.endswith("_sum") or frame.height == 0:
            continue
        ref = {r["name"]: r for r in true.tables[table].iter_rows(named=True)}
        for r in frame.iter_rows(named=True):
            match = [v for n, v in ref.items() if n.startswith(r["name"]) or r["name"].startswith(n[:len(r["name"])])]
            assert match, r["name"]
            assert any(r["count"] == m["count"] and r["total_ns"] == m["total_ns"] for m in match), (r, match)


# ---- rule-pack fuzzing: generated rules (valid and invalid) never crash the validator or engine ----
FACTS = registry.all_names("run")[:40]
leaf = st.fixed_dictionaries({"fact": st.sampled_from(FACTS + ["nope", "id"]),
                              "op": st.sampled_from(["lt", "lte", "gt", "gte", "eq", "neq", "in", "exists", "bogus",
                                                     "contains", "matches"]),
                              "value": st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10**20),
                                                 st.text(max_size=6), st.just("$p"), st.just("$q"),
                                                 st.lists(st.integers(0, 9), max_size=3),
                                                 st.just({"fact": "gpu_active_pct", "times": 0.5}))})
cond = st.recursive(leaf, lambda c: st.one_of(st.fixed_dictionaries({"all": st.lists(c, min_size=1, max_size=3)}),
                                              st.fixed_dictionaries({"any": st.lists(c, min_size=1, max_size=3)}),
                                              st.fixed_dictionaries({"not": c})), max_leaves=6)
rule = st.fixed_dictionaries({
    "id": st.sampled_from(["fuzz-rule", "Bad Id", "fuzz-2"]),
    "title": st.text(max_size=10),
    "category": st.sampled_from(["utilization", "launch-bound", "BAD CAT"]),
    "severity": st.sampled_from(["info", "low", "medium", "high", "critical", "urgent"]),
    "params": st.just({"p": {"default": 10.0}}),
    "when": cond,
    "message": st.sampled_from(["ok {{ gpu_active_pct }}", "{{ broken", "{% for %}", "x"]),
}, optional={"estimate": st.fixed_dictionaries({"expr": st.sampled_from(["gpu_active_pct * 2", "1/0", "((", "p"])})})
run_facts = st.dictionaries(st.sampled_from(FACTS), st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                                             st.integers(-10**20, 10**20), st.text(max_size=5)),
                            max_size=12)


@FAST(BUDGET["rules"])
@given(rule, run_facts)
def test_generated_rules_never_crash(data, fvals):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "fuzz-rule.yaml")
        open(path, "w").write(yaml.safe_dump(data, allow_unicode=True))
        try:
            r = engine.rules.load_rule_file(path, "fuzz")
        except RuleError:
            return
        fs = facts.FactSet(run=dict(fvals))
        try:
            ev = engine.evaluate(engine.RuleSet.of([r]), fs, set(registry.INPUTS))
        except RuleError:
            return  # e.g. 'not' around a string operator: refused with a message
        for f in ev.findings:
            assert isinstance(f["message"], str)
            assert f["estimated_gain_pct"] is None or 0 <= f["estimated_gain_pct"] <= 100


# The fast paths (speed work, see benchmarks/) against plain definitions: sorted queries take an
# as-of merge, few cover intervals a range test each, merged sets a slice, correlation ids a table.
@FAST(BUDGET["sorted_queries"])
@given(ivs, ivs, st.integers(0, 50))
def test_sorted_queries_match_brute_force(targets, cover, tol):
    c = intervals.merge(cover)
    t = targets.sort("s", "e")
    cells = {x for a, b in naive_union(cover) for x in range(a, b)}
    want = [sum(1 for x in range(a, b) if x in cells) for a, b in zip(t["s"].to_list(), t["e"].to_list())]
    assert intervals.coverage(t, c).to_list() == want
    assert intervals.coverage(t, c, intervals.prepare(c)).to_list() == want
    pts = t["s"]
    inside = [any(a <= p + tol and p <= b + tol for a, b in naive_union(cover)) for p in pts.to_list()]
    assert intervals.containing(pts, c, tol).to_list() == inside


@FAST(BUDGET["clip"])
@given(ivs, st.integers(-100, 10_600), st.integers(0, 11_000), st.booleans())
def test_clip_matches_brute_force(df, start, length, merged):
    end = start + length
    src = intervals.merge(df) if merged else df
    got = intervals.clip(src, start, end)
    want = [(max(a, start), min(b, end)) for a, b in zip(src["s"].to_list(), src["e"].to_list()) if b > start and a < end]
    assert list(zip(got["s"].to_list(), got["e"].to_list())) == want
    if merged:
        g = intervals.gaps(got, start, end) if length else None
        if g is not None:
            assert intervals.total(got) + intervals.total(g) == end - start


ids = st.one_of(st.none(), st.integers(-3, 40), st.sampled_from([10**6, 3 * 10**9]))


@FAST(BUDGET["launch_lookup"])
@given(st.lists(ids, min_size=1, max_size=60), st.lists(ids, min_size=1, max_size=40), st.booleans(), st.booleans())
def test_launch_lookup_matches_the_join(api_ids, gpu_ids, sparse, ordered):
    if ordered:   # a GPU trace in start order has its ids in order: the one-pass merge without a sort
        gpu_ids = sorted(i for i in gpu_ids if i is not None) or [1]
    api = pl.DataFrame({"corr_id": api_ids, "start_ns": range(len(api_ids)), "end_ns": range(5, 5 + len(api_ids))},
                       schema={"corr_id": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64})
    gpu = pl.DataFrame({"corr_id": gpu_ids, "start_ns": [0] * len(gpu_ids)}, schema={"corr_id": pl.Int64, "start_ns": pl.Int64})
    if api["corr_id"].null_count() == api.height or gpu["corr_id"].null_count() == gpu.height:
        return
    calls = (api.select("corr_id", pl.col("start_ns").alias("launch_s"), pl.col("end_ns").alias("launch_e"))
                .drop_nulls("corr_id").unique("corr_id", keep="first", maintain_order=True))
    want = gpu.join(calls, on="corr_id", how="left", maintain_order="left")
    old = timeline.LOOKUP_MAX_SLOTS
    timeline.LOOKUP_MAX_SLOTS = 4 if sparse else old    # sparse: the binary-search path
    try:
        got = timeline.with_launch_times(gpu, api)
    finally:
        timeline.LOOKUP_MAX_SLOTS = old
    assert got.equals(want)


@FAST(BUDGET["iteration_of"])
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=20, unique=True),
       st.lists(st.one_of(st.none(), st.integers(-10, 1100)), max_size=50), st.booleans())
def test_iteration_of_matches_brute_force(starts, times, sort):
    starts = sorted(starts)
    if sort:
        times = sorted(t for t in times if t is not None)
    got = timeline.iteration_of(pl.Series(times, dtype=pl.Int64), pl.Series(starts, dtype=pl.Int64)).to_list()
    want = [None if t is None else max((i for i, s in enumerate(starts) if s <= t), default=-1) for t in times]
    assert got == want


@FAST(BUDGET["blank_scan"])
@given(st.binary(max_size=60).map(lambda b: bytes(b"ab,\n\r \t"[x % 7] for x in b)), st.integers(0, 3),
       st.integers(1, 9))
def test_blank_line_scan_in_chunks_matches_the_whole_buffer(data, header_line, chunk):
    """A CSV report is checked for more reports after a blank line in chunks (no memory map)."""
    import io

    from nsys_expert.load import csv_reports
    old = csv_reports.SCAN_CHUNK
    csv_reports.SCAN_CHUNK = chunk
    try:
        got = csv_reports._more_after_blank_in(io.BytesIO(data), header_line)
    finally:
        csv_reports.SCAN_CHUNK = old
    start = csv_reports._line_offset(data, header_line)
    plain = any((k := data.find(sep, start)) >= 0 and any(c not in b" \t\r\n\f\v" for c in data[k:])
                for sep in (b"\n\n", b"\n\r\n"))
    assert got == plain == csv_reports._more_after_blank(data, start)


def test_case_budget():
    total = sum(BUDGET.values())
    print(f"\nproperty suite: {total:,} generated cases ({', '.join(f'{k} {v}' for k, v in BUDGET.items())})")
    assert total >= 10_000
