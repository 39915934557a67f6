"""NVTX phases as evidence: what each named range of a step is (data, forward, backward, optimizer,
communication, evaluation, checkpoint, logging), how the ranges nest, and what their time says.

The phase of a range comes from its name through the table in ``phases.yaml`` (beside this module),
which a rule pack overrides or extends with a ``phases:`` list in its ``pack.yaml``
(``Options.phases``). The numbers come from the richest NVTX input: the trace
(``nvtx_pushpop_trace``: nesting from each range's parent; a trace without parent ids, as an nsys
SQLite export's, a CSV trace whose ranges are all at the top of their thread, or a torch.profiler
trace's user annotations: nesting from their times, the innermost range of the same thread around
each, or for the top range of a thread the shortest range of another thread of the process around it,
numbered instances such as ``ProfilerStep#12`` as one name), else the summaries (``nvtx_sum``,
``nvtx_pushpop_sum``; levels from ``nvtx_gpu_proj_sum`` when it is there). Without a trace the
nesting is inferred from totals and counts: a range C is taken as nested in a step range P (the
iteration range, or a range named like a step) when P's total is at least C's, P's longest instance
at least C's longest, C has at least as many instances as P (each step holds one or more), and the
children given to P add up to no more than P's total; one instance each is enough.

Facts (tier ``summary`` when they rest on the summaries):
- ``data_phase_share_of_step_pct``: the data ranges nested in a step as a share of the step's time
  (single-instance ranges included), with ``data_phase_name`` / ``data_phase_parent``;
- ``gpu_idle_data_phase_est_pct``: with the GPU summaries, the share of that step's time in which the
  GPU must be idle while the host loads: (data time - all the GPU's work) / step time;
- ``gpu_idle_data_phase_pct``: a GPU trace and an NVTX summary but no NVTX trace: the window's idle
  time that must fall inside data ranges, a lower bound by inclusion-exclusion: the data time inside
  the window is at least its total minus the span outside the window (and one instance, for a range
  that straddles the start), and of that at least (data + idle - window) is idle.
The report's phase table is ``tables["phases"]``.
"""
from __future__ import annotations

import pathlib
import re
from functools import lru_cache

import polars as pl

from . import nesting_times
from .api_oneoff import gpu_work_tables
from .base import Context, pct
from .names import LIBRARY_DOMAINS
from .window import OPERATOR_RANGE, group_expr, iteration_from_summary, per_distinct
from .declare import fact, group

MAX_ROWS = 12
# operator ranges of PyTorch's emit_nvtx are not phases (but a user's plain "forward" / "backward" is)
OPERATOR_NAME = r"(?i)^(aten|autograd|torch|c10d|prim|cudnn|cublas)::|op_id\s*=|(^|, )seq\s*="


@lru_cache(maxsize=1)
def builtin_table() -> tuple[dict, ...]:
    """The built-in phase table (phases.yaml): ({phase, cause, re, doc}, ...) in match order."""
    import yaml

    data = yaml.safe_load(pathlib.Path(__file__).with_name("phases.yaml").read_text(encoding="utf-8"))
    return tuple(dict(p) for p in data["phases"])


def merged_table(overrides: list[dict] | tuple = ()) -> tuple[dict, ...]:
    """A pack's ``phases:`` entries first (an entry with a built-in phase's name replaces it), then the
    built-in entries that no pack entry replaced."""
    over = [dict(p) for p in overrides or ()]
    names = {p["phase"] for p in over}
    return tuple(over + [p for p in builtin_table() if p["phase"] not in names])


def classify(name: str, table: tuple[dict, ...]) -> dict | None:
    """The first table entry whose pattern matches the range name (its domain prefix removed)."""
    bare = _bare(name)
    for p in table:
        if re.search(p["re"], bare, re.IGNORECASE):
            return p
    return None


# patterns that Rust's regex (Polars) reads as Python's re does on printable ASCII text: literals, groups
# without flags, alternation, classes without nesting or set operations, * + ? and a few escapes
_PLAIN_PATTERN = re.compile(r"(?:[A-Za-z0-9_ |()^$*+?.\-]|\[(?![\]\[]|\^\])|\](?!\])|\\[.\-sdwbSDW])*")
_PRINTABLE_ASCII = r"^[\x20-\x7e]*$"


def classify_all(names: list[str], table: tuple[dict, ...]) -> list[dict | None]:
    """:func:`classify` of each of many names at once: the same entries, in the names' order. With plain patterns (the built-in
    table), the names of printable ASCII are matched by Polars, one pass per pattern (an autograd-NVTX
    profile's 5,000 operator names: 0.12 s in Python's re); the others, and every name when a pack's
    pattern is not plain, by :func:`classify`."""
    names = [str(n) for n in names]
    if len(names) < 64 or not all(_PLAIN_PATTERN.fullmatch(p["re"]) and "(?" not in p["re"] and "--" not in p["re"]
                                  and "&&" not in p["re"] and "~~" not in p["re"] for p in table):
        return [classify(n, table) for n in names]
    bare = pl.Series("b", [_bare(n) for n in names], dtype=pl.String)
    f = bare.to_frame().select(pl.col("b").str.contains(_PRINTABLE_ASCII).alias("ok"),
                               *[pl.col("b").str.contains("(?i)" + p["re"]).alias(f"p{k}") for k, p in enumerate(table)])
    first = f.select(pl.coalesce([pl.when(pl.col(f"p{k}")).then(pl.lit(k)) for k in range(len(table))]).alias("k"))["k"]
    return [(table[k] if k is not None else None) if ok else classify(n, table)
            for n, ok, k in zip(names, f["ok"].to_list(), first.to_list())]


def _bare(name: str) -> str:
    s = name.lstrip(":")
    return s.split(":", 1)[1] if ":" in s and not s.startswith(("cub::", "thrust::")) and s.index(":") < 24 else s


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    table = merged_table(getattr(ctx, "phases", ()) or ())
    per, source, nesting = _per_name(prof)
    if per is None or per.height == 0:
        return
    per = per.filter(~pl.any_horizontal([pl.col("name").str.starts_with(d) for d in LIBRARY_DOMAINS]))
    per = per.filter(~pl.col("name").str.contains(OPERATOR_NAME))
    if per.height == 0:
        return
    rows = per.sort(["total_ns", "name"], descending=[True, False]).to_dicts()
    for r in rows:
        p = classify(r["name"], table)
        r["phase"], r["cause"] = (p["phase"], p.get("cause")) if p else (None, None)
    tier = None if nesting == "trace" else "summary"
    if nesting != "trace":
        _infer_parents(rows, prof)
    by_name = {r["name"]: r for r in rows}
    for r in rows:
        par = by_name.get(r.get("parent") or "")
        r["share_of_parent_pct"] = pct(r["total_ns"], par["total_ns"]) if par else None
    src = prof.source_name(source)
    fs.tables["phases"] = {
        "source": src, "nesting": nesting,
        "rows": [{"name": r["name"], "phase": r["phase"], "count": int(r["count"]), "total_ms": r["total_ns"] / 1e6,
                  "median_ms": (r["med_ns"] / 1e6) if r.get("med_ns") is not None else None,
                  "parent": r.get("parent"), "share_of_parent_pct": r["share_of_parent_pct"]}
                 for r in rows[:MAX_ROWS]]}
    _data_share(fs, prof, rows, by_name, src, tier)
    _idle_in_data(fs, prof, win, rows, src)


# ranges nested from their times by a pass in Python (0.16 s per 200,000): past this many, the summaries'
# inference (each range's nesting is then "inferred from totals")
MAX_TIMED_RANGES = 500_000
VECTOR_NESTING_FROM = 2_000   # ranges: below, the loop is quicker than the columns' fixed cost


def _per_name(prof) -> tuple[pl.DataFrame | None, str | None, str | None]:
    """One row per range name (name, count, total_ns, med_ns, max_ns[, parent, level]), its table, and
    how the nesting is known: ``trace`` (each range's parent) or ``inferred``."""
    tr = prof.tables.get("nvtx_trace")
    if tr is not None and tr.height and {"name", "start_ns", "end_ns"} <= set(tr.columns):
        t = tr.filter(pl.col("end_ns").is_not_null() & (pl.col("end_ns") >= pl.col("start_ns")))
        t = t.with_columns(_strip(pl.col("name")).alias("name"), (pl.col("end_ns") - pl.col("start_ns")).alias("d"))
        if {"range_id", "parent_id"} <= set(t.columns) and t["parent_id"].null_count() < t.height:
            return _trace_rows(t), "nvtx_trace", "trace"
        if t.height > MAX_TIMED_RANGES:   # (PyTorch's emit_nvtx: a range per operator) the user's ranges only
            t = t.filter(per_distinct(pl.col("name"), _user_range, pl.Boolean))
        if 0 < t.height <= MAX_TIMED_RANGES:
            # no parent ids (an nsys SQLite export; a CSV trace whose ranges are all at the top of their
            # thread; torch.profiler's user annotations): the nesting from the times, which the trace has
            return _trace_rows(_parents_from_times(t)), "nvtx_trace", "trace"
    for table in ("nvtx_sum", "nvtx_pushpop_sum"):
        df = prof.tables.get(table)
        if df is not None and df.height and {"name", "count", "total_ns"} <= set(df.columns):
            cols = [pl.col("name").str.strip_chars_start(":").alias("name"), "count", "total_ns",
                    (pl.col("med_ns") if "med_ns" in df.columns else pl.lit(None, pl.Float64)).alias("med_ns"),
                    (pl.col("max_ns") if "max_ns" in df.columns else pl.lit(None, pl.Int64)).alias("max_ns")]
            out = df.select(cols).group_by("name").agg(pl.col("count").sum(), pl.col("total_ns").sum(),
                                                        pl.col("med_ns").first(), pl.col("max_ns").max())
            return out, table, "inferred"
    df = prof.tables.get("nvtx_gpu_proj_sum")
    if df is not None and df.height and "total_range_ns" in df.columns:
        out = df.select(pl.col("name").str.strip_chars_start(":").alias("name"), "count",
                        pl.col("total_range_ns").alias("total_ns"), pl.lit(None, pl.Float64).alias("med_ns"),
                        pl.lit(None, pl.Int64).alias("max_ns"))
        return out, "nvtx_gpu_proj_sum", "inferred"
    return None, None, None


def _strip(name: pl.Expr) -> pl.Expr:
    """A trace's range name as the table shows it: without the empty domain, numbered instances as one
    (``ProfilerStep#12`` -> ``ProfilerStep``, as the iteration range is named); once per distinct name."""
    return per_distinct(name, lambda n: group_expr(n.str.strip_chars_start(":")), pl.String)


def _user_range(name: pl.Expr) -> pl.Expr:
    """Neither a library's range nor a PyTorch operator's."""
    return ~pl.any_horizontal([name.str.starts_with(d) for d in LIBRARY_DOMAINS]) & ~name.str.contains(OPERATOR_NAME)


def _trace_rows(t: pl.DataFrame) -> pl.DataFrame:
    """One row per range name from trace rows (name, d, range_id, parent_id[, pid]): count, total,
    median and longest instance, and the parent most of its instances lie in (never itself)."""
    agg = t.group_by("name").agg(pl.len().alias("count"), pl.col("d").sum().alias("total_ns"),
                                 pl.col("d").median().alias("med_ns"), pl.col("d").max().alias("max_ns"))
    on = ["parent_id"] + (["pid"] if "pid" in t.columns else [])
    ids = t.select(pl.col("range_id").alias("parent_id"), *(["pid"] if "pid" in t.columns else []),
                   pl.col("name").alias("parent"))
    par = (t.select("name", *on).join(ids, on=on, how="left")
            .filter(pl.col("parent").is_not_null() & (pl.col("parent") != pl.col("name")))
            .group_by("name", "parent").agg(pl.len().alias("n"))
            .sort(["name", "n", "parent"], descending=[False, True, False])
            .group_by("name", maintain_order=True).first().select("name", "parent"))
    return agg.join(par, on="name", how="left")


def _parents_from_times(t: pl.DataFrame) -> pl.DataFrame:
    """Each range's parent from the time stamps: the innermost range of its own thread that holds it;
    for a range at the top of its thread, the shortest range of another thread of the same process
    that holds it (PyTorch runs the backward pass, and DDP's all-reduces, on the autograd engine's
    thread while the main thread waits inside its step). -> t with range_id and parent_id.

    Past a few thousand ranges, in columns where every thread's ranges nest (``nesting_times``: the
    same parents; 560 k autograd-NVTX ranges of one thread: 0.16 s instead of 0.80 s), else this loop."""
    t = t.with_row_index("range_id", offset=1).with_columns(pl.col("range_id").cast(pl.Int64)) \
        if "range_id" not in t.columns else t
    if t.height >= VECTOR_NESTING_FROM:
        par = nesting_times.parents(t)
        if par is not None:
            return t.with_columns(par.alias("parent_id"))
    pid = t["pid"].to_list() if "pid" in t.columns else [None] * t.height
    tid = t["tid"].to_list() if "tid" in t.columns else [None] * t.height
    order = t.select(pl.int_range(pl.len()).alias("i"), "start_ns", "end_ns").sort(
        ["start_ns", "end_ns"], descending=[False, True], maintain_order=True)["i"].to_list()
    s, e, rid = t["start_ns"].to_list(), t["end_ns"].to_list(), t["range_id"].to_list()
    stacks: dict[tuple, list[int]] = {}
    by_pid: dict = {}
    parent: list = [None] * t.height
    for i in order:
        key = (pid[i], tid[i])
        own = stacks.get(key)
        if own is None:
            own = stacks[key] = []
            by_pid.setdefault(pid[i], []).append(key)
        while own and e[own[-1]] <= s[i]:
            own.pop()        # ended before this one starts
        j = next((j for j in reversed(own) if e[j] >= e[i]), None)
        if j is None:        # the top of its thread: the shortest range of another thread around it
            best = None
            for k in by_pid[pid[i]]:
                st = stacks[k]
                if k == key:
                    continue
                while st and e[st[-1]] <= s[i]:
                    st.pop()
                c = next((c for c in reversed(st) if e[c] >= e[i] and (s[c], e[c]) != (s[i], e[i])), None)
                if c is not None and (best is None or e[c] - s[c] < e[best] - s[best]):
                    best = c
            j = best
        parent[i] = rid[j] if j is not None else None
        own.append(i)
    return t.with_columns(pl.Series("parent_id", parent, dtype=pl.Int64))


def _levels(prof) -> dict[str, float]:
    df = prof.tables.get("nvtx_gpu_proj_sum")
    if df is None or df.height == 0 or "avg_range_level" not in df.columns:
        return {}
    return {n.lstrip(":"): float(v) for n, v in df.select("name", "avg_range_level").iter_rows() if v is not None}


def _infer_parents(rows: list[dict], prof) -> None:
    """Each range's parent step from totals and counts (module docstring); ``parent`` None when none fits."""
    levels = _levels(prof)
    it = None
    for table in ("nvtx_sum", "nvtx_pushpop_sum", "nvtx_gpu_proj_sum"):
        df = prof.tables.get(table)
        if df is not None and df.height:
            d = df if table != "nvtx_gpu_proj_sum" else df.select("name", "count", pl.col("total_range_ns").alias("total_ns"),
                                                                  "avg_range_level")
            best = iteration_from_summary(d.with_columns(pl.col("name").str.strip_chars_start(":")))
            if best:
                it = best[0]
                break
    steps = [r for r in rows if r["name"] == it or r["phase"] == "step"
             or (levels.get(r["name"]) is not None and levels[r["name"]] < 0.5)]
    used = {r["name"]: 0 for r in steps}
    for c in rows:   # larger totals first: a parent is placed before its children
        c["parent"] = None
        best = None
        for p in steps:
            if p is c or p["total_ns"] < c["total_ns"] or p["count"] > c["count"]:
                continue
            if p.get("max_ns") is not None and c.get("max_ns") is not None and p["max_ns"] < c["max_ns"]:
                continue
            lp, lc = levels.get(p["name"]), levels.get(c["name"])
            if lp is not None and lc is not None and lp >= lc:
                continue
            if c["phase"] == "step" and p["phase"] == "step" and p["name"] != it and c["name"] == it:
                continue   # the iteration range is the step: an outer "train" / "epoch" range is not its parent here
            if used[p["name"]] + c["total_ns"] > p["total_ns"]:
                continue
            if best is None or p["total_ns"] < best["total_ns"]:
                best = p
        if best is not None:
            c["parent"] = best["name"]
            used[best["name"]] += c["total_ns"]


def _data_share(fs, prof, rows, by_name, src, tier) -> None:
    """The data ranges nested in one step as a share of that step's time (the step with most data time)."""
    per_parent: dict[str, list[dict]] = {}
    for r in rows:
        par = by_name.get(r.get("parent") or "")
        if r["phase"] == "data" and par is not None and par["phase"] != "data":
            per_parent.setdefault(par["name"], []).append(r)
    if not per_parent:
        return
    parent, kids = max(per_parent.items(), key=lambda kv: sum(k["total_ns"] for k in kv[1]))
    total = sum(k["total_ns"] for k in kids)
    fs.put("data_phase_share_of_step_pct", min(100.0, pct(total, by_name[parent]["total_ns"])), src, tier)
    fs.put("data_phase_name", ", ".join(k["name"] for k in kids)[:160], src, tier)
    fs.put("data_phase_parent", parent[:160], src, tier)
    fs.put("data_phase_count", int(sum(k["count"] for k in kids)), src, tier)
    fs.put("data_phase_parent_count", int(by_name[parent]["count"]), src, tier)
    work, tables = gpu_work_tables(prof)
    if tables:   # the GPU's whole work (start-up included: an upper bound) is all that could run while it loads
        step = by_name[parent]["total_ns"]
        fs.put("gpu_idle_data_phase_est_pct", max(0.0, pct(total - work, step) or 0.0),
               " + ".join([src] + tables), "summary")


def _idle_in_data(fs, prof, win, rows, src) -> None:
    """GPU trace + NVTX summary, no NVTX trace: the idle time that must lie inside data ranges."""
    if "nvtx_trace" in prof.tables or "gpu_idle_pct" not in fs.run or not win.length_ns:
        return
    if win.span_start_ns is None or not win.span_end_ns:
        return
    data = [r for r in rows if r["phase"] == "data"]
    if not data:
        return
    # the largest data range name only: nested or same-thread data ranges of other names could overlap it
    d = max(data, key=lambda r: r["total_ns"])
    span = win.span_end_ns - win.span_start_ns
    if d["total_ns"] > span:   # more data time than wall time: ranges of several threads at once, no bound
        return
    inside = d["total_ns"] - (span - win.length_ns) - (d.get("max_ns") or 0)
    idle_ns = fs.run["gpu_idle_pct"] / 100.0 * win.length_ns
    lb = max(0.0, inside + idle_ns - win.length_ns)
    fs.put("gpu_idle_data_phase_pct", pct(lb, win.length_ns) or 0.0,
           f"{prof.source_name('gpu_trace')} + {src}", "summary")
    fs.put("data_phase_total_ms", d["total_ns"] / 1e6, src, "summary")


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("data_phase_share_of_step_pct", "%", "time in data-loading NVTX ranges nested in a step range as a share of that step's time (nesting inferred from totals and counts without an NVTX trace; one instance each counts)", ("nvtx_trace", "nvtx_sum")),
    fact("data_phase_name", "", "the data-loading range(s) of that step", ("nvtx_trace", "nvtx_sum")),
    fact("data_phase_parent", "", "the step range that holds them", ("nvtx_trace", "nvtx_sum")),
    fact("data_phase_count", "", "instances of the data-loading range(s)", ("nvtx_trace", "nvtx_sum")),
    fact("data_phase_parent_count", "", "instances of the step range", ("nvtx_trace", "nvtx_sum")),
    fact("gpu_idle_data_phase_est_pct", "%", "summaries: the share of the step's time in which the GPU must be idle while the host is in its data-loading ranges: (data time - all GPU work of the profile, cuda_gpu_kern_sum + cuda_gpu_mem_time_sum) / step time, a lower bound", ("nvtx_trace", "nvtx_sum")),
    fact("gpu_idle_data_phase_pct", "%", "a GPU trace and nvtx_sum, no NVTX trace: idle share of the window that must lie inside data-loading ranges, a lower bound (data time in the window, at least its total minus the span outside the window, plus the idle time, minus the window)", ("nvtx_sum",)),
    fact("data_phase_total_ms", "ms", "total time of the largest data-loading range name (nvtx_sum, whole profile)", ("nvtx_sum",)),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("phases", compute,
          reads=("fact:gpu_idle_pct", "input:kern_sum", "input:mem_time_sum", "input:nvtx_gpu_proj_sum",
                 "input:nvtx_pushpop_sum", "input:nvtx_sum", "input:nvtx_trace"),
          puts=(FACTS, "table:phases")),
]
