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
The metrics side (which metric gives each fact, names, per launch, per kernel) is ``ncu_metrics``; this
module joins. Kernel facts are plain scalars (the engine drops dicts and lists); the rule rows in full go to
``fs.tables["ncu_kernels"]`` for the report.
"""
from __future__ import annotations

import re
from collections import Counter

import polars as pl

from ..notes import Note
from ..load import Profile
from . import ncu_metrics
from .ncu_metrics import (TOP_KERNELS_FOR_COMMAND, RAW_ONLY, RULE_THEMES, kernel_facts, launch_facts, long_form, base_name, norm_name)  # noqa: F401
from .names import kernel_class_expr, simt_gemm_expr
from .declare import fact, group

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
    long = long_form(prof)
    if long is None:
        _without_ncu(fs, prof)
        return
    launches, sources = launch_facts(long)
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
        facts, rule_rows = kernel_facts(g["launches"], rules_by.get(key, []))
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
    _wrong_units(fs, wrong)
    if nsys and unmatched:
        fs.warnings.append(Note("facts.ncu_unmatched", {"n": len(unmatched),
                                                         "kernels": tuple(short(n) for n in unmatched)}))
    elif not nsys:
        fs.warnings.append(Note("facts.ncu_without_nsys"))
    _absent_in_ncu(fs)


def _wrong_units(fs, wrong) -> None:
    """Metrics ncu printed in a unit the loader does not convert: their facts are absent (where no kernel
    has them), and a warning names the first three."""
    for fact, metric, unit in wrong.unique("fact", maintain_order=True).iter_rows():
        if not any(fact in k for k in fs.kernels):
            fs.absent.setdefault(fact, Note("absent.ncu_unit", {"metric": metric, "unit": unit}))
    if wrong.height:
        metrics = tuple(Note("phrase.metric_in_unit", {"metric": m, "unit": u}) for _, m, u in wrong.head(3).iter_rows())
        fs.warnings.append(Note("facts.ncu_units_more", {"metrics": metrics, "more": wrong.height - 3})
                           if wrong.height > 3 else Note("facts.ncu_units", {"metrics": metrics}))


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
                  "top_pipe", "top_pipe_pct", *RULE_THEMES):
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
    """The kernel facts only Nsight Compute supplies (declared here and in ncu_metrics.py)."""
    return [f.name for f in FACTS + ncu_metrics.FACTS if f.scope == "kernel" and f.needs == ("ncu",)]


def _absent_in_ncu(fs) -> None:
    """ncu data is there but some fact is in no kernel: say what export would have it."""
    for f in _ncu_facts():
        if any(f in k for k in fs.kernels):
            continue
        if f in RAW_ONLY:
            fs.absent.setdefault(f, Note("absent.ncu_raw_page"))
        elif f.startswith("ncu_") or f in ("top_pipe", "top_pipe_pct"):
            fs.absent.setdefault(f, Note("absent.ncu_rule_rows"))
        else:
            fs.absent.setdefault(f, Note("absent.ncu_set_full"))


def ncu_command(fs, prof: Profile) -> Note | None:
    """The ncu command that profiles the top kernels by nsys time (None when they have no plain names): a
    ``phrase.ncu_command`` note, its options in ``args`` and what they hold as fields of their own (``kernels``,
    ``skip``, ``count``: what the next steps read)."""
    args = _ncu_args(fs, prof)
    return Note("phrase.ncu_command", args) if args else None


def _ncu_args(fs, prof: Profile) -> dict | None:
    """The ncu options that profile the top kernels by nsys time, skipping the warm-up launches: ``args`` (the
    options as typed), ``kernels`` (the function names), ``skip`` and ``count`` (the launches)."""
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
    return {"args": (f"--set full --target-processes all --kernel-name regex:\"{'|'.join(bases)}\" "
                     f"--launch-skip {skip} --launch-count {count} -o hot"),
            "kernels": tuple(bases), "skip": skip, "count": count}


def _without_ncu(fs, prof: Profile) -> None:
    """No ncu data: the ncu facts are absent, and the reason is the command that would supply them."""
    args = _ncu_args(fs, prof) if fs.kernels else None
    cmd = Note("phrase.ncu_command", args) if args else None
    why = Note("absent.ncu_command", {"args": args["args"]}) if args else Note("absent.needs", {"inputs": ("ncu",)})
    for f in _ncu_facts():
        fs.absent.setdefault(f, why)
    if cmd:
        fs.tables["ncu_command"] = cmd


def compute(ctx) -> None:
    """The fact-group entry point (``facts.GROUPS``)."""
    attach(ctx.fs, ctx.prof)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("nsys_matched", "", "the ncu kernel was found in the nsys data (its share of GPU time is known)", ("ncu",), "kernel"),
    fact("nsys_match", "", "how the ncu name was matched to the nsys name: name, normalized name, function name", ("ncu",), "kernel"),
    fact("ncu_name", "", "kernel name as Nsight Compute prints it", ("ncu",), "kernel"),
    fact("simt_gemm", "", "an FP32/FP64 GEMM on SIMT cores by its name (sgemm / simt, no tensor-core marker)", ("ncu",), "kernel"),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("ncu", compute,
          reads=("input:gpu_trace", "input:kern_sum", "input:ncu", "input:ncu_raw", "input:ncu_rules", "kernel:kernel_class",
                 "kernel:name", "kernel:time_share_pct", "kernel:total_ms", "kernels", "table:top_kernels_source"),
          puts=(FACTS, ncu_metrics.FACTS, "kernel:_extra", "kernels", "source:avg_us", "source:count", "source:median_us",
                "source:time_share_pct", "source:total_ms", "table:ncu_command", "table:ncu_kernels", "warnings")),
]
