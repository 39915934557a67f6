"""The analysis window (design.md "The analysis window").

1. NVTX iterations: the most frequent repeated top-level range (names compared with a trailing
   number removed, so ``ProfilerStep#12`` and ``step 3`` group) defines iterations. The window runs
   from the start of iteration ``skip + 1`` (default: the second) to the end of the GPU work
   launched by the last one.
2. Otherwise the dense part of the GPU trace: the window starts after the last long idle gap
   (longer than ``max(50 ms, 100 x median gap)``) in the first half of the trace, and ends at
   the last GPU operation.
3. ``--window START:END`` overrides both; ``--skip-iterations N`` changes the warm-up count.
Without any timeline the window is the whole profile (source ``whole``) and only summary facts exist.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from . import intervals
from .names import LIBRARY_DOMAINS

LONG_GAP_FLOOR_NS = 50_000_000
LONG_GAP_FACTOR = 100
CHAIN_GAP_NS = 1_000_000
OPERATOR_RANGE = r"(?i)^(aten|autograd|torch|c10d|prim|cudnn|cublas)::|op_id\s*=|(^|, )seq\s*=|^(forward|backward)$"     # GPU work queued back to back after the last iteration (no API trace)


@dataclass
class Window:
    start_ns: int | None
    end_ns: int | None
    source: str                      # nvtx:<name> | trace | whole | user
    reason: str
    iterations: pl.DataFrame | None = None   # all iterations found (s, e, host_s, host_e), warm-up included
    skipped: int = 0                 # iterations left out at the start (warm-up)
    span_start_ns: int | None = None
    span_end_ns: int | None = None
    notes: list[str] = field(default_factory=list)
    candidates: list = field(default_factory=list)   # (name, count, why) of the ranges not chosen as iterations

    @property
    def length_ns(self) -> int:
        if self.start_ns is None or self.end_ns is None:
            return 0
        return max(0, self.end_ns - self.start_ns)

    def to_json(self) -> dict:
        n_iter = 0
        if self.iterations is not None:
            n_iter = max(0, self.iterations.height - self.skipped)
        return {"start_ns": self.start_ns, "end_ns": self.end_ns, "source": self.source,
                "iterations": n_iter, "reason": self.reason,
                "span_start_ns": self.span_start_ns, "span_end_ns": self.span_end_ns}


MAX_CANDIDATES = 20    # repeated ranges compared for nesting (an app may repeat thousands of names)
NESTED_SHARE = 0.9     # a candidate whose instances lie this much inside another's is nested in it
COVER_SHARE = 0.5     # summaries: an iteration candidate covers at least this share of the outermost repeating range


def _strip_domain(name: pl.Expr) -> pl.Expr:
    """``:step`` (the CSV's empty default domain) and ``step`` (SQLite) are one name."""
    return name.str.strip_chars_start(":")


def find_iterations(nvtx: pl.DataFrame, wanted: str | None = None,
                    passed_over: list | None = None) -> tuple[str | None, pl.DataFrame | None]:
    """The repeated NVTX range that marks iterations, and its instances (s, e) sorted.

    Candidates: ranges of 3 or more instances (names compared without a trailing number), top level
    where the export gives levels, never a library domain (``NCCL:``, ``cuBLAS:``, ``CCCL:``, ...) nor a
    PyTorch operator range. A candidate whose instances lie inside another candidate's instances (90 %
    or more) is nested in it: libraries push ranges in their own domain, whose stack starts again at
    level 0, so a range twice as frequent inside each step is not the iteration. Among the outermost,
    the most frequent wins. ``wanted`` (``--iteration-range NAME``) picks the range by name instead.
    ``passed_over`` receives (name, count, why) for every candidate not chosen."""
    if nvtx is None or nvtx.height == 0:
        return None, None
    top = nvtx.with_columns(_strip_domain(pl.col("name")).alias("name"))
    if "level" in nvtx.columns and nvtx["level"].null_count() < nvtx.height and wanted is None:
        top = top.filter(pl.col("level").fill_null(0) == 0)
    if wanted is None:
        for dom in LIBRARY_DOMAINS:
            top = top.filter(~pl.col("name").str.starts_with(dom))
        # operator ranges (PyTorch emit_nvtx / autograd-nvtx: "aten::mm, op_id = 12", "seq = 3") are not steps
        top = top.filter(~pl.col("name").str.contains(OPERATOR_RANGE))
    if top.height == 0:
        return None, None
    # names compared without a trailing number ("ProfilerStep#12", "step 3" -> "ProfilerStep", "step")
    grouped = pl.col("name").str.replace(r"[\s#_\-:]*\d+\n?$", "").str.strip_chars()
    top = top.with_columns(pl.when(grouped == "").then(pl.col("name")).otherwise(grouped).alias("group"))
    if wanted is not None:
        w = wanted.lstrip(":")
        top = top.filter((pl.col("group") == w) | (pl.col("name") == w))
    tid = "tid" if "tid" in top.columns else None
    keys = ["group"] + ([tid] if tid else [])
    counts = (top.group_by(keys).agg(pl.len().alias("n"), (pl.col("end_ns") - pl.col("start_ns")).sum().alias("t"))
                 .filter(pl.col("n") >= (2 if wanted is not None else 3)).sort(["n", "t", "group"], descending=[True, True, False]))
    if counts.height == 0:
        return None, None
    rows = counts.head(MAX_CANDIDATES).to_dicts()   # the nesting test is pairwise: the most frequent few
    inst = {i: _instances(top, r, tid) for i, r in enumerate(rows)}
    nested_in: dict[int, int] = {}
    for i in range(len(rows)):
        for j in range(len(rows)):
            if i == j or nested_in.get(j) == i or (tid and rows[i][tid] != rows[j][tid]):
                continue   # (two ranges that cover each other: the first, more frequent one stays)
            a = inst[i]
            inside = int(intervals.coverage(a, intervals.merge(inst[j])).sum())
            if inside >= NESTED_SHARE * float((a["e"] - a["s"]).sum()):
                nested_in[i] = j
                break
    best = next((i for i in range(len(rows)) if i not in nested_in), 0)
    if passed_over is not None:
        for i, r in enumerate(rows):
            if i == best:
                continue
            why = (f"nested in '{rows[nested_in[i]]['group']}'" if i in nested_in
                   else f"fewer instances than '{rows[best]['group']}'")
            passed_over.append((r["group"], int(r["n"]), why))
    if passed_over is not None and wanted is None:   # ranges left out before counting, and why
        seen = {r["group"] for r in rows}
        allr = nvtx.with_columns(_strip_domain(pl.col("name")).alias("name")).group_by("name").agg(
            pl.len().alias("n"), (pl.col("level").fill_null(0).min() if "level" in nvtx.columns else pl.lit(0)).alias("lvl"))
        for name, n, lvl in allr.filter(pl.col("n") >= 3).sort(["n", "name"], descending=[True, False]).iter_rows():
            if name in seen:
                continue
            why = ("a library's range" if name.startswith(LIBRARY_DOMAINS) else
                   "an operator range" if re.search(OPERATOR_RANGE.removeprefix("(?i)"), name, re.I) else
                   f"nested (level {lvl})")
            passed_over.append((name, int(n), why))
    return rows[best]["group"], inst[best]


def _instances(top: pl.DataFrame, row: dict, tid: str | None) -> pl.DataFrame:
    sel = top.filter(pl.col("group") == row["group"])
    if tid:
        sel = sel.filter(pl.col(tid) == row[tid])
    return sel.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")).sort("s")


def iteration_from_summary(df: pl.DataFrame) -> tuple[str, int, float, float | None] | None:
    """The iteration range of a summary report (``nvtx_sum``, ``nvtx_pushpop_sum``,
    ``nvtx_gpu_proj_sum``: one row per range name, no timestamps), chosen as for the trace: the most
    frequent repeated range (3 or more instances) among those that cover most of the time, top level when the report gives levels, library
    domains and operator ranges left out. Returns (name, instances, total ns, median ns or None)."""
    if df is None or df.height == 0:
        return None
    top = df.filter(pl.col("count") >= 3)
    for dom in LIBRARY_DOMAINS:   # summaries print the domain first: "NCCL:ncclAllReduce", ":step"
        top = top.filter(~pl.col("name").str.strip_chars_start(":").str.starts_with(dom))
    top = top.filter(~pl.col("name").str.strip_chars_start(":").str.contains(OPERATOR_RANGE))
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
        return first, "the GPU trace has no idle gap: the window is the whole trace"
    lens = g["e"] - g["s"]
    med = float(lens.median())
    limit = max(LONG_GAP_FLOOR_NS, LONG_GAP_FACTOR * med)
    half = first + (last - first) // 2
    long = g.filter(((pl.col("e") - pl.col("s")) > limit) & (pl.col("s") < half))
    if long.height == 0:
        return first, (f"no idle gap longer than {limit / 1e6:.1f} ms in the first half of the trace: "
                       "the window starts at the first GPU operation")
    start = int(long["e"].max())
    return start, (f"dense GPU activity starts after the last idle gap longer than {limit / 1e6:.1f} ms "
                   f"(max(50 ms, 100 x the median gap)) in the first half of the trace")


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
        how = f"--window {s}:{e} (ns) given on the command line"
        if span_s is not None and e <= span_s and s + span_s < span_e:
            # before the profile's first event: the report's own seconds (counted from that event)
            how = (f"--window {s / 1e9:.9g}s:{e / 1e9:.9g}s read as seconds from the profile's first event, as the "
                   f"report counts them ({(s + span_s) / 1e9:.9g}s to {(e + span_s) / 1e9:.9g}s on the nsys timeline)")
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
        skip = 1 if skip_iterations is None else max(0, skip_iterations)
        if skip >= iters.height:
            skip = iters.height - 1
        start = int(iters["s"][skip])
        host_end = int(iters["e"][-1])
        gend = gpu_end_of_work(gpu, api, start, host_end) if gpu is not None else None
        end = max(host_end, gend or host_end)
        warm = "iteration 1 left out as warm-up" if skip == 1 else (
            f"first {skip} iterations left out as warm-up" if skip else "no iteration left out")
        how = "by correlation id" if (api is not None and api.height) else "queued back to back"
        reason = (f"{iters.height} NVTX '{name}' ranges mark iterations; {warm}; the window ends with the GPU "
                  f"work the last iteration launched ({how})")
        return Window(start, end, f"nvtx:{name}", reason, iters, skip, span_s, span_e)
    if gpu is not None and gpu.height:
        start, reason = dense_start(gpu)
        end = int(gpu["end_ns"].max())
        note = []
        if iters is not None:
            note.append("only one NVTX iteration found; the window comes from the GPU trace")
        return Window(start, end, "trace", reason, None, 0, span_s, span_e, note)
    return Window(span_s, span_e, "whole",
                  "no GPU trace: the window is the whole profile and only summary facts are computed",
                  iters, 0, span_s, span_e)
