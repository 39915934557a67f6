"""Nsight Compute metrics into kernel facts: which metric (details-page label or raw name) gives each fact,
ncu's simplified kernel names normalised for the join, every launch's metrics, their median per kernel,
the derived facts (limiters, stalls, waves) and ncu's own rule rows per kernel. ``ncu`` joins them with
the nsys kernels."""
from __future__ import annotations

import math
import re
from collections import Counter

import polars as pl

from ..load import Profile
from . import ncu_units
from .declare import fact

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
RULE_THEMES = {
    "ncu_occupancy_speedup_pct": {"AchievedOccupancy", "TheoreticalOccupancy"},
    "ncu_launch_speedup_pct": {"LaunchConfiguration"},
    "ncu_uncoalesced_speedup_pct": {"UncoalescedGlobalAccess", "MemoryCacheAccessPattern"},
    "ncu_bank_conflict_speedup_pct": {"UncoalescedSharedAccess", "SharedMemoryConflicts"},
    "ncu_stall_speedup_pct": {"CPIStall"},
}
LIMITERS = [("registers", "block_limit_registers"), ("shared_mem", "block_limit_shared_mem"),
            ("warps", "block_limit_warps"), ("blocks", "block_limit_sm"), ("barriers", "block_limit_barriers")]
# raw-page-only facts: what to export when they are missing
RAW_ONLY = {"tensor_pipe_active_pct", "top_stall_reason", "top_stall_pct", "shared_bank_conflict_pct",
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
def long_form(prof: Profile) -> pl.DataFrame | None:
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


def launch_facts(long: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
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


def kernel_facts(rows: list[dict], rules: list[dict]) -> tuple[dict, list[dict]]:
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
    for fact, names in RULE_THEMES.items():
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


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("ncu_launches", "", "launches of this kernel profiled by ncu", ("ncu",), "kernel"),
    fact("sm_throughput_pct", "%", "Compute (SM) Throughput: SM throughput as a share of peak (SpeedOfLight)", ("ncu",), "kernel"),
    fact("memory_throughput_pct", "%", "Memory Throughput: the busiest memory unit (DRAM, L2, L1) as a share of peak", ("ncu",), "kernel"),
    fact("dram_throughput_pct", "%", "DRAM Throughput: DRAM bandwidth as a share of peak", ("ncu",), "kernel"),
    fact("l1_throughput_pct", "%", "L1/TEX cache throughput as a share of peak", ("ncu",), "kernel"),
    fact("l2_throughput_pct", "%", "L2 cache throughput as a share of peak", ("ncu",), "kernel"),
    fact("duration_us", "us", "kernel duration under ncu (clocks may differ from the nsys run)", ("ncu",), "kernel"),
    fact("dram_bandwidth_gbps", "GB/s", "DRAM bandwidth reached (Memory Workload Analysis: Memory Throughput)", ("ncu",), "kernel"),
    fact("l2_hit_rate_pct", "%", "L2 hit rate (healthy > 80 %)", ("ncu",), "kernel"),
    fact("l1_hit_rate_pct", "%", "L1/TEX hit rate", ("ncu",), "kernel"),
    fact("local_spill_requests", "", "local-memory spilling requests (register spills)", ("ncu",), "kernel"),
    fact("achieved_occupancy_pct", "%", "achieved occupancy: resident warps / maximum warps (healthy > 50 %)", ("ncu",), "kernel"),
    fact("theoretical_occupancy_pct", "%", "theoretical occupancy allowed by registers, shared memory and block size", ("ncu",), "kernel"),
    fact("block_limit_registers", "block", "blocks per SM allowed by the registers", ("ncu",), "kernel"),
    fact("block_limit_shared_mem", "block", "blocks per SM allowed by the shared memory", ("ncu",), "kernel"),
    fact("block_limit_warps", "block", "blocks per SM allowed by the warps (block size)", ("ncu",), "kernel"),
    fact("block_limit_sm", "block", "blocks per SM allowed by the hardware block limit", ("ncu",), "kernel"),
    fact("block_limit_barriers", "block", "blocks per SM allowed by the barriers", ("ncu",), "kernel"),
    fact("occupancy_limiter", "", "what limits theoretical occupancy: registers, shared_mem, warps, blocks, barriers (joined by + on a tie); none at 100 %", ("ncu",), "kernel"),
    fact("registers_per_thread", "", "registers per thread (healthy < 128)", ("ncu",), "kernel"),
    fact("shared_mem_per_block_bytes", "byte", "static + dynamic shared memory per block", ("ncu",), "kernel"),
    fact("block_size", "", "threads per block", ("ncu",), "kernel"),
    fact("grid_size", "", "blocks in the grid", ("ncu",), "kernel"),
    fact("waves_per_sm", "", "waves of blocks per SM: grid / (SMs x blocks per SM)", ("ncu",), "kernel"),
    fact("sm_count", "", "SMs of the GPU", ("ncu",), "kernel"),
    fact("tail_idle_pct", "%", "SM time left idle by the last, incomplete wave of blocks (1 - waves below one wave)", ("ncu",), "kernel"),
    fact("bound_class", "", "ncu's SOL class: compute, memory, latency, small-grid or balanced", ("ncu",), "kernel"),
    fact("issue_active_pct", "%", "cycles in which a scheduler issued an instruction (One or More Eligible)", ("ncu",), "kernel"),
    fact("warp_cycles_per_issue", "cycle", "cycles between two instructions of a warp (Warp Cycles Per Issued Instruction)", ("ncu",), "kernel"),
    fact("tensor_pipe_active_pct", "%", "tensor pipe active cycles as a share of peak (raw page)", ("ncu",), "kernel"),
    fact("top_stall_reason", "", "the warp stall reason with the most cycles (raw page, else ncu's CPIStall rule)", ("ncu",), "kernel"),
    fact("top_stall_pct", "%", "share of the cycles between two instructions spent in the top stall reason", ("ncu",), "kernel"),
    fact("shared_bank_conflict_pct", "%", "shared-memory bank conflicts as a share of shared-memory wavefronts (raw page)", ("ncu",), "kernel"),
    fact("global_excess_sectors_pct", "%", "excess global-memory sectors (uncoalesced access) as a share of global sectors (raw page)", ("ncu",), "kernel"),
    fact("top_pipe", "", "the most utilized pipeline named by ncu's HighPipeUtilization rule", ("ncu",), "kernel"),
    fact("top_pipe_pct", "%", "utilization of that pipeline", ("ncu",), "kernel"),
    fact("ncu_rules", "", "ncu's own OPT / WRN rule rows: name, type, estimated speedup", ("ncu",), "kernel"),
    fact("ncu_opt_count", "", "ncu OPT (optimization) rules that fired", ("ncu",), "kernel"),
    fact("ncu_top_rule", "", "the ncu OPT rule with the largest global estimated speedup", ("ncu",), "kernel"),
    fact("ncu_top_rule_speedup_pct", "%", "its estimated speedup (global: share of the kernel's runtime); 0 when none fired", ("ncu",), "kernel"),
    fact("ncu_top_rule_text", "", "its description", ("ncu",), "kernel"),
    fact("ncu_occupancy_speedup_pct", "%", "ncu's estimated speedup from occupancy (AchievedOccupancy, TheoreticalOccupancy)", ("ncu",), "kernel"),
    fact("ncu_launch_speedup_pct", "%", "ncu's estimated speedup from the launch configuration (LaunchConfiguration)", ("ncu",), "kernel"),
    fact("ncu_uncoalesced_speedup_pct", "%", "ncu's estimated speedup from global access patterns (UncoalescedGlobalAccess, MemoryCacheAccessPattern)", ("ncu",), "kernel"),
    fact("ncu_bank_conflict_speedup_pct", "%", "ncu's estimated speedup from shared-memory access (UncoalescedSharedAccess, SharedMemoryConflicts)", ("ncu",), "kernel"),
    fact("ncu_stall_speedup_pct", "%", "ncu's estimated speedup from the top warp stall (CPIStall)", ("ncu",), "kernel"),
]
