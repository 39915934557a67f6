"""The analysis window (design.md "The analysis window").

1. NVTX iterations: the most frequent repeated top-level range (names compared with a trailing
   number removed, so ``ProfilerStep#12`` and ``step 3`` group) defines iterations. The window runs
   from the start of iteration ``skip + 1`` (default: the second) to the end of the GPU work
   launched by the last one.
2. Otherwise the steady state from the kernels (facts/period.py): the second period of the longest run
   in which the kernel names repeat; failing that, the dense part of the GPU trace: the window starts after the last long idle gap
   (longer than ``max(50 ms, 100 x median gap)``) in the first half of the trace, and ends at
   the last GPU operation.
3. ``--window START:END`` overrides both; ``--skip-iterations N`` changes the warm-up count.
Without any timeline the window is the whole profile (source ``whole``) and only summary facts exist.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from ..notes import Note
from . import intervals, profiler_steps
from .names import LIBRARY_DOMAINS
from .period import periodic_start
from .declare import fact

LONG_GAP_FLOOR_NS = 50_000_000
LONG_GAP_FACTOR = 100
CHAIN_GAP_NS = 1_000_000
OPERATOR_RANGE = r"(?i)^(aten|autograd|torch|c10d|prim|cudnn|cublas)::|op_id\s*=|(^|, )seq\s*=|^(forward|backward)$"     # GPU work queued back to back after the last iteration (no API trace)


@dataclass
class Window:
    start_ns: int | None
    end_ns: int | None
    source: str                      # nvtx:<name> | trace | whole | user
    reason: Note                     # why this window (a window.* note: its clauses in ``then``)
    iterations: pl.DataFrame | None = None   # all iterations found (s, e, host_s, host_e), warm-up included
    skipped: int = 0                 # iterations left out at the start (warm-up)
    span_start_ns: int | None = None
    span_end_ns: int | None = None
    notes: list = field(default_factory=list)        # notes.Note: warnings about the window
    candidates: list = field(default_factory=list)   # window.passed.* notes: the ranges not chosen as iterations

    @property
    def length_ns(self) -> int:
        if self.start_ns is None or self.end_ns is None:
            return 0
        return max(0, self.end_ns - self.start_ns)

    @property
    def steady_iters(self) -> int:
        """The iterations after the warm-up (0 when none were found)."""
        return 0 if self.iterations is None else max(0, self.iterations.height - self.skipped)

    def to_json(self) -> dict:
        return {"start_ns": self.start_ns, "end_ns": self.end_ns, "source": self.source,
                "iterations": self.steady_iters, "reason": self.reason,
                "span_start_ns": self.span_start_ns, "span_end_ns": self.span_end_ns}


MAX_CANDIDATES = 20    # repeated ranges compared for nesting (an app may repeat thousands of names)
NESTED_SHARE = 0.9     # a candidate whose instances lie this much inside another's is nested in it
COVER_SHARE = 0.5     # summaries: an iteration candidate covers at least this share of the outermost repeating range


def _strip_domain(name: pl.Expr) -> pl.Expr:
    """``:step`` (the CSV's empty default domain) and ``step`` (SQLite) are one name."""
    return name.str.strip_chars_start(":")


# PyTorch c10d's own record_function ranges around each collective (torch.profiler user annotations, or
# NVTX under emit_nvtx): "nccl:all_reduce", "nccl:_all_gather_base", "gloo:broadcast", "ucc:...", "mpi:...",
# record_param_comms. DDP issues one per gradient bucket, hundreds per step, on the autograd thread (at
# level 0 there): a library's ranges, never the iteration. (The optimizer's "Optimizer.step#SGD.step" or
# the DataLoader's "enumerate(DataLoader)#..." come once per step: a fair step marker where nothing else is.)
FRAMEWORK_RANGE = r"^(?i:nccl|gloo|ucc|mpi|xccl|hccl):|^record_param_comms$"
# torch.profiler's step marker (ProfilerStep#N, one per prof.step()): where it repeats it is the iteration
PROFILER_STEP = "ProfilerStep"
MIN_ITERATIONS = 3     # a range marks iterations when it repeats this often (the replay needs 3 or more)
_TRAILING_NUMBER = r"[\s#_\-:]*\d+\n?$"


def group_names(name: pl.Expr) -> pl.Expr:
    """A range name without its trailing number ("ProfilerStep#12", "step 3" -> "ProfilerStep", "step"),
    the name itself when nothing else is left. Computed once per distinct name (the regex costs 0.14 s on
    the 560 k ranges of an autograd-NVTX profile, which hold a few thousand names; the look-up 0.02 s)."""
    return per_distinct(name, group_expr, pl.String)


def group_expr(name: pl.Expr) -> pl.Expr:
    grouped = name.str.replace(_TRAILING_NUMBER, "").str.strip_chars()
    return pl.when(grouped == "").then(name).otherwise(grouped)


def per_distinct(name: pl.Expr, fn, dtype) -> pl.Expr:
    """``fn(name)`` (an expression of one string column, null for null) worked out once per distinct
    value where the values repeat (a range name per PyTorch operator: a few thousand names in 560 k rows)."""
    def run(s: pl.Series) -> pl.Series:
        s = s.cast(pl.String)
        u = s.drop_nulls().unique() if s.len() >= 4096 else None
        if u is None or u.len() * 4 > s.len():
            return s.to_frame("n").select(fn(pl.col("n")))["n"]
        return s.replace_strict(u, u.to_frame("n").select(fn(pl.col("n")))["n"], default=None, return_dtype=dtype)
    return name.map_batches(run, return_dtype=dtype)


def is_library_range(name: pl.Expr) -> pl.Expr:
    """A library's or the framework's own range: never an iteration (nor a phase of the user's step)."""
    lib = pl.any_horizontal([name.str.starts_with(d) for d in LIBRARY_DOMAINS])
    return lib | name.str.contains(FRAMEWORK_RANGE)


def _nesting(rows: list[dict], inst: dict, tid, pid, step_iv: pl.DataFrame) -> dict[int, str]:
    """candidate index -> the range it is nested in (find_iterations' rules: inside torch.profiler's steps;
    on one thread, 90 % of its time inside another; on another thread, 90 % of its instances each inside
    one instance of a less frequent range)."""
    nested_in: dict[int, str] = {}
    for i in range(len(rows)):
        if rows[i]["group"] != PROFILER_STEP and step_iv.height and _inside_share(inst[i], step_iv) >= NESTED_SHARE:
            nested_in[i] = PROFILER_STEP
            continue
        for j in range(len(rows)):
            if i == j or nested_in.get(j) == rows[i]["group"] or rows[i]["group"] == rows[j]["group"]:
                continue   # (two ranges that cover each other: the first, more frequent one stays)
            if pid and rows[i][pid] != rows[j][pid]:
                continue   # another process (another rank): its steps run at the same time, not around these
            a = inst[i]
            if not tid or rows[i][tid] == rows[j][tid]:
                inside = int(intervals.coverage(a, intervals.merge(inst[j])).sum())
                nested = inside >= NESTED_SHARE * float((a["e"] - a["s"]).sum())
            else:   # another thread: each instance inside one of a less frequent range's instances
                nested = rows[j]["n"] < rows[i]["n"] and _inside_share(a, intervals.merge(inst[j])) >= NESTED_SHARE
            if nested:
                nested_in[i] = rows[j]["group"]
                break
    return nested_in


def profiler_step_count(nvtx: pl.DataFrame | None) -> int:
    """How many torch.profiler steps (distinct ``ProfilerStep#N``) the trace holds: 0 when none."""
    if nvtx is None or not nvtx.height or "name" not in nvtx.columns:
        return 0
    names = nvtx["name"].cast(pl.String)
    return int(names.filter(names.str.contains(r"^ProfilerStep#\d+\s*$")).n_unique())


def find_iterations(nvtx: pl.DataFrame, wanted: str | None = None,
                    passed_over: list | None = None) -> tuple[str | None, pl.DataFrame | None]:
    """The repeated NVTX range that marks iterations, and its instances (s, e) sorted.

    Candidates: ranges of 3 or more instances on one thread (names compared without a trailing
    number), top level where the export gives levels, never a library domain (``NCCL:``, ``cuBLAS:``,
    ``CCCL:``, ...), PyTorch's collective ranges (:data:`FRAMEWORK_RANGE`) nor a PyTorch operator range. A
    candidate whose instances lie inside another candidate's instances is nested in it: on one thread,
    90 % or more of its time inside (libraries push ranges in their own domain, whose stack starts
    again at level 0, so a range twice as frequent inside each step is not the iteration); on another
    thread of the same process (the autograd thread's ranges inside the main thread's steps), 90 % of
    its instances each inside one instance of a range with fewer instances. Among the outermost, the
    most frequent wins. In a torch.profiler trace ``ProfilerStep#N`` is the step: it wins when it
    repeats 3 or more times, and a range inside it is never the iteration even when it repeats less.
    ``wanted`` (``--iteration-range NAME``) picks the range by name instead. ``passed_over`` receives
    a ``window.passed.*`` note (name, count, why) for every candidate not chosen, one per name."""
    if nvtx is None or nvtx.height == 0:
        return None, None
    named = nvtx.with_columns(_strip_domain(pl.col("name")).alias("name"))
    top = named
    if "level" in nvtx.columns and nvtx["level"].null_count() < nvtx.height and wanted is None:
        top = top.filter(pl.col("level").fill_null(0) == 0)
    if wanted is None:
        top = top.filter(~is_library_range(pl.col("name")))
        # operator ranges (PyTorch emit_nvtx / autograd-nvtx: "aten::mm, op_id = 12", "seq = 3") are not steps
        top = top.filter(~pl.col("name").str.contains(OPERATOR_RANGE))
    if top.height == 0:
        return None, None
    top = top.with_columns(group_names(pl.col("name")).alias("group"))
    if wanted is not None:
        w = wanted.lstrip(":")
        top = top.filter((pl.col("group") == w) | (pl.col("name") == w))
    tid = "tid" if "tid" in top.columns else None
    pid = "pid" if tid and "pid" in top.columns else None
    keys = ["group"] + ([tid] if tid else []) + ([pid] if pid else [])
    per_thread = (top.group_by(keys).agg(pl.len().alias("n"), (pl.col("end_ns") - pl.col("start_ns")).sum().alias("t"))
                     .sort(["n", "t", "group"], descending=[True, True, False]))
    counts = per_thread.filter(pl.col("n") >= (2 if wanted is not None else MIN_ITERATIONS))
    # torch.profiler's steps, however few: what lies inside them is a piece of a step
    steps = top.filter(pl.col("group") == PROFILER_STEP) if wanted is None else top.clear()
    step_iv = intervals.merge(steps.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")))
    rows = counts.head(MAX_CANDIDATES).to_dicts()   # the nesting test is pairwise: the most frequent few
    inst = {i: _instances(top, r, tid, pid) for i, r in enumerate(rows)}
    nested_in = _nesting(rows, inst, tid, pid, step_iv)
    marker = next((i for i, r in enumerate(rows) if r["group"] == PROFILER_STEP), None) if wanted is None else None
    best = marker if marker is not None else next((i for i in range(len(rows)) if i not in nested_in), None)
    if best is None and rows and not step_iv.height:
        best = 0
    if passed_over is not None:
        _passed_over(passed_over, rows, best, nested_in, marker, per_thread, named if wanted is None else None, top)
    if best is None:
        return None, None
    return rows[best]["group"], inst[best]


def passed(name: str, n: int, why: str, fields: dict) -> Note:
    """A range not chosen as the iterations, and why (the window's reason names the first few)."""
    return Note("window.passed." + why, {"name": name, "n": n, **fields})


def _passed_over(out: list, rows: list, best, nested_in: dict, marker, per_thread: pl.DataFrame,
                 named: pl.DataFrame | None, top: pl.DataFrame) -> None:
    """A ``window.passed.*`` note (name, count, why) for each range name not chosen, once per name (a name on several threads
    counted over all of them)."""
    chosen = rows[best]["group"] if best is not None else None
    total = dict(per_thread.group_by("group").agg(pl.col("n").sum()).iter_rows())
    seen = {chosen}
    for i, r in enumerate(rows):
        g = r["group"]
        if g in seen:
            continue
        seen.add(g)
        if i in nested_in:
            why = ("nested_in", {"outer": nested_in[i]})
        elif marker is not None:
            why = ("profiler_marks", {"marker": PROFILER_STEP})
        else:
            why = ("fewer_instances", {"other": chosen})
        out.append(passed(g, int(total.get(g, r["n"])), *why))
    for g, n in per_thread.group_by("group").agg(pl.col("n").sum(), pl.col("n").max().alias("most")).filter(
            (pl.col("n") >= MIN_ITERATIONS) & (pl.col("most") < MIN_ITERATIONS)).sort(
            ["n", "group"], descending=[True, False]).select("group", "n").iter_rows():
        if g not in seen:   # repeated, but spread over threads: fewer than 3 on any one of them
            seen.add(g)
            out.append(passed(g, int(n), "fewer_on_thread", {"k": MIN_ITERATIONS}))
    if named is None:
        return
    # ranges left out before counting, and why
    seen |= set(top["group"].unique().to_list())
    lvl = pl.col("level").fill_null(0).min() if "level" in named.columns else pl.lit(0)
    # per name first (in order of first appearance), then per group: 560 k ranges hold a few thousand names
    per = named.group_by("name", maintain_order=True).agg(pl.len().alias("n"), lvl.alias("lvl"))
    allr = per.with_columns(group_names(pl.col("name")).alias("group")).group_by("group").agg(
        pl.col("n").sum(), pl.col("lvl").min(), pl.col("name").first())
    for g, n, lv, name in allr.filter(pl.col("n") >= MIN_ITERATIONS).sort(["n", "group"], descending=[True, False]).iter_rows():
        if g in seen:
            continue
        why = ("library" if name.startswith(LIBRARY_DOMAINS) else
               "collective" if re.search(FRAMEWORK_RANGE, name) else
               "operator" if re.search(OPERATOR_RANGE.removeprefix("(?i)"), name, re.I) else
               "nested_level")
        out.append(passed(g, int(n), why, {"level": lv} if why == "nested_level" else {}))


def _inside_share(a: pl.DataFrame, cover: pl.DataFrame) -> float:
    """The share of the intervals ``a`` (s, e) that lie each wholly inside one interval of ``cover``
    (disjoint, sorted)."""
    if a.height == 0 or cover.height == 0:
        return 0.0
    k = cover["s"].search_sorted(a["s"], side="right").cast(pl.Int64) - 1   # the last cover starting at or before
    ends = cover["e"].gather(k.clip(0, None))
    inside = ((k >= 0) & (ends >= a["e"])).sum()
    return inside / a.height


def _instances(top: pl.DataFrame, row: dict, tid: str | None, pid: str | None = None) -> pl.DataFrame:
    sel = top.filter(pl.col("group") == row["group"])
    for key in (tid, pid):
        if key:
            sel = sel.filter(pl.col(key).eq_missing(row[key]))
    return sel.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")).sort("s")


def iteration_from_summary(df: pl.DataFrame) -> tuple[str, int, float, float | None] | None:
    """The iteration range of a summary report (``nvtx_sum``, ``nvtx_pushpop_sum``,
    ``nvtx_gpu_proj_sum``: one row per range name, no timestamps), chosen as for the trace: the most
    frequent repeated range (3 or more instances) among those that cover most of the time, top level when the report gives levels, library
    domains, PyTorch's collective ranges and operator ranges left out. Returns (name, instances, total ns, median ns or None)."""
    if df is None or df.height == 0:
        return None
    top = df.filter(pl.col("count") >= 3)
    name = pl.col("name").str.strip_chars_start(":")   # summaries print the domain first: "NCCL:ncclAllReduce", ":step"
    top = top.filter(~is_library_range(name) & ~name.str.contains(OPERATOR_RANGE))
    if "avg_range_level" in top.columns and top["avg_range_level"].null_count() < top.height:
        top = top.filter(pl.col("avg_range_level").fill_null(0) < 0.5)
    if top.height == 0:
        return None
    med = pl.col("med_ns") if "med_ns" in top.columns else pl.lit(None, pl.Float64)
    # the iteration must span what it claims: a range that repeats most but covers little of the time
    # (770 instances of 25 us inside each step) is a piece of an iteration. Of the ranges that cover at
    # least COVER_SHARE of the longest-covering one (the outermost repeating range), the most frequent.
    cover = top.filter(pl.col("total_ns") >= COVER_SHARE * top["total_ns"].max())
    best = cover.select("name", "count", "total_ns", med.alias("med")).sort(["count", "total_ns"], descending=True).row(0)
    name, n, total, m = best
    return name, int(n), float(total), (float(m) if m is not None else None)


def gpu_end_of_work(gpu: pl.DataFrame, api: pl.DataFrame | None, host_s: int, host_e: int) -> int | None:
    """End of the GPU work launched from inside [host_s, host_e] (by correlation id when the API
    trace is there, otherwise the GPU work queued back to back after host_e)."""
    if gpu is None or gpu.height == 0:
        return None
    if "launch_s" in gpu.columns:   # the launch time of each operation (timeline.with_launch_times)
        end = gpu.select(pl.col("end_ns").filter((pl.col("start_ns") >= host_s) & (pl.col("launch_s") >= host_s)
                                                 & (pl.col("launch_s") <= host_e)).max()).item()
        return int(end) if end is not None else None
    if api is not None and api.height and "corr_id" in api.columns and gpu["corr_id"].null_count() < gpu.height:
        launched = api.filter((pl.col("start_ns") >= host_s) & (pl.col("start_ns") <= host_e)).select("corr_id")
        ops = gpu.filter(pl.col("start_ns") >= host_s).select("corr_id", "end_ns").join(launched, on="corr_id", how="semi")
        if ops.height:
            return int(ops["end_ns"].max())
        return None
    started = gpu.filter(pl.col("start_ns") <= host_e)
    if started.height == 0:
        return None
    end = int(started["end_ns"].max())
    rest = gpu.filter(pl.col("start_ns") > host_e).sort("start_ns").select("start_ns", "end_ns")
    if rest.height:  # follow work queued back to back (CPU ran ahead of the GPU)
        s = rest["start_ns"].to_list()
        e = rest["end_ns"].to_list()
        for a, b in zip(s, e):
            if a - end > CHAIN_GAP_NS:
                break
            end = max(end, b)
    return end


def dense_start(gpu: pl.DataFrame) -> tuple[int, str]:
    """Where dense GPU activity begins: after the last long idle gap in the first half of the trace."""
    busy = intervals.merge(gpu.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")))
    first, last = int(busy["s"].min()), int(busy["e"].max())
    g = intervals.gaps(busy, first, last)
    if g.height == 0:
        return first, Note("window.no_gap")
    lens = g["e"] - g["s"]
    med = float(lens.median())
    limit = max(LONG_GAP_FLOOR_NS, LONG_GAP_FACTOR * med)
    half = first + (last - first) // 2
    long = g.filter(((pl.col("e") - pl.col("s")) > limit) & (pl.col("s") < half))
    if long.height == 0:
        return first, Note("window.no_long_gap", {"ms": limit / 1e6})
    start = int(long["e"].max())
    return start, Note("window.dense", {"ms": limit / 1e6})


def choose(gpu: pl.DataFrame | None, api: pl.DataFrame | None, nvtx: pl.DataFrame | None,
           user_window: tuple[int, int] | None = None, skip_iterations: int | None = None,
           found: tuple[str | None, pl.DataFrame | None] | None = None) -> Window:
    """The analysis window (``found``: what :func:`find_iterations` already returned for ``nvtx``)."""
    starts, ends = [], []
    for t in (gpu, api, nvtx):
        if t is not None and t.height:
            starts.append(int(t["start_ns"].min()))
            ends.append(int(t["end_ns"].max()))
    span_s = min(starts) if starts else None
    span_e = max(ends) if ends else None
    name, iters = found if found is not None else (find_iterations(nvtx) if nvtx is not None else (None, None))
    if iters is not None:
        # each iteration's GPU end: the work it launched (for the report's per-iteration numbers)
        iters = iters.with_columns(pl.col("s").alias("host_s"), pl.col("e").alias("host_e"))
    if user_window is not None:
        s, e = user_window
        how = Note("window.user_ns", {"start": s, "end": e})
        if span_s is not None and e <= span_s and s + span_s < span_e:
            # before the profile's first event: the report's own seconds (counted from that event)
            how = Note("window.user_seconds", {"start": s / 1e9, "end": e / 1e9, "at": (s + span_s) / 1e9,
                                               "to": (e + span_s) / 1e9})
            s, e = s + span_s, e + span_s
        if span_s is not None and (e <= span_s or s >= span_e):
            # a window with no profile in it has nothing to diagnose: not an idle GPU, a wrong window
            from ..errors import InputError
            raise InputError(f"--window {s / 1e9:.9g}s:{e / 1e9:.9g}s lies outside the profile, which spans "
                             f"{span_s / 1e9:.9g}s to {span_e / 1e9:.9g}s: there is nothing to diagnose in it",
                             None, "choose START:END inside the profile (times as in the trace's Start column)")
        w = Window(s, e, "user", how, iters, 0, span_s, span_e)
        if iters is not None:
            w.skipped = int((iters["s"] < s).sum())
        return w
    if iters is not None and iters.height >= 2:
        notes, steps_why = [], []
        if name == PROFILER_STEP:
            iters, skip_iterations, steps_why, notes = profiler_steps.steady_steps(iters, nvtx, skip_iterations)
        skip = 1 if skip_iterations is None else max(0, skip_iterations)
        if skip >= iters.height:
            if skip_iterations is not None:   # --skip-iterations past the run: said, not silently one step
                notes.append(Note("facts.skip_past_run", {"asked": skip_iterations, "n": iters.height}))
            skip = iters.height - 1
        start = int(iters["s"][skip])
        host_end = int(iters["e"][-1])
        gend = gpu_end_of_work(gpu, api, start, host_end) if gpu is not None else None
        end = max(host_end, gend or host_end)
        warm = Note("window.warm_one") if skip == 1 else (
            Note("window.warm_first", {"n": skip}) if skip else Note("window.warm_none"))
        how = Note("window.end_by_correlation" if (api is not None and api.height) else "window.end_queued")
        reason = Note("window.nvtx", {"n": iters.height, "name": name, "then": (warm, how, *steps_why)})
        return Window(start, end, f"nvtx:{name}", reason, iters, skip, span_s, span_e, notes)
    if gpu is not None and gpu.height:
        found_period = periodic_start(gpu)
        start, reason = (found_period[0], found_period[1]) if found_period else dense_start(gpu)
        end = int(gpu["end_ns"].max())
        note = []
        if iters is not None:
            note.append(Note("facts.one_iteration"))
        return Window(start, end, "trace", reason, None, 0, span_s, span_e, note)
    return Window(span_s, span_e, "whole", Note("window.whole"), iters, 0, span_s, span_e)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("window_ms", "ms", "length of the analysis window", ("gpu_trace", "nvtx_trace", "api_trace")),
    fact("startup_s", "s", "time from the first recorded event to the start of the window (start-up, warm-up)", ("gpu_trace", "nvtx_trace", "api_trace")),
    fact("profiler_step_count", "", "torch.profiler steps (ProfilerStep#N ranges) in the trace", ("nvtx_trace",)),
]
