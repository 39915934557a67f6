"""series: the binned numbers the report's charts draw (HTML report).

``series(prof, fs, bins=400)`` cuts the whole profile span into equal time bins and gives, per bin,
the share of time the GPU was busy (split into compute kernels, NCCL kernels and copies / sets) and,
inside the analysis window, the share of idle time attributed to each cause of
:mod:`facts.timeline` (``data``, ``other``, ``memcpy``, ``sync``, ``launch``, ``host``) with the
dominant one. It also lists the iterations (warm-up flagged) with their completion-to-completion
durations, as ``fs.tables["iterations"]`` has them.

Everything is built from the canonical tables with the helpers of ``intervals`` and ``timeline``
(the same busy union and gap attribution the facts use), so the chart and the facts agree: the
busy time summed over the bins is ``gpu_active_pct_span`` of the span, and the idle time of each
cause summed over the bins is that cause's row of ``idle_breakdown``.

With several GPUs every share is the mean over the devices (as ``gpu_active_pct``).
"""
from __future__ import annotations

import polars as pl

from ..load import Profile
from ..notes import Note
from . import gpu_metrics, intervals, timeline
from .names import kernel_class_expr

DEFAULT_BINS = 400
# what counts as kernel work on the GPU: kernels, and whole CUDA graph executions where a loader
# records them as one operation (timeline.KERNEL_WORK where the facts define it)
KERNEL_KINDS = tuple(getattr(timeline, "KERNEL_WORK", ("kernel",)))


def _bins(s0: int, s1: int, n: int) -> pl.DataFrame:
    n = max(1, min(n, s1 - s0))
    span = s1 - s0
    edges = [s0 + span * i // n for i in range(n + 1)]
    return pl.DataFrame({"s": edges[:-1], "e": edges[1:]}, schema={"s": pl.Int64, "e": pl.Int64})


def _per_bin(bins: pl.DataFrame, sets: list[pl.DataFrame]) -> list[float]:
    """ns of each bin covered by each (merged, disjoint) set, summed over the sets."""
    tot = pl.Series("t", [0] * bins.height, pl.Int64)
    for iv in sets:
        if iv is not None and iv.height:
            c = iv.select("s", "e")
            tot = tot + intervals.coverage(bins, c if c["s"].is_sorted() else c.sort("s"))
    return tot.to_list()


def _graph_hidden(fs) -> bool:
    """CUDA graph work missing from the GPU trace (the facts say so by leaving GPU facts absent)."""
    graphs = (fs.run.get("graph_launch_count") or 0) + (fs.run.get("graph_launch_count_span") or 0)
    return bool(graphs) and "gpu_active_pct" not in fs.run


def _unions(fs, gpu: pl.DataFrame, s0: int, s1: int, whole_span: bool) -> tuple[dict, dict, dict, bool]:
    """Per-device busy unions over [s0, s1): all GPU work, kernels, kernels without NCCL; whether NCCL ran."""
    ops = timeline.ops_intervals(gpu)
    whole = fs.work.busy_span   # the facts' union over the whole span, when that is the range
    busy = whole if whole is not None and whole_span else timeline.busy_by_device(ops, s0, s1)
    only_kernels = gpu.select(pl.col("kind").is_in(list(KERNEL_KINDS)).all()).item()
    kern = busy if only_kernels else timeline.busy_by_device(ops, s0, s1, KERNEL_KINDS)
    # NCCL kernels, classified once per distinct name (as the facts do)
    kgpu = gpu.filter(pl.col("kind").is_in(list(KERNEL_KINDS)))
    names = kgpu.select(pl.col("name").unique().cast(pl.String))   # the distinct names, then as text
    nccl_names = names.filter(kernel_class_expr("name") == "nccl")["name"]
    if nccl_names.len() == 0:
        return busy, kern, kern, False
    compute_ops = timeline.ops_intervals(kgpu.filter(~pl.col("name").is_in(nccl_names.to_list())))   # (codes)
    return busy, kern, timeline.busy_by_device(compute_ops, s0, s1), True


def series(prof: Profile, fs, bins: int = DEFAULT_BINS, between: tuple[int, int] | None = None) -> dict:
    """Chart series over the whole profile span (see the module docstring).

    ``between=(start_ns, end_ns)`` bins that range instead of the span (a zoom on the window).
    Returns a dict with ``available`` False (and a ``reason``) when there is no GPU trace to bin.
    Shares are percentages of each bin (0..100), rounded to 0.01.
    """
    win = fs.window
    gpu = fs.work.gpu_trace(prof)   # with launch times when the facts joined them
    out: dict = {"available": False, "reason": None, "iterations": _iterations(fs), "causes": list(timeline.CAUSES)}
    if win is None or win.span_start_ns is None or win.span_end_ns is None or win.span_end_ns <= win.span_start_ns:
        out["reason"] = Note("series.no_timeline")
        return out
    if gpu is None or gpu.height == 0:
        out["reason"] = Note("series.no_gpu_trace")
        return out
    s0, s1 = int(win.span_start_ns), int(win.span_end_ns)
    if between is not None:
        s0, s1 = int(between[0]), int(between[1])
        if s1 <= s0:
            out["reason"] = Note("series.empty_range")
            return out
    b = _bins(s0, s1, bins)
    width = (b["e"] - b["s"]).to_list()
    busy, kern, compute, has_nccl = _unions(fs, gpu, s0, s1, whole_span=between is None)
    nd = max(1, gpu["device_id"].drop_nulls().n_unique())

    busy_ns = _per_bin(b, list(busy.values()))
    kern_ns = _per_bin(b, list(kern.values()))
    comp_ns = _per_bin(b, list(compute.values()))

    def pct(xs):
        return [round(100.0 * x / nd / w, 2) if w else 0.0 for x, w in zip(xs, width)]

    out.update({
        "available": True, "span_start_ns": s0, "span_end_ns": s1, "bins": b.height, "devices": nd,
        "bin_start_ns": b["s"].to_list(), "bin_ns": width,
        "busy_pct": pct(busy_ns),
        "compute_pct": pct(comp_ns),
        "nccl_pct": pct([k - c for k, c in zip(kern_ns, comp_ns)]) if has_nccl else None,
        "copy_pct": pct([x - k for x, k in zip(busy_ns, kern_ns)]),
        "busy_ns_total": sum(busy_ns) / nd,
        "graph_hidden": _graph_hidden(fs),
        "window": None, "startup": None,
        "idle_by_cause": {}, "idle_cause": [None] * b.height, "attributed": False,
        # SM active / tensor active / DRAM per bin from the GPU metrics samples (None without them)
        "gpu_metrics": gpu_metrics.series(prof.tables.get("gpu_metrics"), b["s"].to_list(), width),
    })
    if win.start_ns is not None and win.end_ns is not None and win.end_ns > win.start_ns and win.source != "whole":
        ws, we = int(win.start_ns), int(win.end_ns)
        out["window"] = {"start_ns": ws, "end_ns": we, "source": win.source}
        su_s, su_e = max(s0, int(win.span_start_ns)), min(s1, ws)
        if su_e > su_s:   # start-up: the profile before the window, where it is in range
            out["startup"] = {"start_ns": su_s, "end_ns": su_e}
        if not out["graph_hidden"]:
            _idle_causes(out, prof, gpu, b, width, nd, ws, we, fs.work.busy, fs.work.host)
    return out


def _idle_causes(out: dict, prof: Profile, gpu: pl.DataFrame, b: pl.DataFrame, width: list[int], nd: int, ws: int,
                 we: int, busy_w: dict | None = None, host: dict | None = None) -> None:
    """Idle gaps of the window attributed to causes (timeline.attribute_gaps), binned (``busy_w``,
    ``host``: the facts' busy union and host intervals over this window, when they kept them)."""
    api, nvtx = prof.tables.get("api_trace"), prof.tables.get("nvtx_trace")
    if api is None or api.height == 0:
        return
    if busy_w is None:
        busy_w = timeline.busy_by_device(timeline.ops_intervals(gpu), ws, we)
    if host is None:
        host = timeline.api_class_frames(api, gpu, ws, we)
    data = timeline.data_ranges(nvtx, ws, we)
    per_dev = []
    for d in sorted(busy_w):
        g = intervals.gaps(busy_w[d], ws, we, carry=timeline.carried(busy_w[d]))
        per_dev.append(timeline.attribute_gaps(g, api, host, data).select("s", "e", "cause"))
    if not per_dev:
        return
    out["attributed"] = True
    per_cause = {}
    for c in timeline.CAUSES:
        # the gaps of one device are disjoint: bin each device's, then add the devices up
        sets = [g.filter(pl.col("cause") == c) for g in per_dev]
        if any(x.height for x in sets):
            per_cause[c] = _per_bin(b, sets)
    out["idle_ns_total"] = {c: sum(v) / nd for c, v in per_cause.items()}
    out["idle_by_cause"] = {c: [round(100.0 * x / nd / w, 2) if w else 0.0 for x, w in zip(v, width)]
                            for c, v in per_cause.items()}
    dom = []
    for i in range(b.height):
        best, best_v = None, 0
        for c, v in per_cause.items():
            if v[i] > best_v:
                best, best_v = c, v[i]
        dom.append(best)
    out["idle_cause"] = dom


def _iterations(fs) -> list[dict]:
    """The iterations (warm-up included) with their start time, from the window and the facts."""
    rows = fs.tables.get("iterations") or []
    win = fs.window
    starts = win.iterations["s"].to_list() if win is not None and win.iterations is not None else []
    out = []
    for i, r in enumerate(rows):
        out.append({"index": r["index"], "ms": r["ms"], "warmup": bool(r.get("warmup")),
                    "start_ns": starts[i] if i < len(starts) else None,
                    "gpu_busy_pct": r.get("gpu_busy_pct")})
    return out


RANK_BINS = 120


def rank_row(prof: Profile, fs, bins: int = RANK_BINS) -> dict | None:
    """One rank's row of the multi-rank timeline: compute / NCCL / copy shares of each bin of its
    analysis window (idle is the rest), small enough to travel back from a rank's worker process.
    None when the rank has no GPU trace to bin."""
    win = fs.window
    if win is None or win.start_ns is None or win.end_ns is None or win.end_ns <= win.start_ns:
        return None
    s = series(prof, fs, bins, between=(int(win.start_ns), int(win.end_ns)))
    if not s.get("available"):
        return None
    return {"start_ns": s["span_start_ns"], "end_ns": s["span_end_ns"], "bin_start_ns": s["bin_start_ns"],
            "bin_ns": s["bin_ns"], "compute_pct": s["compute_pct"], "nccl_pct": s["nccl_pct"],
            "copy_pct": s["copy_pct"], "source": win.source}
