"""What a load checks of the tables it read, all together: a trace that is empty while its summary
counts work, a summary of another run, reports that are all empty (each said in a warning, the table
that cannot be trusted dropped); and the run's metadata (its GPUs, the report eras)."""
from __future__ import annotations

import os

import polars as pl

from ..notes import Note
from . import normalize, sanity
from .profile import Profile


def check(prof: Profile) -> None:
    """A trace that is empty while its summary counts work is broken or cut: do not trust it. Reports
    that are all empty say so (an empty report set is no evidence of a healthy run)."""
    if prof.tables and all(t.height == 0 for t in prof.tables.values()):
        names = sorted({os.path.basename(p) for p in prof.sources.values()})
        prof.warnings.append(Note("load.all_empty", {"files": Note("phrase.names_more", {
            "names": tuple(names[:4]), "more": len(names) - 4}) if len(names) > 4 else tuple(names)}))
    elif prof.tables.get("gpu_trace") is not None and prof.tables["gpu_trace"].height == 0 and not any(
            prof.tables[t].height for t in ("kern_sum", "mem_time_sum", "gpu_sum") if t in prof.tables):
        prof.warnings.append(Note("load.no_gpu_work", {"file": prof.source_name("gpu_trace")}))
    _drop_empty_trace(prof, "gpu_trace", "kern_sum", "load.empty_trace")
    g = prof.tables.get("gpu_trace")
    k = prof.tables.get("kern_sum")
    # (a summary made from the trace itself, as the SQLite loader makes it, is of the same run)
    if g is not None and k is not None and g.height and k.height and prof.sources.get("kern_sum") != prof.sources.get("gpu_trace"):
        other = sanity.summary_of_another_run(g, k)
        if other:
            prof.warnings.append(Note("load.other_run_summary", {"summary": prof.source_name("kern_sum"),
                                                                 "file": prof.source_name("gpu_trace"), "why": other}))
            del prof.tables["kern_sum"]
            del prof.sources["kern_sum"]
    # (same-stream overlap is what the profiler recorded, Hopper's PDL, never damage: the trace is
    # kept and facts/overlap.py measures the overlap for an info note)
    _drop_empty_trace(prof, "api_trace", "api_sum", "load.empty_api_trace")


def _drop_empty_trace(prof: Profile, trace: str, summary: str, code: str) -> None:
    """A trace with no rows beside a summary that counts some is dropped, and a warning says so (the
    summary's tier stands in for it)."""
    t, s = prof.tables.get(trace), prof.tables.get(summary)
    if t is not None and t.height == 0 and s is not None and s.height > 0:
        prof.warnings.append(Note(code, {"file": prof.source_name(trace), "summary": prof.source_name(summary),
                                         "n": int(s["count"].sum())}))
        del prof.tables[trace]
        del prof.sources[trace]


def meta(prof: Profile) -> dict:
    meta: dict = {}
    g = prof.tables.get("gpu_trace")
    if g is not None and g.height and "device_id" in g.columns:
        meta["gpus"] = _gpus(g, prof.meta.get("gpus") or [])
        sanity.gpu_claim(meta["gpus"], g, prof.warnings)
    eras = sorted({i["version"] for i in prof.inputs})
    meta["report_eras"] = eras
    return meta


def _gpus(g: pl.DataFrame, known: list[dict]) -> list[dict]:
    """The GPUs the trace used, with their names: from the distinct ``device`` texts of a CSV trace
    (``NVIDIA H200 (0)``), else from the export's GPU table (``known``); ``unknown`` when neither says."""
    named = {int(k["id"]): k["name"] for k in known}
    cc = {int(k["id"]): k["cc"] for k in known if k.get("cc")}      # compute capability, where the export says it

    def gpu(i: int, name) -> dict:
        return {"id": i, "name": name or "unknown", **({"cc": cc[i]} if i in cc else {})}

    lo, hi = g.select(pl.col("device_id").min().alias("lo"), pl.col("device_id").max().alias("hi")).row(0)
    if lo == hi:   # one GPU (the usual case): no hashing of a million rows
        if "device" in g.columns:
            first = g["device"].drop_nulls().head(1).to_list()
            name = normalize.device_names(first)[first[0]] if first else None
        else:
            name = named.get(int(lo))
        return [gpu(int(lo), name)]
    if "device" in g.columns:
        devs = g["device"].unique().drop_nulls().to_list()
        ids, names = normalize.device_ids(devs), normalize.device_names(devs)
        pairs = {(ids[d], names[d]) for d in devs} | ({(0, None)} if g["device"].null_count() else set())
    else:
        pairs = {(int(d), named.get(int(d))) for d in g["device_id"].drop_nulls().unique().to_list()}
    return [gpu(i, n) for i, n in sorted(pairs, key=lambda p: (p[0], p[1] or ""))]
