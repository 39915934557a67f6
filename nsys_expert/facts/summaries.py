"""Whole-profile facts from the summary reports (``_span``); they are the window facts when the window is whole."""
from __future__ import annotations

import polars as pl

from ..notes import Note
from ..load.normalize import copy_kind_expr
from . import api_oneoff
from .base import SMALL_KERNEL_NS, Context, pct
from .kernels import kernel_table
from .names import COPY_KERNEL, GRAPH_LAUNCH_APIS, KERNEL_LAUNCH_APIS, NCCL_KERNEL, SYNC_APIS, SYNC_MEM_APIS, base_expr
from .declare import fact, group


def compute(ctx: Context) -> None:
    """Whole-profile facts from the summary reports; they are the window facts when the window is whole."""
    noting = _Noting(ctx.fs)
    _compute(noting, ctx.prof, ctx.win)
    for k in dict.fromkeys(noting.added):   # every fact from a summary report rests on the whole profile
        ctx.fs.tiers[k] = "summary"


class _Noting:
    """The fact set as this group writes it: each fact it adds (one no group put before) is noted."""

    def __init__(self, fs) -> None:
        object.__setattr__(self, "_fs", fs)
        object.__setattr__(self, "added", [])

    def __getattr__(self, name):
        return getattr(self._fs, name)

    def __setattr__(self, name, value) -> None:     # fs.kernels = rows: the fact set's
        setattr(self._fs, name, value)

    def put(self, name: str, value, source: str | None, tier: str | None = None) -> None:
        had = name in self._fs.run
        self._fs.put(name, value, source, tier)
        if not had and name in self._fs.run:
            self.added.append(name)


def _compute(fs, prof, win) -> None:
    # the summaries stand for the window when it is the whole profile, or when no GPU trace can measure the
    # window (its steps marked by an NVTX trace alone, issue 56, item 8: the console text's kernel and API
    # summaries said "likely launch-bound"; the same summaries beside the NVTX and API traces left
    # launch-bound unevaluated, their facts whole-profile only, and said "likely gpu-starved")
    whole = win.source == "whole" or "gpu_trace" not in prof.tables
    span_ns = (win.span_end_ns - win.span_start_ns) if win.span_start_ns is not None and win.span_end_ns else None

    def put(name, value, table, steady=None):
        """``_span``: the whole profile, start-up included; the window fact (when the window is the whole
        profile) ``steady`` where given: without one-off API calls (api_oneoff.py)."""
        fs.put(f"{name}_span", value, prof.source_name(table))
        if whole and name not in fs.run:
            fs.put(name, value if steady is None else steady, prof.source_name(table))

    ks = prof.tables.get("kern_sum")
    if ks is not None and ks.height:
        _kernels(put, fs, prof, ks, whole)
    ms = prof.tables.get("mem_time_sum")
    if ms is not None:
        _copies(put, prof, ks, ms)
    _gpu_work(fs, prof, whole)
    s = prof.tables.get("api_sum")
    if s is not None and s.height:
        _api(put, fs, prof, win, ks, s, span_ns)
    if "top_kernels" not in fs.tables and "top_kernels_span" in fs.tables:
        fs.tables["top_kernels"] = fs.tables.pop("top_kernels_span")
        fs.tables["top_kernels_source"] = f"{prof.source_name('kern_sum')} (whole profile)"


def _kernels(put, fs, prof, ks: pl.DataFrame, whole: bool) -> None:
    """Kernel counts, the median, the kernel classes and the top-kernel table from cuda_gpu_kern_sum."""
    n = int(ks["count"].sum())
    put("kernel_count", n, "kern_sum")
    med_col = "med_ns" if "med_ns" in ks.columns else "avg_ns"
    small = int(ks.filter(pl.col(med_col) < SMALL_KERNEL_NS)["count"].sum())
    put("kernel_small_share_pct", pct(small, n), "kern_sum")
    w = ks.sort(med_col)
    cum = w["count"].cum_sum()
    idx = int((cum >= n / 2).arg_max())
    put("kernel_median_us", float(w[med_col][idx]) / 1e3, "kern_sum")
    per = ks.select("name", "total_ns", "count", pl.col(med_col).alias("med_ns"), pl.col("avg_ns"))
    if whole or "top_kernels" not in fs.tables:
        if whole:
            kernel_table(fs, per, prof.source_name("kern_sum"))
        else:
            fs.tables["top_kernels_span"] = [
                {"name": r["name"], "total_ms": r["total_ns"] / 1e6, "count": r["count"], "avg_us": (r["avg_ns"] or 0) / 1e3}
                for r in per.sort("total_ns", descending=True).head(10).iter_rows(named=True)]
    kernel_table(fs, per, prof.source_name("kern_sum"), suffix="_span")
    nccl = ks.filter(pl.col("name").cast(pl.String).str.contains(NCCL_KERNEL))   # the trace's class (names.py)
    put("nccl_kernel_count", int(nccl["count"].sum()), "kern_sum")
    ms = prof.tables.get("mem_time_sum")
    busy_sum = float(ks["total_ns"].sum()) + (float(ms["total_ns"].sum()) if ms is not None else 0.0)
    put("nccl_share_of_busy_pct", pct(float(nccl["total_ns"].sum()), busy_sum), "kern_sum")


def _copies(put, prof, ks: pl.DataFrame | None, ms: pl.DataFrame) -> None:
    """Copy shares of the GPU's busy time, the pinned-copy saving and the bytes and bandwidth per direction
    from cuda_gpu_mem_time_sum (and cuda_gpu_mem_size_sum)."""
    kt = float(ks["total_ns"].sum()) if ks is not None else None
    mt = float(ms.filter(pl.col("name").str.contains("(?i)memcpy"))["total_ns"].sum())
    if kt is not None:
        allm = kt + float(ms["total_ns"].sum())
        put("memcpy_share_of_busy_pct", pct(mt, allm) or 0.0, "mem_time_sum")
        ck = ms.with_columns(copy_kind_expr().alias("ck"))
        put("memcpy_host_share_of_busy_pct",
            pct(float(ck.filter(pl.col("ck").is_in(["HtoD", "DtoH", "HtoH"]))["total_ns"].sum()), allm) or 0.0, "mem_time_sum")
        put("memcpy_dtod_share_of_busy_pct",
            pct(float(ck.filter(pl.col("ck").is_in(["DtoD", "PtoP"]))["total_ns"].sum()), allm) or 0.0, "mem_time_sum")
        copyk = float(ks.filter(pl.col("name").cast(pl.String).str.contains(COPY_KERNEL))["total_ns"].sum())
        dtod = float(ck.filter(pl.col("ck").is_in(["DtoD", "PtoP"]))["total_ns"].sum())
        put("copy_kernel_share_of_busy_pct", pct(copyk, allm) or 0.0, "kern_sum")
        if kt:
            put("copy_kernel_share_of_kernel_pct", pct(copyk, kt), "kern_sum")
        put("device_copy_share_of_busy_pct", pct(copyk + dtod, allm) or 0.0, "mem_time_sum")
    sz = prof.tables.get("mem_size_sum")
    _pinned_saving(put, prof, ms, sz)
    for direction, key in (("HtoD", "h2d"), ("DtoH", "d2h")):
        t = ms.with_columns(copy_kind_expr().alias("ck")).filter(pl.col("ck") == direction)
        tns = float(t["total_ns"].sum())
        if sz is not None:
            b = sz.with_columns(copy_kind_expr().alias("ck")).filter(pl.col("ck") == direction)
            bb = float(b["total_bytes"].sum())
            put(f"memcpy_{key}_mb", bb / 1e6, "mem_size_sum")
            if tns > 0 and bb > 0:
                put(f"memcpy_{key}_gbps", bb / tns, "mem_size_sum")


def _api(put, fs, prof, win, ks: pl.DataFrame | None, s: pl.DataFrame, span_ns) -> None:
    """Launch and sync shares, syncs per iteration, host time by elimination and the API table from
    cuda_api_sum (the window facts without one-off start-up calls)."""
    st = api_oneoff.steady(s, prof)   # the times without one-off (start-up) calls, for the window facts

    def total(df, names):
        return float(df.filter(base_expr("name").is_in(sorted(names)))["total_ns"].sum())
    launch, st_launch = total(s, KERNEL_LAUNCH_APIS), total(st, KERNEL_LAUNCH_APIS)
    if ks is not None and ks.height and float(ks["total_ns"].sum()) > 0:
        kt = float(ks["total_ns"].sum())
        put("launch_to_kernel_time_ratio", launch / kt, "api_sum", steady=st_launch / kt)
    sync = s.filter(base_expr("name").is_in(sorted(SYNC_APIS | SYNC_MEM_APIS)))
    if span_ns:
        put("launch_api_share_pct", min(100.0, pct(launch, span_ns)), "api_sum", steady=min(100.0, pct(st_launch, span_ns)))
        put("sync_api_share_pct", min(100.0, pct(float(sync["total_ns"].sum()), span_ns)), "api_sum",
            steady=min(100.0, pct(total(st, SYNC_APIS | SYNC_MEM_APIS), span_ns)))
    it = win.iterations
    if "sync_calls_per_iter" not in fs.run and it is not None and it.height >= 2 and "api_trace" not in prof.tables:
        # no API trace: whole-profile sync calls over all iterations (warm-up included), an approximation
        fs.put("sync_calls_per_iter", int(sync["count"].sum()) / it.height,
               f"{prof.source_name('api_sum')} (whole profile) / {prof.source_name('nvtx_trace')} iterations")
    _host_by_elimination(fs, prof, win, float(s["total_ns"].sum()))
    if "api" not in fs.tables:
        tot = float(s["total_ns"].sum()) or 1.0
        fs.tables["api"] = [{"name": r["base_name"], "ms": r["total_ns"] / 1e6, "count": r["count"],
                             "share_pct": r["total_ns"] / tot * 100, "median_us": (r.get("med_ns") or r.get("avg_ns") or 0) / 1e3}
                            for r in s.sort("total_ns", descending=True).head(10).iter_rows(named=True)]
        fs.tables["api_source"] = prof.source_name("api_sum") + " (whole profile)"


def _gpu_work(fs, prof, whole: bool) -> None:
    """``gpu_work_ms``: all the GPU's work in the summaries (kernels + copies + memsets, cuda_gpu_kern_sum +
    cuda_gpu_mem_time_sum, else cuda_gpu_sum), what the minimum-work guard (engine/resolve.py) weighs
    when no trace measures the busy time. CUDA graph launches: the summaries leave the graphs' kernels
    out (--cuda-graph-trace=graph), so the work is unknown."""
    work, tables = api_oneoff.gpu_work_tables(prof)
    if not tables:
        return
    s = prof.tables.get("api_sum")
    if s is not None and s.height and int(s.filter(base_expr("name").is_in(sorted(GRAPH_LAUNCH_APIS)))["count"].sum()):
        fs.absent.setdefault("gpu_work_ms", Note("absent.graph_summaries"))
        return
    src = " + ".join(tables)
    fs.put("gpu_work_ms_span", work / 1e6, src)
    if whole and "gpu_work_ms" not in fs.run:
        fs.put("gpu_work_ms", work / 1e6, src)


def _host_by_elimination(fs, prof, win, api_ns: float) -> None:
    """No API trace, but the GPU trace and the API summary: the window's idle time in gaps of 100 us or
    more minus every CUDA API
    call of the whole profile (all threads, start-up included: as if all of them fell into the idle
    gaps) is idle time the host certainly spent outside CUDA, with nothing queued: a lower bound. The idle
    time that must lie inside data-loading NVTX ranges (``gpu_idle_data_phase_pct``) is left out too: it is
    input work (data-io-bound), not other host code."""
    if "api_trace" in prof.tables or "gpu_idle_pct" not in fs.run or not win.length_ns:
        return
    # gaps under 100 us are launch gaps (launch-bound's), whatever the host did: left out
    idle = fs.run["gpu_idle_pct"] - (fs.run.get("gpu_idle_short_gaps_pct") or 0.0)
    api_pct = min(100.0, pct(api_ns, win.length_ns))
    src = f"{prof.source_name('gpu_trace')} + {prof.source_name('api_sum')}"
    # idle time that must lie inside data-loading NVTX ranges (facts/phases.py) is input work: data-io-bound's
    data = fs.run.get("gpu_idle_data_phase_pct") or 0.0
    if data:
        src += " + " + (fs.sources.get("gpu_idle_data_phase_pct") or "").split(" + ")[-1]
    fs.put("cuda_api_total_ms", api_ns / 1e6, prof.source_name("api_sum"))
    fs.put("gpu_idle_host_elim_pct", max(0.0, idle - api_pct - data), src)


def _pinned_saving(put, prof, ms: pl.DataFrame, sz: pl.DataFrame | None) -> None:
    """The share of the host-device copy time that copies at the pinned bandwidth would save (the replay's
    pinned-copies transformation in closed form, for the summaries): per direction, time minus bytes / the
    GPU's pinned bandwidth (facts/replay.yaml), when the copies ran slower than that."""
    if sz is None or not ms.height:
        return
    from .replay import table_gbps

    gpus = (getattr(prof, "meta", None) or {}).get("gpus") or [{}]
    bw = table_gbps(gpus[0].get("name"))
    total = saved = 0.0
    for direction in ("HtoD", "DtoH"):
        t = float(ms.with_columns(copy_kind_expr().alias("ck")).filter(pl.col("ck") == direction)["total_ns"].sum())
        b = float(sz.with_columns(copy_kind_expr().alias("ck")).filter(pl.col("ck") == direction)["total_bytes"].sum())
        total += t
        if t > 0 and b > 0:
            saved += max(0.0, t - b / bw)
    if total > 0:
        put("memcpy_pinned_saving_pct", 100.0 * saved / total, "mem_size_sum")


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("gpu_idle_host_elim_pct", "%", "without an API trace, host time by elimination: idle share of the window in gaps of 100 us or more minus every CUDA API call of the profile (api_sum, all threads) as a share of it; a lower bound of the idle time the host spent outside CUDA (with the cuda_api_sum report)"),
    fact("cuda_api_total_ms", "ms", "time in CUDA API calls over the whole profile, all threads (cuda_api_sum)", ("api_sum",)),
    fact("memcpy_pinned_saving_pct", "%", "share of the host-device copy time that copies at the GPU's pinned bandwidth (facts/replay.yaml) would save: per direction, time minus bytes / bandwidth (with the cuda_gpu_mem_size_sum report)", ("mem_time_sum", "mem_size_sum")),
    fact("gpu_work_ms", "ms", "all the GPU's work in the summaries: kernel + copy + memset time (cuda_gpu_kern_sum + cuda_gpu_mem_time_sum, else cuda_gpu_sum)", ("kern_sum", "gpu_sum")),
]

# the trace groups' facts this group may fill (their whole-profile value, or the window's when the window is
# the whole profile and no trace measured it)
FILLS = (
    "fact:conv_share_of_kernel_pct", "fact:copy_kernel_share_of_busy_pct", "fact:copy_kernel_share_of_kernel_pct",
    "fact:device_copy_share_of_busy_pct", "fact:elementwise_fused_share_of_kernel_pct",
    "fact:elementwise_share_of_kernel_pct", "fact:kernel_count", "fact:kernel_median_us",
    "fact:kernel_small_share_pct", "fact:launch_api_share_pct", "fact:launch_to_kernel_time_ratio",
    "fact:layout_convert_share_of_kernel_pct", "fact:matmul_share_of_kernel_pct", "fact:memcpy_d2h_gbps",
    "fact:memcpy_d2h_mb", "fact:memcpy_dtod_share_of_busy_pct", "fact:memcpy_h2d_gbps", "fact:memcpy_h2d_mb",
    "fact:memcpy_host_share_of_busy_pct", "fact:memcpy_share_of_busy_pct", "fact:misaligned_gemm_share_of_kernel_pct",
    "fact:nccl_kernel_count",
    "fact:nccl_share_of_busy_pct", "fact:nchw_kernel_share_of_kernel_pct", "fact:simt_gemm_share_of_kernel_pct",
    "fact:sync_api_share_pct", "fact:sync_calls_per_iter",
)

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    # it fills what the trace's groups could not: it reads each fact it may fill, so it runs after the groups
    # that put them
    group("summaries", compute,
          reads=(FILLS, "fact:gpu_idle_data_phase_pct", "fact:gpu_idle_pct", "fact:gpu_idle_short_gaps_pct",
                 "input:api_sum", "input:api_trace", "input:gpu_trace", "input:kern_sum", "input:mem_size_sum",
                 "input:mem_time_sum",
                 "table:api", "table:top_kernels"),
          puts=(FACTS, FILLS, "kernels", "table:api", "table:api_source", "table:top_kernels", "table:top_kernels_source",
                "table:top_kernels_span")),
]
