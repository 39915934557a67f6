"""GPU metrics facts: what the GPU's own counters say over the window, per iteration and per hot kernel.

The loader (``load/gpu_metrics.py``) gives time bins of nsys's GPU metrics samples (``sum`` of the
values and ``n`` samples per bin, device and metric). Every number here is a time-weighted mean:
a bin counts with the share of it that lies inside the intervals asked about (the window, an
iteration, a kernel's launches), times its samples, so bins cut by the window edge or thinned by a
sampling hiccup weigh what they hold. Values are % of the GPU's peak (nsys's "[Throughput %]").

Facts over the window are the mean over the devices (as ``gpu_active_pct``); ``fs.tables
["gpu_metrics"]`` keeps each device's row. ``gm_dram_pct`` is read + write bandwidth: both are
shares of the one DRAM peak (the ``memory_bound`` case: 44.2 + 44.2 = 88 %, where Nsight Compute
measures DRAM throughput ~88 % on its kernels).

Per hot kernel (the top kernels of the window): the same means over the union of that kernel's
launches, and a verdict (memory, tensor, compute, underfilled, mixed). A kernel shorter than two
sampling periods shares its samples with its neighbours: it gets no verdict. Where Nsight Compute
measured the kernel, ncu's class is the verdict and the row says so.
"""
from __future__ import annotations

import polars as pl

from . import intervals, timeline
from .base import Context, in_window
from .declare import fact, group, has

# fact name (without gm_ prefix and _pct) -> loader metric keys (summed: DRAM read + write)
WINDOW_FACTS = {
    "sm_active": ("sm_active",), "sm_issue": ("sm_issue",), "tensor_active": ("tensor_active",),
    "dram_read": ("dram_read",), "dram_write": ("dram_write",), "dram": ("dram_read", "dram_write"),
    "pcie_rx": ("pcie_rx",), "pcie_tx": ("pcie_tx",), "nvlink_rx": ("nvlink_rx",), "nvlink_tx": ("nvlink_tx",),
    "gr_active": ("gr_active",),
}
KERNEL_LIMIT = 10
# verdict thresholds (% of peak): the same numbers the rules use by default
MEMORY_DRAM_PCT, TENSOR_PCT, ISSUE_PCT, UNDERFILLED_SM_PCT = 60.0, 50.0, 50.0, 50.0


def means(gm: pl.DataFrame, cover: pl.DataFrame, keys: tuple[str, ...]) -> float | None:
    """Time-weighted mean of ``sum(keys)`` over the (merged, disjoint, sorted) ``cover`` set; None
    when no sample lies under it. ``gm``: one device's bins."""
    total = None
    for k in keys:
        b = gm.filter(pl.col("metric") == k)
        if b.height == 0:
            return None
        frac = intervals.coverage(b, cover) / (b["e"] - b["s"])
        w = (frac * b["n"]).sum()
        if not w:
            return None
        v = float((frac * b["sum"]).sum() / w)
        total = v if total is None else total + v
    return total


def _iv(s: list[int], e: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"s": s, "e": e}, schema={"s": pl.Int64, "e": pl.Int64})


def compute(ctx: Context) -> None:
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    gm = prof.tables["gpu_metrics"]
    src = prof.source_name("gpu_metrics")
    meta = prof.meta.get("gpu_metrics", {})
    window = _iv([int(win.start_ns)], [int(win.end_ns)])
    devs = sorted(gm["device_id"].unique().to_list())
    by_dev = {d: gm.filter(pl.col("device_id") == d) for d in devs}
    rows = []
    for d in devs:
        row = {"device": d}
        for name, keys in WINDOW_FACTS.items():
            row[name] = means(by_dev[d], window, keys)
        rows.append(row)
    # devices whose metrics were sampled but that ran nothing in the window still count: a mean over
    # the GPUs, as gpu_active_pct
    for name in WINDOW_FACTS:
        vals = [r[name] for r in rows if r[name] is not None]
        if vals:
            fs.put(f"gm_{name}_pct", sum(vals) / len(vals), src)
    fs.tables["gpu_metrics"] = {"devices": rows, "metrics": meta.get("metrics", {}),
                                "missing": meta.get("missing", []), "period_us": (meta.get("period_ns") or 0) / 1e3,
                                "bin_us": (meta.get("bin_ns") or 0) / 1e3, "source": src}
    if ctx.timeline_ok:
        _busy_facts(ctx, by_dev, src)
        _kernels(ctx, by_dev, meta, src)
    _iterations(ctx, by_dev)


def _busy_facts(ctx: Context, by_dev: dict, src: str | None) -> None:
    """SM activity while a kernel runs, and PCIe while a host-device copy runs."""
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    ops = timeline.ops_intervals(fs.work.gpu_trace(prof))
    kern = timeline.busy_by_device(ops, win.start_ns, win.end_ns, timeline.KERNEL_WORK)
    vals = [v for d, iv in kern.items() if d in by_dev and iv.height
            and (v := means(by_dev[d], iv.select("s", "e"), ("sm_active",))) is not None]
    if vals:
        fs.put("gm_sm_active_busy_pct", sum(vals) / len(vals), src)
    copies = ops.filter(pl.col("copy_kind").is_in(["HtoD", "DtoH"]) & (pl.col("e") > win.start_ns)
                        & (pl.col("s") < win.end_ns))
    fs.tables["gpu_metrics"]["copies"] = copies.height > 0
    if copies.height == 0:
        fs.put("gm_pcie_copy_pct", 0.0, src)   # no host-device copy in the window: none saturates the link
    else:
        # each direction against its own half of the link while it runs: the GPU receives (RX) during
        # host-to-device copies and transmits (TX) during device-to-host ones; copies that alternate
        # would halve a both-directions average (a real pinned H2D/D2H loop: 50 % vs 87 % per direction)
        best = []
        for kind, metric in (("HtoD", "pcie_rx"), ("DtoH", "pcie_tx")):
            cp = timeline.busy_by_device(copies.filter(pl.col("copy_kind") == kind), win.start_ns, win.end_ns)
            for d, iv in cp.items():
                if d in by_dev and iv.height:
                    v = means(by_dev[d], iv.select("s", "e"), (metric,))
                    if v is not None:
                        best.append(v)
        if best:
            fs.put("gm_pcie_copy_pct", max(best), src)


def verdict(dram: float | None, tensor: float | None, issue: float | None, sm: float | None) -> str:
    if dram is not None and dram >= MEMORY_DRAM_PCT:
        return "memory"
    if tensor is not None and tensor >= TENSOR_PCT:
        return "tensor"
    if issue is not None and issue >= ISSUE_PCT:
        return "compute"
    if sm is not None and sm < UNDERFILLED_SM_PCT:
        return "underfilled"
    return "mixed"


def _kernels(ctx: Context, by_dev: dict, meta: dict, src: str | None) -> None:
    """The hot kernels' metric means and verdicts (``fs.kernels`` rows and ``gpu_metrics_kernels``)."""
    fs, prof, win = ctx.fs, ctx.prof, ctx.win
    top = [k for k in fs.kernels if k.get("total_ms") is not None][:KERNEL_LIMIT]
    if not top:
        return
    period = float(meta.get("period_ns") or 0)
    gpu = in_window(fs.work.gpu_trace(prof), win)
    names = [k["name"] for k in top]
    k = gpu.filter(pl.col("kind") == "kernel").with_columns(pl.col("name").cast(pl.String)) \
           .filter(pl.col("name").is_in(names)).select(pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"),
                                                       "device_id", "name")
    parts = k.partition_by("name", as_dict=True)
    table = []
    for row in top:
        iv = parts.get((row["name"],))
        if iv is None:
            continue
        vals: dict[str, list[float]] = {}
        for d, one in iv.partition_by("device_id", as_dict=True).items():
            if d[0] not in by_dev:
                continue
            cover = intervals.merge(one.select("s", "e").sort("s"))
            for name, keys in (("sm_active", ("sm_active",)), ("sm_issue", ("sm_issue",)),
                               ("tensor_active", ("tensor_active",)), ("dram", ("dram_read", "dram_write"))):
                v = means(by_dev[d[0]], cover, keys)
                if v is not None:
                    vals.setdefault(name, []).append(v)
        if not vals:
            continue
        m = {n: sum(v) / len(v) for n, v in vals.items()}
        for n, v in m.items():
            row[f"gm_{n}_pct"] = round(v, 2)
        short = period and (row.get("median_us") or 0) * 1e3 < 2 * period
        ncu_class = row.get("bound_class")
        if ncu_class:
            row["gm_verdict"], by = str(ncu_class), "ncu"
        elif short:
            row["gm_verdict"], by = None, "shorter than two sampling periods"
        else:
            row["gm_verdict"], by = verdict(m.get("dram"), m.get("tensor_active"), m.get("sm_issue"),
                                            m.get("sm_active")), "gpu metrics"
        table.append({"name": row["name"], "time_share_pct": row.get("time_share_pct"),
                      **{n: m.get(n) for n in ("sm_active", "sm_issue", "tensor_active", "dram")},
                      "verdict": row["gm_verdict"], "by": by})
    if table:
        fs.tables["gpu_metrics_kernels"] = table
        fs.tables["gpu_metrics_kernels_source"] = src


def _iterations(ctx: Context, by_dev: dict) -> None:
    """Per iteration (completion to completion, as ``fs.tables["iterations"]``): the means of the
    first device (``gm_*`` keys added to each iteration row)."""
    fs, win = ctx.fs, ctx.win
    rows = fs.tables.get("iterations") or []
    it = win.iterations
    if not rows or it is None or it.height != len(rows) or not by_dev:
        return
    gm = by_dev[min(by_dev)]
    t = int(it["s"][0])
    for r in rows:
        e = t + int(round(r["ms"] * 1e6))
        cover = _iv([t], [e])
        for name, keys in (("sm_active", ("sm_active",)), ("tensor_active", ("tensor_active",)),
                           ("dram", ("dram_read", "dram_write"))):
            v = means(gm, cover, keys)
            if v is not None:
                r[f"gm_{name}_pct"] = round(v, 2)
        t = e


def series(gm: pl.DataFrame | None, starts: list[int], widths: list[int]) -> dict | None:
    """The chart lines over the report's timeline bins: SM active, tensor active, DRAM (read + write)
    per bin, mean over devices (None in a bin with no sample)."""
    if gm is None or gm.height == 0 or not starts:
        return None
    out = {}
    devs = sorted(gm["device_id"].unique().to_list())
    for name, keys in (("sm_active", ("sm_active",)), ("tensor_active", ("tensor_active",)),
                       ("dram", ("dram_read", "dram_write"))):
        per_dev = []
        for d in devs:
            g = gm.filter(pl.col("device_id") == d)
            acc = None
            for k in keys:
                v = _binned(g.filter(pl.col("metric") == k), starts, widths)
                if v is None:
                    acc = None
                    break
                acc = v if acc is None else [None if a is None or b is None else a + b for a, b in zip(acc, v)]
            if acc is not None:
                per_dev.append(acc)
        if per_dev:
            out[name] = [None if any(x[i] is None for x in per_dev) else round(sum(x[i] for x in per_dev) / len(per_dev), 2)
                         for i in range(len(starts))]
    return out or None


def _binned(b: pl.DataFrame, starts: list[int], widths: list[int]) -> list[float | None] | None:
    """Mean of one metric's bins in each chart bin (weighted by overlap and samples)."""
    if b.height == 0:
        return None
    chart = pl.DataFrame({"cs": starts, "ce": [s + w for s, w in zip(starts, widths)]},
                         schema={"cs": pl.Int64, "ce": pl.Int64}).with_row_index("i")
    # each metric bin is cut by the chart bins it overlaps (metric bins are at most a few ms, chart
    # bins a few hundred: a join on the chart bin index of the bin's start and end)
    edges = pl.Series(starts, dtype=pl.Int64)
    bb = b.with_columns(pl.Series("i0", edges.search_sorted(b["s"], side="right") - 1),
                        pl.Series("i1", edges.search_sorted(b["e"], side="right") - 1))
    bb = bb.with_columns(pl.int_ranges(pl.col("i0").clip(lower_bound=0), pl.col("i1").clip(lower_bound=0) + 1).alias("i")) \
           .explode("i").with_columns(pl.col("i").cast(pl.UInt32))
    j = bb.join(chart, on="i", how="inner")
    frac = ((pl.min_horizontal("e", "ce") - pl.max_horizontal("s", "cs")).clip(lower_bound=0)
            / (pl.col("e") - pl.col("s")))
    agg = j.group_by("i").agg((frac * pl.col("sum")).sum().alias("v"), (frac * pl.col("n")).sum().alias("w"))
    got = {int(i): (v / w if w else None) for i, v, w in agg.iter_rows()}
    return [got.get(i) for i in range(len(starts))]


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("gm_sm_active_pct", "%", "SMs active (SM Active / SMs Active metric) over the window", ("gpu_metrics",)),
    fact("gm_sm_issue_pct", "%", "SM instruction issue throughput over the window", ("gpu_metrics",)),
    fact("gm_tensor_active_pct", "%", "tensor pipe active over the window", ("gpu_metrics",)),
    fact("gm_dram_read_pct", "%", "DRAM read bandwidth over the window, % of peak", ("gpu_metrics",)),
    fact("gm_dram_write_pct", "%", "DRAM write bandwidth over the window, % of peak", ("gpu_metrics",)),
    fact("gm_dram_pct", "%", "DRAM bandwidth (read + write) over the window, % of peak", ("gpu_metrics",)),
    fact("gm_pcie_rx_pct", "%", "PCIe receive throughput over the window, % of peak", ("gpu_metrics",)),
    fact("gm_pcie_tx_pct", "%", "PCIe transmit throughput over the window, % of peak", ("gpu_metrics",)),
    fact("gm_nvlink_rx_pct", "%", "NVLink receive throughput over the window, % of peak", ("gpu_metrics",)),
    fact("gm_nvlink_tx_pct", "%", "NVLink transmit throughput over the window, % of peak", ("gpu_metrics",)),
    fact("gm_gr_active_pct", "%", "graphics / compute engine active (GR Active) over the window", ("gpu_metrics",)),
    fact("gm_sm_active_busy_pct", "%", "SMs active while a kernel runs (samples under the kernel union): low means kernels too small to fill the GPU", ("gpu_metrics",)),
    fact("gm_pcie_copy_pct", "%", "PCIe throughput in the copy's own direction while host-device copies run (RX under host-to-device, TX under device-to-host; the higher of the two), % of peak (0 when the window has no host-device copy)", ("gpu_metrics",)),
    fact("gm_sm_active_pct", "%", "SMs active while this kernel runs (GPU metrics samples)", ("gpu_metrics",), "kernel"),
    fact("gm_sm_issue_pct", "%", "SM issue throughput while this kernel runs", ("gpu_metrics",), "kernel"),
    fact("gm_tensor_active_pct", "%", "tensor pipe active while this kernel runs", ("gpu_metrics",), "kernel"),
    fact("gm_dram_pct", "%", "DRAM bandwidth (read + write) while this kernel runs, % of peak", ("gpu_metrics",), "kernel"),
    fact("gm_verdict", "", "memory / tensor / compute / underfilled / mixed from the samples (ncu's class where ncu measured the kernel)", ("gpu_metrics",), "kernel"),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    # after ncu: it reads the class ncu gave the kernels it measured (ncu's class wins for those)
    group("gpu_metrics", compute, has("gpu_metrics"),
          reads=("input:gpu_metrics", "kernel:bound_class", "kernel:median_us", "kernel:name", "kernel:time_share_pct",
                 "kernel:total_ms", "kernels", "table:iterations", "work:gpu"),
          puts=(FACTS, "table:gpu_metrics", "table:gpu_metrics_kernels", "table:gpu_metrics_kernels_source")),
]
