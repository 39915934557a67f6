"""Kernel facts from Nsight Compute, joined with the nsys kernels of the same run.

``attach(fs, prof)`` runs at the end of ``facts.compute``:
- every profiled launch gets its metrics by name: a details-page label keyed by (section, label)
  (``Memory Throughput`` is % in SpeedOfLight and byte/s in MemoryWorkloadAnalysis) or a raw metric
  name (raw page, ``--metrics`` rows); launches of one kernel are reduced to their median;
- ncu's own rule rows (guided analysis: name, OPT / INF / WRN, estimated speedup) are kept per
  kernel, as a text summary and as the largest global speedup per theme;
- each ncu kernel is joined to the nsys kernel of the same name (ncu prints simplified names:
  namespaces and ``(int)`` casts dropped, ``(T1::Params)`` as ``(Params)``; input-formats.md 2.5):
  exact name, then the name with namespaces and casts removed on both sides, then the bare function
  name when it is unambiguous on both sides. A matched kernel's nsys fact (share of GPU time,
  count, total) gets the ncu facts; an unmatched ncu kernel becomes a kernel fact of its own
  (``nsys_matched: false``) and is named in a warning, never dropped;
- without ncu data, the ncu facts are absent and the reason names the exact ncu command for the
  top kernels by nsys time, so "not evaluated" says what to run.
Kernel facts are plain scalars (the engine drops dicts and lists); the rule rows in full go to
``fs.tables["ncu_kernels"]`` for the report.
"""
from __future__ import annotations

import math
import re
from collections import Counter

import polars as pl

from ..load import Profile
from . import ncu_units
from .names import kernel_class_expr, simt_gemm_expr

# fact -> candidate metrics in order of preference: "Section|Label" (details page, section identifier)
# or a raw metric name (raw page, --metrics rows); scale converts the canonical unit of the loader.
_M = [
    ("sm_throughput_pct", ["SpeedOfLight|Compute (SM) Throughput", "SpeedOfLight|SOL SM",
                           "sm__throughput.avg.pct_of_peak_sustained_elapsed"], 1.0),
    ("memory_throughput_pct", ["SpeedOfLight|Memory Throughput",
                               "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"], 1.0),
    ("dram_throughput_pct", ["SpeedOfLight|DRAM Throughput", "SpeedOfLight|SOL FB",
                             "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                             "dram__throughput.avg.pct_of_peak_sustained_elapsed"], 1.0),
    ("l1_throughput_pct", ["SpeedOfLight|L1/TEX Cache Throughput", "l1tex__throughput.avg.pct_of_peak_sustained_active"], 1.0),
    ("l2_throughput_pct", ["SpeedOfLight|L2 Cache Throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed"], 1.0),
    ("duration_us", ["SpeedOfLight|Duration", "gpu__time_duration.sum"], 1e-3),
    ("dram_bandwidth_gbps", ["MemoryWorkloadAnalysis|Memory Throughput", "dram__bytes.sum.per_second"], 1e-9),
    ("l2_hit_rate_pct", ["MemoryWorkloadAnalysis|L2 Hit Rate", "lts__t_sector_hit_rate.pct"], 1.0),
    ("l1_hit_rate_pct", ["MemoryWorkloadAnalysis|L1/TEX Hit Rate", "l1tex__t_sector_hit_rate.pct"], 1.0),
    ("local_spill_requests", ["MemoryWorkloadAnalysis|Local Memory Spilling Requests",
                              "derived__local_spilling_requests"], 1.0),
    ("achieved_occupancy_pct", ["Occupancy|Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"], 1.0),
    ("theoretical_occupancy_pct", ["Occupancy|Theoretical Occupancy", "sm__maximum_warps_per_active_cycle_pct"], 1.0),
    ("block_limit_registers", ["Occupancy|Block Limit Registers", "launch__occupancy_limit_registers"], 1.0),
    ("block_limit_shared_mem", ["Occupancy|Block Limit Shared Mem", "launch__occupancy_limit_shared_mem"], 1.0),
    ("block_limit_warps", ["Occupancy|Block Limit Warps", "launch__occupancy_limit_warps"], 1.0),
    ("block_limit_sm", ["Occupancy|Block Limit SM", "launch__occupancy_limit_blocks"], 1.0),
    ("block_limit_barriers", ["Occupancy|Block Limit Barriers", "launch__occupancy_limit_barriers"], 1.0),
    ("registers_per_thread", ["LaunchStats|Registers Per Thread", "launch__registers_per_thread"], 1.0),
    ("_smem_static", ["LaunchStats|Static Shared Memory Per Block", "launch__shared_mem_per_block_static"], 1.0),
    ("_smem_dynamic", ["LaunchStats|Dynamic Shared Memory Per Block", "launch__shared_mem_per_block_dynamic"], 1.0),
    ("block_size", ["LaunchStats|Block Size", "launch__block_size"], 1.0),
    ("grid_size", ["LaunchStats|Grid Size", "launch__grid_size"], 1.0),
    ("waves_per_sm", ["LaunchStats|Waves Per SM", "launch__waves_per_multiprocessor"], 1.0),
    ("sm_count", ["LaunchStats|# SMs", "launch__sm_count", "device__attribute_multiprocessor_count"], 1.0),
    ("issue_active_pct", ["SchedulerStats|One or More Eligible", "smsp__issue_active.avg.pct_of_peak_sustained_active"], 1.0),
    ("warp_cycles_per_issue", ["WarpStateStats|Warp Cycles Per Issued Instruction",
                               "smsp__average_warp_latency_per_inst_issued.ratio"], 1.0),
    ("tensor_pipe_active_pct", ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                                "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
                                "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"], 1.0),
    ("_bank_conflicts", ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"], 1.0),
    ("_shared_wavefronts", ["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"], 1.0),
    ("_excess_sectors", ["derived__memory_l2_theoretical_sectors_global_excessive"], 1.0),
    ("_global_ld_sectors", ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"], 1.0),
    ("_global_st_sectors", ["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"], 1.0),
]
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
# CPIStall rule text -> stall reason id, for a details page without the raw stall breakdown
_STALL_TEXT = [("scoreboard dependency on a L1TEX", "long_scoreboard"), ("scoreboard dependency on a MIO", "short_scoreboard"),
               ("WARPGROUP.ARRIVE", "gmma"), ("fixed latency execution dependency", "wait"),
               ("memory barrier", "membar"), ("barrier", "barrier"), ("MIO", "mio_throttle"),
               ("L1 instruction queue for local and global", "lg_throttle"), ("execution pipe", "math_pipe_throttle"),
               ("to fetch an instruction", "no_instruction"), ("selected", "not_selected"),
               ("branch", "branch_resolving"), ("sleep", "sleeping"), ("drain", "drain")]
# ncu rule names -> the theme fact that keeps their largest global estimated speedup
_RULE_THEMES = {
    "ncu_occupancy_speedup_pct": {"AchievedOccupancy", "TheoreticalOccupancy"},
    "ncu_launch_speedup_pct": {"LaunchConfiguration"},
    "ncu_uncoalesced_speedup_pct": {"UncoalescedGlobalAccess", "MemoryCacheAccessPattern"},
    "ncu_bank_conflict_speedup_pct": {"UncoalescedSharedAccess", "SharedMemoryConflicts"},
    "ncu_stall_speedup_pct": {"CPIStall"},
}
LIMITERS = [("registers", "block_limit_registers"), ("shared_mem", "block_limit_shared_mem"),
            ("warps", "block_limit_warps"), ("blocks", "block_limit_sm"), ("barriers", "block_limit_barriers")]
# raw-page-only facts: what to export when they are missing
_RAW_ONLY = {"tensor_pipe_active_pct", "top_stall_reason", "top_stall_pct", "shared_bank_conflict_pct",
             "global_excess_sectors_pct"}
TOP_KERNELS_FOR_COMMAND = 3
# OPT rules kept in ncu_rules but never picked as the top suggestion: MemoryL2Compression is about
# memory allocated as compressible through the driver API (frameworks do not expose it) and fires,
# with 18-60 % estimates, on every kernel of the shared H200 cases, GEMMs at 93 % SM included
NOT_TOP = {"MemoryL2Compression"}


# ----------------------------------------------------------------------------------------- names
_CAST = re.compile(r"\((?:[A-Za-z_][\w:]*)(?: [A-Za-z_]\w*)*\)(?=-?\d)")   # (int)4, (unsigned long)2, (bool)1
_QUAL = re.compile(r"(?<![\w>])(?:[A-Za-z_]\w*|<unnamed>|\(anonymous namespace\))::")


def norm_name(name: str) -> str:
    """A kernel name with namespaces, ``(int)``-style casts, ``void`` and spaces removed (both sides)."""
    s = name.strip()
    s = _CAST.sub("", s)
    s = s.replace("<unnamed>::", "").replace("unnamed>::", "")   # ncu prints at::native::<unnamed>:: as unnamed>::
    prev = None
    while prev != s:
        prev = s
        s = _QUAL.sub("", s)
    s = re.sub(r"^void\s+", "", s)
    return re.sub(r"\s+", "", s)


def base_name(name: str) -> str:
    """The bare function name: ``kernel`` of ``std::enable_if<...>::type internal::gemvx::kernel<...>(T13)``."""
    s = name.strip()
    if s.startswith("_Z"):
        return _mangled_base(s) or s
    depth, out = 0, []
    for ch in s:                       # drop template arguments
        if ch == "<":
            depth += 1
            continue
        if ch == ">":
            depth = max(0, depth - 1)
            continue
        if depth == 0:
            out.append(ch)
    s = "".join(out)
    s = s.split("(", 1)[0].strip()     # drop the parameter list
    s = s.split()[-1] if s.split() else s   # drop the return type
    return s.split("::")[-1]


def _mangled_base(s: str) -> str | None:
    """``_ZN2at6native29vectorized_elementwise_kernelILi4E...`` -> ``vectorized_elementwise_kernel``."""
    i = 3 if s.startswith("_ZN") else 2
    last = None
    while i < len(s) and s[i].isdigit():
        j = i
        while j < len(s) and s[j].isdigit():
            j += 1
        n = int(s[i:j])
        last = s[j:j + n]
        i = j + n
        if not s.startswith("_ZN"):
            break
    return last


# ------------------------------------------------------------------------------------ per launch
def _long(prof: Profile) -> pl.DataFrame | None:
    """Details and raw rows in one frame with a lookup key and the file each row came from."""
    parts = []
    for table in ("ncu", "ncu_raw"):
        f = prof.tables.get(table)
        if f is None or f.height == 0:
            continue
        raw_name = pl.col("metric").str.contains("__")
        key = (pl.when(pl.col("section").is_null() | raw_name).then(pl.col("metric"))
               .otherwise(pl.col("section") + pl.lit("|") + pl.col("metric")))
        parts.append(f.select("launch_id", "kernel_name", "block_size", "grid_size", "metric", "value", "unit",
                              key.alias("key"), pl.lit(prof.source_name(table)).alias("src")))
    if not parts:
        return None
    return pl.concat(parts, how="vertical_relaxed").with_columns(pl.col("kernel_name").fill_null("?"))


def _dims(text: str | None) -> float | None:
    """``"(128, 1, 1)"`` -> 128.0."""
    if not text:
        return None
    nums = [int(x) for x in re.findall(r"\d+", text)]
    return float(math.prod(nums)) if nums else None


def _launch_facts(long: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """One row per launch (launch_id, kernel_name) with a column per fact; and fact -> source file."""
    plan = pl.DataFrame([(f, k, i, s) for f, keys, s in _M for i, k in enumerate(keys)],
                        schema={"fact": pl.String, "key": pl.String, "prio": pl.Int64, "scale": pl.Float64},
                        orient="row")
    found = long.drop_nulls("value").join(plan, on="key", how="inner").with_columns(pl.col("unit").fill_null(""))
    wrong = ncu_units.wrong_units(found)
    hits = (found.join(wrong.select("fact", "unit"), on=["fact", "unit"], how="anti")
                .sort("prio").group_by(["launch_id", "kernel_name", "fact"], maintain_order=True)
                .agg((pl.col("value").first() * pl.col("scale").first()).alias("v"), pl.col("src").first()))
    sources = {f: s for f, s in hits.group_by("fact").agg(pl.col("src").first()).iter_rows()}
    launches = long.group_by(["launch_id", "kernel_name"], maintain_order=True).agg(
        pl.col("block_size").drop_nulls().first(), pl.col("grid_size").drop_nulls().first())
    wide = hits.pivot(on="fact", index=["launch_id", "kernel_name"], values="v") if hits.height else None
    if wide is not None:
        launches = launches.join(wide, on=["launch_id", "kernel_name"], how="left")
    # warp stall breakdown (raw page): the largest reason and its share of the cycles between issues
    stalls = (long.drop_nulls("value").filter(pl.col("key").str.contains(_STALL.pattern))
                  .with_columns(pl.col("key").str.extract(_STALL.pattern, 1).alias("reason"))
                  .filter(pl.col("reason") != "selected"))
    if stalls.height:
        top = (stalls.sort("value", descending=True).group_by(["launch_id", "kernel_name"], maintain_order=True)
                     .agg(pl.col("reason").first().alias("top_stall_reason"), pl.col("value").first().alias("_stall"),
                          pl.col("value").sum().alias("_stall_sum")))
        launches = launches.join(top, on=["launch_id", "kernel_name"], how="left")
        sources["top_stall_reason"] = sources["top_stall_pct"] = stalls["src"][0]
    sources["_wrong_units"] = wrong
    return launches, sources


# ------------------------------------------------------------------------------------- per kernel
def _median(values: list) -> float | None:
    xs = sorted(v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
                and math.isfinite(v))
    if not xs:
        return None
    m = len(xs) // 2
    return float(xs[m]) if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _kernel_facts(rows: list[dict], rules: list[dict]) -> tuple[dict, list[dict]]:
    """The launches of one kernel -> its facts (medians), derived facts and rule facts."""
    k: dict = {"ncu_launches": len(rows)}
    names = [f for f, _, _ in _M] + ["_stall", "_stall_sum"]
    for f in names:
        v = _median([r.get(f) for r in rows])
        if v is not None:
            k[f] = v
    if "block_size" not in k:
        k["block_size"] = _median([_dims(r.get("block_size")) for r in rows])
    if "grid_size" not in k:
        k["grid_size"] = _median([_dims(r.get("grid_size")) for r in rows])
    reasons = [r.get("top_stall_reason") for r in rows if r.get("top_stall_reason")]
    if reasons:
        k["top_stall_reason"] = Counter(reasons).most_common(1)[0][0]
    _derive(k)
    rule_rows = _rule_facts(k, rules)
    facts = {f: (round(v, 4) if isinstance(v, float) else v) for f, v in k.items()
             if v is not None and not f.startswith("_")}
    return facts, rule_rows


def _derive(k: dict) -> None:
    if k.get("_smem_static") is not None or k.get("_smem_dynamic") is not None:
        k["shared_mem_per_block_bytes"] = (k.get("_smem_static") or 0) + (k.get("_smem_dynamic") or 0)
    if k.get("_stall") is not None:
        total = k.get("warp_cycles_per_issue") or k.get("_stall_sum")
        if total:
            k["top_stall_pct"] = min(100.0, 100 * k["_stall"] / total)
    if k.get("_shared_wavefronts"):
        k["shared_bank_conflict_pct"] = 100 * (k.get("_bank_conflicts") or 0) / k["_shared_wavefronts"]
    sectors = (k.get("_global_ld_sectors") or 0) + (k.get("_global_st_sectors") or 0)
    if sectors and k.get("_excess_sectors") is not None:
        k["global_excess_sectors_pct"] = 100 * k["_excess_sectors"] / sectors
    # occupancy limiter: the smallest per-SM block limit (only when theoretical occupancy is below 100 %)
    limits = {n: k[f] for n, f in LIMITERS if k.get(f) is not None}
    if limits and k.get("theoretical_occupancy_pct") is not None:
        low = min(limits.values())
        k["occupancy_limiter"] = ("none" if k["theoretical_occupancy_pct"] >= 99.99
                                  else "+".join(n for n, v in limits.items() if v == low))
    # waves: blocks / (SMs x blocks per SM); ncu prints 2 decimals, so recompute when the limits are known
    grid, sms = k.get("grid_size"), k.get("sm_count")
    waves = k.get("waves_per_sm")
    if grid and sms and limits:
        waves = grid / (sms * min(limits.values()))
        k.setdefault("waves_per_sm", round(waves, 2))
    if waves is not None and waves > 0:
        whole = math.ceil(waves)
        # SM time left idle by an incomplete last wave (all blocks of equal length): 1 - w for a
        # grid smaller than one wave, (ceil(w) - w) / ceil(w) for a partial last wave
        k["tail_idle_pct"] = 100 * (whole - waves) / whole
    sm, mem = k.get("sm_throughput_pct"), k.get("memory_throughput_pct")
    if sm is not None and mem is not None:   # ncu's SOLBottleneck classes (peers.md 3.2)
        hi = max(sm, mem)
        if sm >= 80 and mem >= 80:
            k["bound_class"] = "high-throughput"
        elif hi >= 80 or abs(sm - mem) >= 10 and hi >= 60:
            k["bound_class"] = "compute" if sm >= mem else "memory"
        elif hi < 60:
            k["bound_class"] = "small-grid" if waves is not None and waves < 1 else "latency"
        else:
            k["bound_class"] = "balanced"


def _rule_facts(k: dict, rules: list[dict]) -> list[dict]:
    """ncu's rule rows of one kernel: per rule the largest speedup in a launch, median over launches."""
    if not rules:
        return []
    per: dict[tuple, list] = {}
    text: dict[tuple, str] = {}
    for r in rules:
        if r["type"] not in ("OPT", "WRN"):
            continue
        key = (r["rule"], r["type"], r["speedup_type"] or "")
        per.setdefault(key, []).append((r["launch_id"], r["speedup_pct"]))
        if r["description"] and (key not in text or (r["speedup_pct"] or 0) > 0):
            text.setdefault(key, r["description"])
    rows = []
    for (rule, typ, stype), vals in per.items():
        best: dict = {}
        for lid, sp in vals:
            if sp is not None:
                best[lid] = max(best.get(lid, sp), sp)
        sp = _median(list(best.values())) if best else None
        rows.append({"rule": rule, "type": typ, "speedup_type": stype or None, "speedup_pct": sp,
                     "description": text.get((rule, typ, stype))})
    rows.sort(key=lambda r: (-(r["speedup_pct"] or -1), r["rule"]))
    k["ncu_opt_count"] = len({r["rule"] for r in rows if r["type"] == "OPT"})
    k["ncu_rules"] = "; ".join(
        f"{r['rule']} {r['type']}" + (f" {r['speedup_pct']:.1f}% {r['speedup_type'] or ''}".rstrip()
                                      if r["speedup_pct"] is not None else "") for r in rows)
    glob = [r for r in rows if r["type"] == "OPT" and r["speedup_type"] == "global" and r["speedup_pct"] is not None]
    ranked = [r for r in glob if r["rule"] not in NOT_TOP]
    if ranked:
        top = max(ranked, key=lambda r: r["speedup_pct"])
        k["ncu_top_rule"] = top["rule"]
        k["ncu_top_rule_speedup_pct"] = top["speedup_pct"]
        k["ncu_top_rule_text"] = (top["description"] or "")[:400]
    for fact, names in _RULE_THEMES.items():
        sp = [r["speedup_pct"] for r in glob if r["rule"] in names]
        if sp:
            k[fact] = max(sp)
    if "top_stall_reason" not in k:  # no raw stall breakdown: the CPIStall rule text names the reason
        for r in rules:
            m = re.search(r"stalled (.*?)\. .*?represents about ([\d.]+)% of the total", r["description"] or "")
            if r["rule"] == "CPIStall" and m and float(m.group(2)) > (k.get("top_stall_pct") or 0):
                k["top_stall_reason"] = next((rid for phrase, rid in _STALL_TEXT if phrase in m.group(1)),
                                             m.group(1)[:80])
                k["top_stall_pct"] = float(m.group(2))
    pipe = [re.search(r"^(\w[\w ]*?) is the highest-utilized pipeline \(([\d.]+)%\)", r["description"] or "")
            for r in rules if r["rule"] == "HighPipeUtilization"]
    pipe = [m for m in pipe if m]
    if pipe:
        k["top_pipe"] = pipe[0].group(1)
        k["top_pipe_pct"] = float(pipe[0].group(2))
    return rows


# ------------------------------------------------------------------------------------------- join
def _nsys_kernels(fs, prof: Profile) -> list[dict]:
    """The nsys kernel facts to join with: ``fs.kernels`` (the top kernels of the window), plus the
    kernels past its cut-off from the same source, or the whole-profile summary when it is empty."""
    from .base import KERNEL_FACT_LIMIT
    rows = list(fs.kernels)
    if rows and len(rows) < KERNEL_FACT_LIMIT:
        return rows
    gpu, ks, win = prof.tables.get("gpu_trace"), prof.tables.get("kern_sum"), fs.window
    per = None
    if rows and gpu is not None and fs.tables.get("top_kernels_source") == prof.source_name("gpu_trace") \
            and win is not None and win.start_ns is not None:
        k = gpu.filter((pl.col("start_ns") >= win.start_ns) & (pl.col("start_ns") < win.end_ns)
                       & (pl.col("kind") == "kernel"))
        per = k.group_by(pl.col("name").cast(pl.String)).agg(
            pl.col("dur_ns").sum().alias("total_ns"), pl.len().alias("count"),
            pl.col("dur_ns").median().alias("med_ns"), pl.col("dur_ns").mean().alias("avg_ns"))
    elif ks is not None and ks.height:
        med = "med_ns" if "med_ns" in ks.columns else "avg_ns"
        per = ks.select(pl.col("name").cast(pl.String), "total_ns", "count", pl.col(med).alias("med_ns"), "avg_ns")
    if per is None or per.height == 0:
        return rows
    per = per.sort("total_ns", descending=True)
    tot = float(per["total_ns"].sum()) or 1.0
    have = {r["name"] for r in rows}
    for i, r in enumerate(per.iter_rows(named=True)):
        if r["name"] in have:
            continue
        rows.append({"name": r["name"], "time_share_pct": round(r["total_ns"] / tot * 100, 4),
                     "total_ms": r["total_ns"] / 1e6, "count": int(r["count"]), "median_us": (r["med_ns"] or 0) / 1e3,
                     "avg_us": (r["avg_ns"] or 0) / 1e3, "rank": i + 1, "_extra": True})
    return rows


def _match(groups: dict, nsys: list[dict]) -> dict:
    """ncu kernel key -> (nsys kernel fact or None, how it matched)."""
    by_raw = {k["name"]: k for k in nsys}
    by_norm: dict[str, dict] = {}
    by_base: dict[str, list] = {}
    for k in sorted(nsys, key=lambda k: -(k.get("total_ms") or 0)):
        by_norm.setdefault(norm_name(k["name"]), k)
        by_base.setdefault(base_name(k["name"]), []).append(k)
    ncu_bases = Counter(base_name(g["name"]) for g in groups.values())
    out = {}
    for key, g in groups.items():
        k = by_raw.get(g["name"])
        how = "name" if k is not None else "normalized name"
        k = k or by_norm.get(key)
        if k is None:
            b = base_name(g["name"])
            cands = by_base.get(b, [])
            if len(cands) == 1 and ncu_bases[b] == 1:   # the bare function name, when unambiguous on both sides
                k, how = cands[0], "function name"
        out[key] = (k, how if k is not None else None)
    return out


def _classes(names: list[str]) -> dict[str, tuple[str, bool]]:
    f = pl.DataFrame({"name": names}, schema={"name": pl.String})
    f = f.with_columns(kernel_class_expr("name").alias("c"), simt_gemm_expr("name").alias("s"))
    return {n: (c, bool(s)) for n, c, s in f.iter_rows()}


def attach(fs, prof: Profile) -> None:
    """Add the ncu kernel facts to ``fs.kernels`` (see the module docstring)."""
    long = _long(prof)
    if long is None:
        _without_ncu(fs, prof)
        return
    launches, sources = _launch_facts(long)
    rules = prof.tables.get("ncu_rules")
    rules_by: dict[str, list] = {}
    for r in (rules.to_dicts() if rules is not None else []):
        rules_by.setdefault(norm_name(r["kernel_name"] or "?"), []).append(r)
    sections_by: dict[str, set] = {}
    for name, key in long.select("kernel_name", "key").unique().iter_rows():
        if "|" in key:
            sections_by.setdefault(norm_name(name), set()).add(key.split("|", 1)[0])
    groups: dict[str, dict] = {}
    for r in launches.iter_rows(named=True):
        g = groups.setdefault(norm_name(r["kernel_name"]), {"name": r["kernel_name"], "launches": []})
        g["launches"].append(r)
    nsys = _nsys_kernels(fs, prof)
    matches = _match(groups, nsys)
    classes = _classes([g["name"] for g in groups.values()] + [k["name"] for k, _ in matches.values() if k])
    used: set[int] = set()
    unmatched, table = [], []
    for key, g in groups.items():
        facts, rule_rows = _kernel_facts(g["launches"], rules_by.get(key, []))
        seen = sections_by.get(key, set()) | {r["section"] for r in rules_by.get(key, [])}
        _zero_quiet_rules(facts, seen, bool(rules_by.get(key)))
        k, how = matches[key]
        if k is not None:
            if id(k) in used:   # a second ncu kernel on the same nsys kernel: a fact of its own
                k = {f: v for f, v in k.items() if not f.startswith("_")} | {"_extra": True}
            used.add(id(k))
            target = k
            facts.update(nsys_matched=True, nsys_match=how)
            if k.get("_extra"):
                k.pop("_extra")
                fs.kernels.append(k)
        else:
            cls = classes.get(g["name"], ("other", False))[0]
            target = {"name": g["name"], "kernel_class": cls}
            facts["nsys_matched"] = False
            fs.kernels.append(target)
            unmatched.append(g["name"])
        facts["ncu_name"] = g["name"]
        facts["simt_gemm"] = classes.get(target["name"], classes.get(g["name"], ("other", False)))[1]
        target.update(facts)
        table.append({"name": target["name"], "ncu_name": g["name"], "nsys_matched": facts["nsys_matched"],
                      "nsys_match": facts.get("nsys_match"), "launches": facts["ncu_launches"],
                      "time_share_pct": target.get("time_share_pct"), "rules": rule_rows})
    for k in fs.kernels:
        k.pop("_extra", None)
    fs.tables["ncu_kernels"] = table
    wrong = sources.pop("_wrong_units")
    _sources(fs, prof, sources)
    have = set().union(*(set(k) for k in fs.kernels)) if fs.kernels else set()
    for fact, metric, unit in wrong.unique("fact", maintain_order=True).iter_rows():
        if fact not in have:
            fs.absent.setdefault(fact, f"Nsight Compute gives '{metric}' in '{unit}', a unit nsys-expert does not "
                                       f"know for it: not read as a number")
    if wrong.height:
        fs.warnings.append("Nsight Compute values in units nsys-expert does not know were not read: "
                           + ", ".join(f"'{m}' in '{u}'" for _, m, u in wrong.head(3).iter_rows())
                           + (f" and {wrong.height - 3} more" if wrong.height > 3 else ""))
    if nsys and unmatched:
        fs.warnings.append(f"{len(unmatched)} ncu kernel(s) not found in the nsys data: "
                           + ", ".join(short(n) for n in unmatched)
                           + "; their findings are ranked without a share of GPU time")
    elif not nsys:
        fs.warnings.append("Nsight Compute data without nsys kernel data: each kernel's share of GPU time is "
                           "unknown, so kernel findings are ranked by ncu's own estimates with a small default "
                           "weight; add the nsys CSVs of the same run to rank them by time")
    _absent_in_ncu(fs)


def short(name: str, width: int = 60) -> str:
    s = base_name(name)
    return s if len(s) <= width else s[: width - 1] + "…"


# theme fact -> the sections whose rules would have said so: collected and silent means 0
_THEME_SECTIONS = {
    "ncu_occupancy_speedup_pct": {"Occupancy"},
    "ncu_launch_speedup_pct": {"LaunchStats"},
    "ncu_uncoalesced_speedup_pct": {"SourceCounters", "MemoryWorkloadAnalysis_Tables"},
    "ncu_bank_conflict_speedup_pct": {"SourceCounters", "MemoryWorkloadAnalysis_Tables"},
    "ncu_stall_speedup_pct": {"WarpStateStats"},
}


def _zero_quiet_rules(facts: dict, sections: set, has_rules: bool) -> None:
    """ncu ran its rules on a section and none fired: the estimated speedup is 0, not unknown."""
    if not has_rules:
        return
    for fact, secs in _THEME_SECTIONS.items():
        if fact not in facts and secs & sections:
            facts[fact] = 0.0
    facts.setdefault("ncu_top_rule_speedup_pct", 0.0)
    facts.setdefault("ncu_opt_count", 0)


_DERIVED_FROM = {"shared_mem_per_block_bytes": "_smem_static", "occupancy_limiter": "block_limit_registers",
                 "tail_idle_pct": "grid_size", "bound_class": "sm_throughput_pct",
                 "shared_bank_conflict_pct": "_bank_conflicts", "global_excess_sectors_pct": "_excess_sectors"}


def _sources(fs, prof: Profile, sources: dict) -> None:
    for f, src in sources.items():
        if src and not f.startswith("_"):
            fs.sources.setdefault(f, src)
    for f, base in _DERIVED_FROM.items():
        if sources.get(base):
            fs.sources.setdefault(f, sources[base])
    rules_src = prof.source_name("ncu_rules")
    if rules_src:
        for f in ("ncu_rules", "ncu_opt_count", "ncu_top_rule", "ncu_top_rule_speedup_pct", "ncu_top_rule_text",
                  "top_pipe", "top_pipe_pct", *_RULE_THEMES):
            fs.sources.setdefault(f, rules_src)
        fs.sources.setdefault("top_stall_reason", rules_src)
        fs.sources.setdefault("top_stall_pct", rules_src)
    fs.sources.setdefault("simt_gemm", "kernel name")
    nsys_src = fs.tables.get("top_kernels_source") or prof.source_name("kern_sum")
    if nsys_src:
        for f in ("time_share_pct", "total_ms", "count", "median_us", "avg_us"):
            fs.sources.setdefault(f, nsys_src)


# ----------------------------------------------------------------------------------------- absent
def _ncu_facts() -> list[str]:
    from . import registry
    return [n for n, f in registry.KERNEL_FACTS.items() if f.needs == ("ncu",)]


def _absent_in_ncu(fs) -> None:
    """ncu data is there but some fact is in no kernel: say what export would have it."""
    have = set().union(*(set(k) for k in fs.kernels)) if fs.kernels else set()
    for f in _ncu_facts():
        if f in have:
            continue
        if f in _RAW_ONLY:
            fs.absent.setdefault(f, "not in the Nsight Compute data: export the raw page too "
                                    "(ncu -i REPORT.ncu-rep --csv --page raw > ncu/REPORT_raw.csv)")
        elif f.startswith("ncu_") or f in ("top_pipe", "top_pipe_pct"):
            fs.absent.setdefault(f, "ncu's rule rows are not in the data: export the details page of a report "
                                    "profiled with rules on (the default, --apply-rules yes) from ncu 2023 or later")
        else:
            fs.absent.setdefault(f, "not in the Nsight Compute data: profile with --set full "
                                    "(this report lacks the section that holds it)")


def ncu_command(fs, prof: Profile) -> str | None:
    """The ncu command that profiles the top kernels by nsys time, skipping the warm-up launches."""
    top, share = [], 0.0
    for k in sorted(fs.kernels, key=lambda k: -(k.get("time_share_pct") or 0)):
        if k.get("kernel_class") == "nccl" or not k.get("name"):
            continue
        top.append(k)
        share += k.get("time_share_pct") or 0
        if len(top) >= TOP_KERNELS_FOR_COMMAND or share >= 80:
            break
    bases = list(dict.fromkeys(base_name(k["name"]) for k in top))
    bases = [b for b in bases if re.fullmatch(r"[\w$]+", b)]
    if not bases:
        return None
    skip = 0
    gpu, win = prof.tables.get("gpu_trace"), fs.window
    if gpu is not None and gpu.height and win is not None and win.start_ns is not None and win.source != "whole":
        # grouped by the name's category code, then named: no text per operation, no other column copied
        before = (gpu.select("start_ns", "name").filter(pl.col("start_ns") < win.start_ns).group_by("name").len()
                  .with_columns(pl.col("name").cast(pl.String)))
        skip = int(sum(n for name, n in before.iter_rows() if base_name(name) in bases))
    count = 5 * len(top)
    return (f"ncu --set full --target-processes all --kernel-name regex:\"{'|'.join(bases)}\" "
            f"--launch-skip {skip} --launch-count {count} -o hot <your command>; then "
            f"ncu -i hot.ncu-rep --csv --page details > ncu/hot_details.csv (and --page raw > ncu/hot_raw.csv), "
            f"ncu/ beside the nsys CSVs")


def _without_ncu(fs, prof: Profile) -> None:
    """No ncu data: the ncu facts are absent, and the reason is the command that would supply them."""
    from . import registry
    cmd = ncu_command(fs, prof) if fs.kernels else None
    why = (f"needs Nsight Compute data of the top kernels: {cmd}" if cmd else "needs " + registry.INPUTS["ncu"])
    for f in _ncu_facts():
        fs.absent.setdefault(f, why)
    if cmd:
        fs.tables["ncu_command"] = cmd


def compute(ctx) -> None:
    """The fact-group entry point (``facts.GROUPS``)."""
    attach(ctx.fs, ctx.prof)
