"""facts: turn the loaded frames into named numbers over the analysis window.

Public entry point: :func:`compute`. A fact whose inputs are missing is absent (never zero); the
reason lands in ``FactSet.absent`` so the engine can list the rules it could not evaluate.
Facts come from the richest source: a trace (``cuda_gpu_trace``, ``cuda_api_trace``,
``nvtx_pushpop_trace``) over the window when present, the summary reports over the whole profile
otherwise (then the window *is* the whole profile). Whole-profile numbers are also kept with a
``_span`` suffix.
"""
from __future__ import annotations

import dataclasses
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import polars as pl

from ..load import Profile
from ..load.normalize import copy_kind_expr
from . import intervals, ncu, registry, timeline, window as window_mod
from .names import (GRAPH_LAUNCH_APIS, KERNEL_LAUNCH_APIS, LIBRARY_DOMAINS, SYNC_APIS, SYNC_MEM_APIS, DATA_RANGE,
                    api_base, base_expr, kernel_class_expr, simt_gemm_expr)

SMALL_KERNEL_NS = 10_000
KERNEL_FACT_LIMIT = 50
OSRT_IO = {"read", "pread", "pread64", "readv", "preadv", "fread", "open", "open64", "openat", "openat64",
           "fopen", "fopen64", "write", "pwrite", "pwrite64", "fwrite", "stat", "fstat", "lstat", "mmap", "mmap64"}


@dataclass
class Options:
    user_window: tuple[int, int] | None = None
    skip_iterations: int | None = None


@dataclass
class FactSet:
    run: dict = field(default_factory=dict)
    kernels: list[dict] = field(default_factory=list)
    window: window_mod.Window | None = None
    sources: dict = field(default_factory=dict)     # fact -> file it came from
    absent: dict = field(default_factory=dict)      # fact -> why it is absent
    tables: dict = field(default_factory=dict)      # report tables
    warnings: list[str] = field(default_factory=list)

    def put(self, name: str, value, source: str | None) -> None:
        if value is None:
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                return
            value = round(value, 4)
        self.run[name] = value
        if source:
            self.sources[name] = source


# frames and numbers kept in ``FactSet.tables`` for the steps of one process (never reported, never
# sent between processes): busy unions, their total and coverage-ready form, the GPU trace with launch
# times, the host's API intervals
PRIVATE_TABLES = ("_busy", "_busy_span", "_busy_cover", "_busy_total", "_gpu", "_host")


def with_kernel_classes(df: pl.DataFrame) -> pl.DataFrame:
    """Add ``kernel_class`` and ``simt`` columns, classifying each distinct name once (the regexes are
    costly on a million long demangled names; a run has a few dozen distinct ones)."""
    uniq = df.select(pl.col("name").unique()).with_columns(kernel_class_expr("name").alias("kernel_class"),
                                                           simt_gemm_expr("name").alias("simt"))
    return df.join(uniq, on="name", how="left", maintain_order="left")


def _srcs(*names) -> str:
    """Several sources of one fact, each named once."""
    return " + ".join(dict.fromkeys(n for n in names if n))


def _pct(part: float, whole: float) -> float | None:
    if not whole or whole <= 0:
        return None
    return 100.0 * part / whole


def compute(prof: Profile, opts: Options | None = None) -> FactSet:
    opts = opts or Options()
    fs = FactSet()
    gpu = prof.tables.get("gpu_trace")
    api = prof.tables.get("api_trace")
    nvtx = prof.tables.get("nvtx_trace")
    found = window_mod.find_iterations(nvtx) if nvtx is not None else (None, None)
    # one correlation join serves every step below (window end, iteration ends, gap causes)
    launched = timeline.with_launch_times(gpu, api, found[1]["s"] if found[1] is not None else None)
    if launched is not gpu:
        prof = dataclasses.replace(prof, tables={**prof.tables, "gpu_trace": launched})
        gpu = launched
        fs.tables["_gpu"] = gpu   # the chart series (facts.series) read the launch times too
    src = prof.source_name
    win = window_mod.choose(gpu if gpu is not None and gpu.height else None, api, nvtx,
                            opts.user_window, opts.skip_iterations, found)
    fs.window = win
    fs.warnings += win.notes
    if win.start_ns is not None and win.end_ns is not None and win.end_ns <= win.start_ns:
        fs.warnings.append(f"the analysis window is empty ({win.start_ns}..{win.end_ns} ns): no window facts")
    wlen = win.length_ns
    if wlen:
        fs.put("window_ms", wlen / 1e6, src("gpu_trace") or src("nvtx_trace"))
    if win.span_start_ns is not None and win.start_ns is not None and win.source != "whole":
        fs.put("startup_s", (win.start_ns - win.span_start_ns) / 1e9, src("gpu_trace") or src("nvtx_trace"))

    graph_hidden = _graph_check(fs, prof, win)
    timeline_ok = gpu is not None and gpu.height > 0 and wlen > 0 and not graph_hidden
    if api is not None and api.height and wlen > 0:
        # what the host did in the window (sync, copy and launch calls, merged): the gap causes, the
        # launch share and the chart series all read it
        fs.tables["_host"] = timeline.api_class_frames(api, gpu, win.start_ns, win.end_ns)
    # independent groups of facts run side by side: Polars releases the GIL, and several of the
    # steps below (as-of joins, cumulative maxima) use one core each
    jobs = []
    if timeline_ok:
        _busy_facts(fs, prof, win)
        jobs += [lambda: _gap_facts(fs, prof, win),
                 lambda: (_kernel_facts_trace(fs, prof, win), _memcpy_facts_trace(fs, prof, win),
                          _nccl_facts_trace(fs, prof, win))]
    if gpu is not None and gpu.height and not graph_hidden and win.span_start_ns is not None:
        jobs.append(lambda: _span_timeline(fs, prof, win))
    if api is not None and api.height and wlen > 0:
        jobs.append(lambda: _api_facts_trace(fs, prof, win, timeline_ok))
    jobs += [lambda: _iteration_facts(fs, prof, win, timeline_ok, graph_hidden),
             lambda: (_nvtx_facts(fs, prof, win), _osrt_facts(fs, prof))]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for fut in [pool.submit(j) for j in jobs]:
            fut.result()
    # facts built from two groups' results come after the threads (no group reads another's output)
    if timeline_ok and "kernel_count" in fs.run and fs.run.get("iter_count"):
        fs.put("kernels_per_iter", fs.run["kernel_count"] / fs.run["iter_count"], prof.source_name("gpu_trace"))
    _summary_facts(fs, prof, win)   # after the trace facts: it only fills what they could not
    ncu.attach(fs, prof)            # Nsight Compute kernel facts, joined with the nsys kernels
    _absent(fs, prof)
    return fs


# ----------------------------------------------------------------------------------------- graph
def _graph_check(fs: FactSet, prof: Profile, win) -> bool:
    """CUDA graph launches whose kernels the trace does not show: the GPU was not idle, it was unseen."""
    api = prof.tables.get("api_trace")
    gpu = prof.tables.get("gpu_trace")
    if api is not None and api.height:
        in_win = api
        if win.start_ns is not None and win.source != "whole":
            in_win = api.filter((pl.col("start_ns") >= win.start_ns) & (pl.col("start_ns") < win.end_ns))
        gl = in_win.filter(api_base(api).is_in(sorted(GRAPH_LAUNCH_APIS)))
        fs.put("graph_launch_count", gl.height, prof.source_name("api_trace"))
        if gl.height == 0:
            return False
        seen = 0
        if gpu is not None and gpu.height:
            seen = gpu.join(gl.select("corr_id"), on="corr_id", how="semi").height
        if seen:
            return False
        fs.warnings.append(
            f"{gl.height} CUDA graph launches (cudaGraphLaunch) in the window, but none of the graphs' GPU work "
            f"is in {prof.source_name('gpu_trace') or 'the GPU trace'}: nsys records graphs as a whole by default "
            f"(--cuda-graph-trace=graph) and nsys stats leaves them out of cuda_gpu_trace. GPU utilization, idle "
            f"gaps and kernel facts are not computed rather than reported as idle; re-profile with "
            f"--cuda-graph-trace=node to see the graph kernels")
        fs.absent.update({k: "CUDA graph work is not in the GPU trace" for k in _TIMELINE_FACTS})
        return True
    s = prof.tables.get("api_sum")
    if s is not None and s.height:
        n = int(s.filter(base_expr("name").is_in(sorted(GRAPH_LAUNCH_APIS)))["count"].sum())
        if n:
            fs.put("graph_launch_count_span", n, prof.source_name("api_sum"))
            if gpu is not None and gpu.height:
                fs.warnings.append(
                    f"{n} CUDA graph launches in {prof.source_name('api_sum')}, and without cuda_api_trace nsys-expert "
                    f"cannot tell whether the graphs' kernels are in the GPU trace (they are not with the default "
                    f"--cuda-graph-trace=graph): GPU utilization and idle facts are not computed; export "
                    f"cuda_api_trace or re-profile with --cuda-graph-trace=node")
                fs.absent.update({k: "CUDA graph work may be missing from the GPU trace" for k in _TIMELINE_FACTS})
                return True
    return False


_TIMELINE_FACTS = ("gpu_active_pct", "gpu_idle_pct", "kernel_active_pct", "memcpy_active_pct", "gpu_idle_gap_count",
                   "gpu_longest_gap_ms", "gpu_idle_short_gaps_pct", "gpu_idle_long_gaps_pct", "kernel_count",
                   "kernel_median_us", "kernel_small_share_pct", "memcpy_share_of_busy_pct", "nccl_share_of_busy_pct",
                   *(f"gpu_idle_{c}_pct" for c in timeline.CAUSES))


# -------------------------------------------------------------------------------------- timeline
def _busy_facts(fs: FactSet, prof: Profile, win) -> None:
    """GPU busy union per device over the window, and the utilization facts."""
    gpu = prof.tables["gpu_trace"]
    s, e, wlen = win.start_ns, win.end_ns, win.length_ns
    src = prof.source_name("gpu_trace")
    ops = timeline.ops_intervals(gpu)
    if win.span_start_ns is not None and win.span_end_ns is not None and win.span_start_ns <= s and win.span_end_ns >= e:
        # one union over the whole profile serves both the window (clipped) and the _span facts
        whole = timeline.busy_by_device(ops, win.span_start_ns, win.span_end_ns)
        fs.tables["_busy_span"] = whole
        busy = {d: intervals.clip(m, s, e) for d, m in whole.items()}
    else:
        busy = timeline.busy_by_device(ops, s, e)
    # copies and memsets are few: find them once, then every test below runs on those few rows
    other = ops.filter(~pl.col("kind").is_in(timeline.KERNEL_WORK) & (pl.col("e") > s) & (pl.col("s") < e))
    only_kernels = other.height == 0
    if only_kernels:   # only kernel work (kernels, graph executions) in the window: its union is the busy union
        kern = busy
    else:
        kern = timeline.busy_by_device(ops.filter((pl.col("e") > s) & (pl.col("s") < e)), s, e, timeline.KERNEL_WORK)
    copy = timeline.busy_by_device(other, s, e, ("memcpy",))
    empty = intervals.merge(ops.head(0), keep_first=timeline.carried(ops))
    for d in timeline.device_ids(ops):  # a device with no work in the window is idle, not absent
        busy.setdefault(d, empty)
    devs = sorted(busy)
    fs.put("gpu_count", len(devs), src)
    act = [intervals.total(busy[d]) for d in devs]
    fs.tables["_busy_total"] = sum(act)
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    fs.put("gpu_active_pct", _pct(mean(act), wlen), src)
    fs.put("gpu_idle_pct", 100.0 - _pct(mean(act), wlen), src)
    kact = act if only_kernels else [intervals.total(kern[d]) if d in kern else 0 for d in devs]
    fs.put("kernel_active_pct", _pct(mean(kact), wlen), src)
    fs.put("memcpy_active_pct", _pct(mean([intervals.total(copy[d]) if d in copy else 0 for d in devs]), wlen), src)
    fs.tables["_busy"] = busy  # used by later steps in this module, never reported
    if len(busy) == 1:         # the one GPU's busy set, ready for the coverage of sync calls and iterations
        fs.tables["_busy_cover"] = intervals.prepare(busy[devs[0]])


def _gap_facts(fs: FactSet, prof: Profile, win) -> None:
    """Idle gaps inside the window and, with the API trace, what the host did during each."""
    api, nvtx = prof.tables.get("api_trace"), prof.tables.get("nvtx_trace")
    s, e, wlen = win.start_ns, win.end_ns, win.length_ns
    src = prof.source_name("gpu_trace")
    busy = fs.tables["_busy"]
    devs = sorted(busy)
    host = fs.tables.get("_host")
    data = timeline.data_ranges(nvtx, s, e)
    # per device, added up: a million gaps are reduced where they are made, never concatenated
    count, longest, short, long_ = 0, None, 0, 0
    by = {c: 0 for c in timeline.CAUSES}
    cnt = {c: 0 for c in timeline.CAUSES}
    ln = pl.col("e") - pl.col("s")
    for d in devs:
        g = intervals.gaps(busy[d], s, e, carry=timeline.carried(busy[d]))
        if g.height == 0:
            continue
        n_, max_, short_, lng = g.select(
            (ln >= timeline.GAP_COUNT_MIN_NS).sum().alias("n"), ln.max().alias("max"),
            ln.filter(ln < timeline.SHORT_GAP_NS).sum().alias("short"),
            ln.filter(ln >= timeline.LONG_GAP_NS).sum().alias("long")).row(0)
        count, short, long_ = count + int(n_), short + int(short_ or 0), long_ + int(lng or 0)
        longest = max_ if longest is None else max(longest, max_)
        if host is not None:
            agg = timeline.attribute_gaps(g, api, host, data).group_by("cause").agg(
                pl.col("len").sum().alias("t"), pl.len().alias("n"))
            for c, t, k in agg.iter_rows():
                by[c] += t
                cnt[c] += k
    n = max(1, len(devs))
    if longest is not None:
        fs.put("gpu_idle_gap_count", count, src)
        fs.put("gpu_longest_gap_ms", float(longest) / 1e6, src)
        fs.put("gpu_idle_short_gaps_pct", _pct(float(short) / n, wlen), src)
        fs.put("gpu_idle_long_gaps_pct", _pct(float(long_) / n, wlen), src)
    else:
        for k in ("gpu_idle_gap_count", "gpu_longest_gap_ms", "gpu_idle_short_gaps_pct", "gpu_idle_long_gaps_pct"):
            fs.put(k, 0, src)
    if host is not None and devs:
        both = _srcs(src, prof.source_name("api_trace"))
        for c in timeline.CAUSES:
            fs.put(f"gpu_idle_{c}_pct", _pct(by[c] / n, wlen), both)
        fs.tables["idle_breakdown"] = [
            {"cause": c, "ms": by[c] / n / 1e6, "pct": _pct(by[c] / n, wlen), "gaps": cnt[c]}
            for c in sorted(timeline.CAUSES, key=lambda c: -by[c]) if by[c] > 0]


def _span_timeline(fs: FactSet, prof: Profile, win) -> None:
    gpu = prof.tables["gpu_trace"]
    s, e = win.span_start_ns, win.span_end_ns
    if s is None or e is None or e <= s:
        return
    busy = fs.tables.get("_busy_span")
    if busy is None:
        busy = timeline.busy_by_device(timeline.ops_intervals(gpu), s, e)
    act = [intervals.total(b) for b in busy.values()]
    if act:
        fs.put("gpu_active_pct_span", _pct(sum(act) / len(act), e - s), prof.source_name("gpu_trace"))
        fs.put("kernel_count_span", int((gpu["kind"] == "kernel").sum()), prof.source_name("gpu_trace"))


def _in_window(df: pl.DataFrame, win) -> pl.DataFrame:
    return timeline.starting_in(df, win.start_ns, win.end_ns)


def _of_kinds(df: pl.DataFrame, kinds: tuple[str, ...]) -> pl.DataFrame:
    """The rows of these operation kinds (no copy when every row is one: the usual trace of kernels)."""
    wanted = pl.col("kind").is_in(list(kinds))
    if df.height == 0 or df.select(wanted.all()).item():
        return df
    return df.filter(wanted)


def _kernel_facts_trace(fs: FactSet, prof: Profile, win) -> None:
    src = prof.source_name("gpu_trace")
    w = _in_window(prof.tables["gpu_trace"], win).select("name", "dur_ns", "kind")
    k = _of_kinds(w, ("kernel",))
    fs.put("kernel_count", k.height, src)
    # the small-launch share counts a CUDA graph execution as one launch (its kernels are not
    # itemized); graphs never enter the kernel count, the median or the kernel table
    units = _of_kinds(w, timeline.KERNEL_WORK) if k.height < w.height else k
    if units.height:
        fs.put("kernel_small_share_pct", _pct(float((units["dur_ns"] < SMALL_KERNEL_NS).sum()), units.height), src)
    if k.height == 0:
        return
    fs.put("kernel_median_us", float(k["dur_ns"].median()) / 1e3, src)
    per = (k.group_by("name").agg(pl.col("dur_ns").sum().alias("total_ns"), pl.len().alias("count"),
                                  pl.col("dur_ns").median().alias("med_ns"), pl.col("dur_ns").mean().alias("avg_ns"))
             .sort("total_ns", descending=True))
    _kernel_table(fs, per, src)


def _kernel_table(fs: FactSet, per: pl.DataFrame, src: str | None, suffix: str = "") -> None:
    """Kernel-class shares, kernel-scope facts and the report's top-kernel table from a per-name frame."""
    per = with_kernel_classes(per)
    tot = float(per["total_ns"].sum()) or 1.0
    shares = per.group_by("kernel_class").agg(pl.col("total_ns").sum())
    share = {c: float(t) / tot * 100 for c, t in shares.iter_rows()}
    fs.put("matmul_share_of_kernel_pct" + suffix, share.get("matmul", 0.0), src)
    fs.put("elementwise_share_of_kernel_pct" + suffix, share.get("elementwise", 0.0), src)
    fs.put("simt_gemm_share_of_kernel_pct" + suffix,
           float(per.filter(pl.col("simt"))["total_ns"].sum()) / tot * 100, src)
    if suffix:
        return
    rows = []
    for i, r in enumerate(per.head(KERNEL_FACT_LIMIT).iter_rows(named=True)):
        rows.append({"name": r["name"], "kernel_class": r["kernel_class"],
                     "time_share_pct": round(r["total_ns"] / tot * 100, 4), "total_ms": r["total_ns"] / 1e6,
                     "count": int(r["count"]), "median_us": (r["med_ns"] or 0) / 1e3,
                     "avg_us": (r["avg_ns"] or 0) / 1e3, "rank": i + 1})
    fs.kernels = rows
    fs.tables["top_kernels"] = rows[:10]
    fs.tables["top_kernels_source"] = src


def _memcpy_facts_trace(fs: FactSet, prof: Profile, win) -> None:
    src = prof.source_name("gpu_trace")
    gpu = prof.tables["gpu_trace"]
    copies = gpu.filter(pl.col("kind") == "memcpy")   # one pass over the trace; the rest works on the copies
    ops = timeline.ops_intervals(copies)
    copy = timeline.busy_by_device(ops, win.start_ns, win.end_ns, ("memcpy",))
    tot_busy = fs.tables["_busy_total"]
    tot_copy = sum(intervals.total(b) for b in copy.values())
    fs.put("memcpy_share_of_busy_pct", _pct(tot_copy, tot_busy) if tot_busy else 0.0, src)
    for fact, kinds in (("memcpy_host_share_of_busy_pct", ["HtoD", "DtoH", "HtoH"]), ("memcpy_dtod_share_of_busy_pct", ["DtoD", "PtoP"])):
        sel = ops.filter(pl.col("copy_kind").is_in(kinds))
        part = sum(intervals.total(b) for b in timeline.busy_by_device(sel, win.start_ns, win.end_ns).values())
        fs.put(fact, _pct(part, tot_busy) if tot_busy else 0.0, src)
    m = _in_window(copies, win)
    rows = []
    for direction, key in (("HtoD", "h2d"), ("DtoH", "d2h")):
        d = m.filter(pl.col("copy_kind") == direction)
        b = float(d["bytes"].fill_null(0).sum())
        t = float(d["dur_ns"].sum())
        fs.put(f"memcpy_{key}_mb", b / 1e6, src)
        if t > 0 and b > 0:
            fs.put(f"memcpy_{key}_gbps", b / t, src)  # bytes/ns == GB/s
    hd = m.filter(pl.col("copy_kind").is_in(["HtoD", "DtoH"]))
    if hd.height:
        pageable = hd.filter(pl.col("src_kind").str.to_lowercase().str.contains("pageable").fill_null(False)
                             | pl.col("dst_kind").str.to_lowercase().str.contains("pageable").fill_null(False))
        fs.put("memcpy_pageable_share_pct", _pct(float(pageable["dur_ns"].sum()), float(hd["dur_ns"].sum())), src)
    else:  # no host-device copies in the window: none of them is pageable
        fs.put("memcpy_pageable_share_pct", 0.0, src)
    if m.height:
        agg = (m.with_columns(pl.col("copy_kind").fill_null("other"),
                              (pl.col("src_kind").fill_null("") + "→" + pl.col("dst_kind").fill_null("")).alias("kinds"))
                .group_by("copy_kind").agg(pl.len().alias("count"), pl.col("bytes").fill_null(0).sum().alias("bytes"),
                                           pl.col("dur_ns").sum().alias("ns"), pl.col("kinds").mode().first().alias("kinds"))
                .sort("ns", descending=True))
        for r in agg.iter_rows(named=True):
            rows.append({"direction": r["copy_kind"], "count": r["count"], "mb": r["bytes"] / 1e6, "ms": r["ns"] / 1e6,
                         "gbps": (r["bytes"] / r["ns"]) if r["ns"] else None, "memory": r["kinds"]})
    fs.tables["memcpy"] = rows


def _nccl_facts_trace(fs: FactSet, prof: Profile, win) -> None:
    src = prof.source_name("gpu_trace")
    # graph executions are compute that NCCL kernels can overlap with (never NCCL kernels themselves)
    kin = _of_kinds(_in_window(prof.tables["gpu_trace"], win).select("name", "start_ns", "end_ns", "dur_ns",
                                                                       "device_id", "kind"), timeline.KERNEL_WORK)
    busy = fs.tables["_busy"]
    tot_busy = fs.tables["_busy_total"]
    classes = with_kernel_classes(kin.select(pl.col("name").unique()))
    nccl_names = classes.filter(pl.col("kernel_class") == "nccl")["name"]
    if nccl_names.len() == 0:  # the common single-GPU case: no communication, compute is all kernel work
        fs.put("nccl_kernel_count", 0, src)
        fs.put("nccl_share_of_busy_pct", 0.0, src)
        if "kernel_active_pct" in fs.run:
            fs.put("compute_active_pct", fs.run["kernel_active_pct"], src)
        fs.tables["_nccl_sequence"] = pl.DataFrame(schema={"name": pl.String, "dur_ns": pl.Int64})
        return
    k = kin.with_columns(pl.when(pl.col("name").is_in(nccl_names.implode())).then(pl.lit("nccl"))
                         .otherwise(pl.lit("other")).alias("cls"))
    nccl = k.filter(pl.col("cls") == "nccl")
    fs.put("nccl_kernel_count", nccl.height, src)
    # compute = kernel work that is not communication (what a straggler has more of)
    comp = [intervals.total(intervals.clip(intervals.merge(part.select(pl.col("start_ns").alias("s"),
                                                                      pl.col("end_ns").alias("e"))), win.start_ns, win.end_ns))
            for (_,), part in k.filter(pl.col("cls") != "nccl").partition_by("device_id", as_dict=True).items()]
    fs.put("compute_active_pct", _pct(sum(comp) / max(1, len(busy)), win.length_ns), src)
    # the collectives in order, for cross-rank comparison (the last rank to arrive waits least)
    fs.tables["_nccl_sequence"] = nccl.sort("start_ns").select(pl.col("name").cast(pl.String), "dur_ns")
    _shares, overl, exposed = [], 0, 0
    tot_nccl = 0
    for (dev,), part in k.partition_by("device_id", as_dict=True).items():
        iv = part.select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"), "cls")
        n_iv = intervals.clip(intervals.merge(iv.filter(pl.col("cls") == "nccl")), win.start_ns, win.end_ns)
        c_iv = intervals.clip(intervals.merge(iv.filter(pl.col("cls") != "nccl")), win.start_ns, win.end_ns)
        nt = intervals.total(n_iv)
        cov = int(intervals.coverage(n_iv, c_iv).sum()) if n_iv.height else 0
        tot_nccl += nt
        overl += cov
        exposed += nt - cov
    fs.put("nccl_share_of_busy_pct", _pct(tot_nccl, tot_busy), src)
    fs.put("nccl_overlap_pct", _pct(overl, tot_nccl), src)
    fs.put("nccl_exposed_pct", _pct(exposed / max(1, len(busy)), win.length_ns), src)


# ------------------------------------------------------------------------------------------- API
def _api_facts_trace(fs: FactSet, prof: Profile, win, timeline_ok: bool) -> None:
    api = prof.tables["api_trace"]
    gpu = prof.tables.get("gpu_trace")
    src = prof.source_name("api_trace")
    s, e, wlen = win.start_ns, win.end_ns, win.length_ns
    a, n_before = timeline.api_in_window(api, s, e)   # calls begun before the window come first
    masks = a.select(launch=pl.col("api").is_in(sorted(KERNEL_LAUNCH_APIS)),
                     sync=pl.col("api").is_in(sorted(SYNC_APIS | SYNC_MEM_APIS)))
    inside = a.slice(n_before)                         # the calls that begin inside the window
    m_in = masks.slice(n_before)
    launch = fs.tables["_host"]["launch"]              # merged once for every user (compute)
    # blocking calls of both kinds: synchronisations and synchronous copies
    sync = intervals.clip(intervals.merge(a.filter(masks["sync"]).select(pl.col("start_ns").alias("s"),
                                                                         pl.col("end_ns").alias("e"))), s, e)
    fs.put("launch_api_share_pct", _pct(intervals.total(launch), wlen), src)
    if timeline_ok:
        kt = _of_kinds(_in_window(gpu, win).select("dur_ns", "kind"), timeline.KERNEL_WORK)["dur_ns"].sum()
        lt = inside.filter(m_in["launch"])["dur_ns"].sum()
        if kt:
            fs.put("launch_to_kernel_time_ratio", float(lt) / float(kt), _srcs(src, prof.source_name("gpu_trace")))
    fs.put("sync_api_share_pct", _pct(intervals.total(sync), wlen), src)
    n_sync = int(m_in["sync"].sum())
    if fs.window and fs.window.iterations is not None:
        n_iter = fs.window.iterations.height - fs.window.skipped
        if n_iter > 0:
            fs.put("sync_calls_per_iter", n_sync / n_iter, src)
    if timeline_ok and "_busy" in fs.tables and sync.height:
        busy = fs.tables["_busy"]
        b = busy[min(busy)] if len(busy) == 1 else intervals.merge(pl.concat(list(busy.values())).select("s", "e"))
        covered = int(intervals.coverage(sync, b, fs.tables.get("_busy_cover") if len(busy) == 1 else None).sum())
        fs.put("sync_gpu_busy_pct", _pct(covered, intervals.total(sync)), _srcs(src, prof.source_name("gpu_trace")))
    # API time table for the report (window)
    t = (inside.group_by("api").agg(pl.col("dur_ns").sum().alias("ns"), pl.len().alias("count"), pl.col("dur_ns").median().alias("med"))
          .sort("ns", descending=True))
    tot = float(t["ns"].sum()) or 1.0
    fs.tables["api"] = [{"name": r["api"], "ms": r["ns"] / 1e6, "count": r["count"], "share_pct": r["ns"] / tot * 100,
                         "median_us": (r["med"] or 0) / 1e3} for r in t.head(10).iter_rows(named=True)]
    fs.tables["api_source"] = src


# ------------------------------------------------------------------------------------- summaries
def _summary_facts(fs: FactSet, prof: Profile, win) -> None:
    """Whole-profile facts from the summary reports; they are the window facts when the window is whole."""
    whole = win.source == "whole"
    span_ns = (win.span_end_ns - win.span_start_ns) if win.span_start_ns is not None and win.span_end_ns else None

    def put(name, value, table):
        fs.put(f"{name}_span", value, prof.source_name(table))
        if whole and name not in fs.run:
            fs.put(name, value, prof.source_name(table))

    ks = prof.tables.get("kern_sum")
    if ks is not None and ks.height:
        n = int(ks["count"].sum())
        put("kernel_count", n, "kern_sum")
        med_col = "med_ns" if "med_ns" in ks.columns else "avg_ns"
        small = int(ks.filter(pl.col(med_col) < SMALL_KERNEL_NS)["count"].sum())
        put("kernel_small_share_pct", _pct(small, n), "kern_sum")
        w = ks.sort(med_col)
        cum = w["count"].cum_sum()
        idx = int((cum >= n / 2).arg_max())
        put("kernel_median_us", float(w[med_col][idx]) / 1e3, "kern_sum")
        per = ks.select("name", "total_ns", "count", pl.col(med_col).alias("med_ns"), pl.col("avg_ns"))
        if whole or "top_kernels" not in fs.tables:
            if whole:
                _kernel_table(fs, per, prof.source_name("kern_sum"))
            else:
                fs.tables["top_kernels_span"] = [
                    {"name": r["name"], "total_ms": r["total_ns"] / 1e6, "count": r["count"], "avg_us": (r["avg_ns"] or 0) / 1e3}
                    for r in per.sort("total_ns", descending=True).head(10).iter_rows(named=True)]
        _kernel_table(fs, per, prof.source_name("kern_sum"), suffix="_span")
        nccl = ks.filter(pl.col("name").str.contains(r"(?i)^(void\s+)?nccl"))
        put("nccl_kernel_count", int(nccl["count"].sum()), "kern_sum")
        ms = prof.tables.get("mem_time_sum")
        busy_sum = float(ks["total_ns"].sum()) + (float(ms["total_ns"].sum()) if ms is not None else 0.0)
        put("nccl_share_of_busy_pct", _pct(float(nccl["total_ns"].sum()), busy_sum), "kern_sum")
    ms = prof.tables.get("mem_time_sum")
    if ms is not None:
        kt = float(ks["total_ns"].sum()) if ks is not None else None
        mt = float(ms.filter(pl.col("name").str.contains("(?i)memcpy"))["total_ns"].sum())
        if kt is not None:
            allm = kt + float(ms["total_ns"].sum())
            put("memcpy_share_of_busy_pct", _pct(mt, allm) or 0.0, "mem_time_sum")
            ck = ms.with_columns(copy_kind_expr().alias("ck"))
            put("memcpy_host_share_of_busy_pct",
                _pct(float(ck.filter(pl.col("ck").is_in(["HtoD", "DtoH", "HtoH"]))["total_ns"].sum()), allm) or 0.0, "mem_time_sum")
            put("memcpy_dtod_share_of_busy_pct",
                _pct(float(ck.filter(pl.col("ck").is_in(["DtoD", "PtoP"]))["total_ns"].sum()), allm) or 0.0, "mem_time_sum")
        sz = prof.tables.get("mem_size_sum")
        for direction, key in (("HtoD", "h2d"), ("DtoH", "d2h")):
            t = ms.with_columns(copy_kind_expr().alias("ck")).filter(pl.col("ck") == direction)
            tns = float(t["total_ns"].sum())
            if sz is not None:
                b = sz.with_columns(copy_kind_expr().alias("ck")).filter(pl.col("ck") == direction)
                bb = float(b["total_bytes"].sum())
                put(f"memcpy_{key}_mb", bb / 1e6, "mem_size_sum")
                if tns > 0 and bb > 0:
                    put(f"memcpy_{key}_gbps", bb / tns, "mem_size_sum")
    s = prof.tables.get("api_sum")
    if s is not None and s.height:
        launch = float(s.filter(base_expr("name").is_in(sorted(KERNEL_LAUNCH_APIS)))["total_ns"].sum())
        if ks is not None and ks.height and float(ks["total_ns"].sum()) > 0:
            put("launch_to_kernel_time_ratio", launch / float(ks["total_ns"].sum()), "api_sum")
        sync = s.filter(base_expr("name").is_in(sorted(SYNC_APIS | SYNC_MEM_APIS)))
        if span_ns:
            put("launch_api_share_pct", min(100.0, _pct(launch, span_ns)), "api_sum")
            put("sync_api_share_pct", min(100.0, _pct(float(sync["total_ns"].sum()), span_ns)), "api_sum")
        it = win.iterations
        if "sync_calls_per_iter" not in fs.run and it is not None and it.height >= 2 and "api_trace" not in prof.tables:
            # no API trace: whole-profile sync calls over all iterations (warm-up included), an approximation
            fs.put("sync_calls_per_iter", int(sync["count"].sum()) / it.height,
                   f"{prof.source_name('api_sum')} (whole profile) / {prof.source_name('nvtx_trace')} iterations")
        if "api" not in fs.tables:
            tot = float(s["total_ns"].sum()) or 1.0
            fs.tables["api"] = [{"name": r["base_name"], "ms": r["total_ns"] / 1e6, "count": r["count"],
                                 "share_pct": r["total_ns"] / tot * 100, "median_us": (r.get("med_ns") or r.get("avg_ns") or 0) / 1e3}
                                for r in s.sort("total_ns", descending=True).head(10).iter_rows(named=True)]
            fs.tables["api_source"] = prof.source_name("api_sum") + " (whole profile)"
    if "top_kernels" not in fs.tables and "top_kernels_span" in fs.tables:
        fs.tables["top_kernels"] = fs.tables.pop("top_kernels_span")
        fs.tables["top_kernels_source"] = f"{prof.source_name('kern_sum')} (whole profile)"


# ------------------------------------------------------------------------------------ iterations
def _iteration_ends(prof: Profile, win) -> list[int]:
    """When each iteration was really done: the later of its host range end and the end of the GPU
    work it launched (matched by correlation id; without the API trace, by GPU start time)."""
    it = win.iterations
    starts = it["s"].to_list()
    host_end = it["e"].to_list()
    gpu = prof.tables.get("gpu_trace")
    gend = [None] * len(starts)
    if gpu is not None and gpu.height:
        marks = pl.Series("t", starts, dtype=pl.Int64)   # iteration starts, sorted
        # the iteration each operation was launched in: the last start at or before its launch time
        if "launch_iter" in gpu.columns:   # timeline.with_launch_times found it on the API side
            ops = gpu.select("end_ns", pl.col("launch_iter").alias("i"))
        else:
            t = gpu["launch_s"] if "launch_s" in gpu.columns else gpu["start_ns"]
            ops = pl.DataFrame({"end_ns": gpu["end_ns"], "i": timeline.iteration_of(t, marks)})
        for i, e in ops.filter(pl.col("i") >= 0).group_by("i").agg(pl.col("end_ns").max()).iter_rows():
            gend[int(i)] = int(e)
    ends, run = [], None
    for i in range(len(starts)):
        e = max(host_end[i], gend[i] or host_end[i])
        run = e if run is None else max(run, e)
        ends.append(run)
    return ends


def _iteration_facts(fs: FactSet, prof: Profile, win, timeline_ok: bool, graph_hidden: bool = False) -> None:
    it = win.iterations
    if it is None or it.height < 2:
        return
    if graph_hidden:  # the GPU work of each iteration is not in the trace: its time would be host-only
        fs.put("iter_count", max(0, it.height - win.skipped), prof.source_name("nvtx_trace"))
        for k in ("iter_median_ms", "iter_max_over_median", "first_iter_over_median"):
            fs.absent[k] = "the iterations' CUDA graph work is not in the GPU trace (host time only)"
        return
    src = prof.source_name("nvtx_trace")
    starts = it["s"].to_list()
    ends = _iteration_ends(prof, win)
    # iteration i lasts from the completion of i-1 (its own start for the first) to its completion
    dur = [ends[0] - starts[0]] + [ends[i] - ends[i - 1] for i in range(1, len(ends))]
    begin = [starts[0]] + ends[:-1]
    steady = dur[win.skipped:] if win.skipped < len(dur) else dur
    if not steady:
        return
    srt = sorted(steady)
    mid = len(srt) // 2
    med = srt[mid] if len(srt) % 2 else (srt[mid - 1] + srt[mid]) / 2
    fs.put("iter_count", len(steady), src)
    fs.put("iter_median_ms", med / 1e6, src)
    if med > 0:
        fs.put("iter_max_over_median", max(steady) / med, src)
        if win.skipped >= 1:
            fs.put("first_iter_over_median", dur[0] / med, src)
    busy = fs.tables.get("_busy")
    b = busy[min(busy)] if busy and len(busy) == 1 else None
    iv = pl.DataFrame({"s": begin, "e": ends}, schema={"s": pl.Int64, "e": pl.Int64})
    cov = intervals.coverage(iv, b, fs.tables.get("_busy_cover")).to_list() if b is not None else [None] * len(starts)
    fs.tables["iterations"] = [
        {"index": i + 1, "ms": dur[i] / 1e6, "gpu_busy_pct": _pct(cov[i], dur[i]) if cov[i] is not None else None,
         "warmup": i < win.skipped} for i in range(len(starts))]


# ------------------------------------------------------------------------------------------ NVTX
def _nvtx_facts(fs: FactSet, prof: Profile, win) -> None:
    nvtx = prof.tables.get("nvtx_trace")
    wlen = win.length_ns
    if nvtx is not None and nvtx.height and wlen:
        src = prof.source_name("nvtx_trace")
        n = nvtx.filter((pl.col("end_ns") > win.start_ns) & (pl.col("start_ns") < win.end_ns))
        fs.put("nccl_api_calls", n.filter(pl.col("name").str.starts_with("NCCL:") & ~pl.col("name").str.contains("(?i)comm|group"))
               .height, src)
        data = timeline.data_ranges(n, win.start_ns, win.end_ns)
        fs.put("data_range_share_pct", _pct(intervals.total(data), wlen), src)
        iter_name = win.source.split(":", 1)[1] if win.source.startswith("nvtx:") else None
        # time covered by each range name (nested or overlapping instances counted once), in one
        # vectorised pass: PyTorch's emit_nvtx gives tens of thousands of distinct names
        iv = intervals.clip(intervals.merge(n.select("name", pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e")),
                                            by="name"), win.start_ns, win.end_ns)
        per = (iv.group_by("name").agg((pl.col("e") - pl.col("s")).sum().alias("t"))
                 .join(n.group_by("name").agg(pl.len().alias("count")), on="name", how="left")
                 .sort(["t", "name"], descending=[True, False]))
        rows = [{"name": r["name"], "count": int(r["count"]), "ms": r["t"] / 1e6, "share_pct": _pct(r["t"], wlen)}
                for r in per.iter_rows(named=True)]
        fs.tables["nvtx"] = rows[:10]
        others = [r for r in rows if r["name"] != iter_name and not r["name"].startswith(LIBRARY_DOMAINS)]
        if others:
            fs.put("nvtx_top_range_share_pct", others[0]["share_pct"], src)
        else:
            fs.put("nvtx_top_range_share_pct", 0.0, src)
        return
    table = "nvtx_sum" if "nvtx_sum" in prof.tables else "nvtx_pushpop_sum"
    ns = prof.tables.get(table)
    if ns is not None and ns.height:
        src = prof.source_name(table)
        span = (win.span_end_ns - win.span_start_ns) if win.span_start_ns is not None and win.span_end_ns else None
        n_nccl = int(ns.filter(pl.col("name").str.starts_with("NCCL:")
                               & ~pl.col("name").str.contains("(?i)comm|group"))["count"].sum())
        fs.put("nccl_api_calls_span", n_nccl, src)
        if win.source == "whole":
            fs.put("nccl_api_calls", n_nccl, src)
        if span:
            d = float(ns.filter(pl.col("name").str.contains(DATA_RANGE))["total_ns"].sum())
            fs.put("data_range_share_pct_span", min(100.0, _pct(d, span)), src)


def _osrt_facts(fs: FactSet, prof: Profile) -> None:
    o = prof.tables.get("osrt_sum")
    if o is None:
        return
    io = o.filter(pl.col("name").is_in(sorted(OSRT_IO)))
    fs.put("osrt_io_ms", float(io["total_ns"].sum()) / 1e6, prof.source_name("osrt_sum"))


def _absent(fs: FactSet, prof: Profile) -> None:
    """Say why each registered run fact is missing (for 'not evaluated')."""
    have_tables = set(prof.tables)
    for name, f in registry.RUN_FACTS.items():
        if name in fs.run or name in fs.absent:
            continue
        if not any(n in have_tables for n in f.needs):
            fs.absent[name] = "needs " + " or ".join(registry.INPUTS.get(n, n) for n in f.needs)
        elif f"{name}_span" in fs.run:
            fs.absent[name] = (f"only the whole-profile value is known from the summary reports "
                               f"({name}_span = {fs.run[name + '_span']}); export " +
                               " and ".join(registry.INPUTS.get(n, n) for n in f.needs if n.endswith("trace"))
                               + " for the steady-state value")
        elif f.needs == ("nvtx_trace",) and "nvtx_trace" in have_tables and (
                fs.window is None or fs.window.iterations is None or fs.window.iterations.height < 2):
            fs.absent[name] = ("no repeated top-level NVTX range marks the iterations: wrap each step in one "
                               "(torch.cuda.nvtx.range_push('step') ... range_pop())")
        else:
            fs.absent[name] = ("needs " + " or ".join(registry.INPUTS.get(n, n) for n in f.needs if n not in have_tables)
                               if any(n not in have_tables for n in f.needs) else "not computable from these inputs")
