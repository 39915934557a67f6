"""Are several timelines ranks of one job, one run read twice, or unrelated runs?

Files with different name prefixes (``rank0_...`` / ``rank1_...``, ``a.sqlite`` / ``b.sqlite``) or
several folders on the command line are taken as the ranks of one job (``ranks.discover``). That is
only true when they are. From each loaded rank a small :func:`fingerprint` is kept, and
:func:`relate` compares them:

- **the same run twice** (one report exported twice, e.g. once with ``--timeunit usec``): the same
  number of kernels, the same kernel names, the same total kernel time and the same start
  and duration of each of the first 200 operations (within the rounding of the coarser unit).
  Read once; the report says which file was used.
- **different runs**: ranks of one data-parallel job run the same kernels with about the same mix
  of time and the same number of launches, and their nsys sessions start together. Kernel-time mix
  overlapping less than 30 %, kernel counts more than 3x apart, or SQLite session starts more than
  5 minutes apart mean separate runs: diagnosing them as one job would invent rank imbalance, so
  this is an error that names them and says what to do (one at a time, or ``diff``).
"""
from __future__ import annotations

import os

import polars as pl

from ..notes import Note
from ..errors import InputError

MIN_MIX_OVERLAP = 0.30
MAX_COUNT_RATIO = 3.0
MAX_START_APART_NS = 5 * 60 * 10**9


def fingerprint(tables: dict[str, pl.DataFrame], meta: dict) -> dict:
    """What identifies a run: kernel count, total kernel time, first start, the kernel-time mix."""
    fp: dict = {"session_start_ns": meta.get("session_start_utc_ns"), "rank": meta.get("dist_rank")}
    g = tables.get("gpu_trace")
    if g is not None and g.height:
        k = g.filter(pl.col("kind") == "kernel") if "kind" in g.columns else g
        fp["first_start_ns"] = int(g["start_ns"].min())
        head = g.head(200) if g["start_ns"].is_sorted() else g.sort("start_ns").head(200)
        fp["head"] = list(zip(head["start_ns"].to_list(), head["dur_ns"].to_list()))
        per = (k.group_by("name").agg(pl.col("dur_ns").sum().alias("t"), pl.len().alias("n"))
                .with_columns(pl.col("name").cast(pl.String)))
    elif tables.get("kern_sum") is not None and tables["kern_sum"].height:
        per = tables["kern_sum"].select(pl.col("name").cast(pl.String), pl.col("total_ns").alias("t"),
                                        pl.col("count").alias("n"))
    else:
        return fp
    total = int(per["t"].sum() or 0)
    fp.update(count=int(per["n"].sum() or 0), total_ns=total,
              mix={n: t / total for n, t in zip(per["name"].to_list(), per["t"].to_list())} if total else {},
              names=sorted(per["name"].to_list()))
    return fp


def _overlap(a: dict, b: dict) -> float:
    return sum(min(v, b.get(n, 0.0)) for n, v in a.items())


def same_run(a: dict, b: dict) -> bool:
    if "count" not in a or "count" not in b or a["count"] != b["count"] or a["names"] != b["names"]:
        return False
    if a.get("first_start_ns") is None or b.get("first_start_ns") is None:
        return False
    if a.get("rank") is not None and b.get("rank") is not None and a["rank"] != b["rank"]:
        return False     # traces that say they are two ranks (torch.profiler's distributedInfo) are two
    slack = 1_000 * max(1, a["count"])          # up to 1 us of rounding per kernel (usec exports)
    if abs(a["first_start_ns"] - b["first_start_ns"]) > 1_000 or abs(a["total_ns"] - b["total_ns"]) > slack:
        return False
    # every one of the first 200 operations at the same start and duration (ranks of one job differ here)
    ha, hb = a.get("head", []), b.get("head", [])
    return len(ha) == len(hb) and all(abs(x[0] - y[0]) <= 1_000 and abs(x[1] - y[1]) <= 1_000
                                      for x, y in zip(ha, hb))


def why_different(a: dict, b: dict) -> str | None:
    """Why two fingerprints cannot be ranks of one job, or None when they can."""
    sa, sb = a.get("session_start_ns"), b.get("session_start_ns")
    if sa and sb and abs(sa - sb) > MAX_START_APART_NS:
        return f"their profiling sessions started {abs(sa - sb) / 60e9:.0f} minutes apart"
    if "count" in a and "count" in b and a["count"] and b["count"]:
        ratio = max(a["count"], b["count"]) / min(a["count"], b["count"])
        if ratio > MAX_COUNT_RATIO:
            return f"one launched {ratio:.0f}x as many kernels as the other ({a['count']} and {b['count']})"
        ov = _overlap(a["mix"], b["mix"])
        if ov < MIN_MIX_OVERLAP:
            return f"their kernels share only {ov * 100:.0f}% of the GPU time mix"
    return None


def relate(labels: list[str], fps: list[dict], where: list[str]) -> tuple[list[int], list[str]]:
    """-> (the ranks to keep, notes). The same run read twice keeps the first; unrelated runs are an
    InputError naming two of them. Linear in the ranks (a job may have thousands): a copy is looked
    for only among the ranks of the same kernel count and names, and every kept rank is compared
    with the first (a rank of another run differs from it as it would from any rank of this one)."""
    keep, notes = [], []
    alike: dict[tuple, list[int]] = {}
    for i, fp in enumerate(fps):
        key = (fp.get("count"), tuple(fp.get("names", ())))
        dup = next((j for j in alike.get(key, []) if same_run(fps[j], fp)), None)
        if dup is not None:
            notes.append(Note("load.same_run", {"file": where[i], "other": where[dup], "n": fp["count"]}))
            continue
        alike.setdefault(key, []).append(i)
        keep.append(i)
    for j in keep[1:]:
        i = keep[0]
        why = why_different(fps[i], fps[j])
        if why:
            raise InputError(
                f"{where[i]} and {where[j]} look like different runs, not ranks of one job ({why}); "
                f"diagnosing them together would invent rank imbalance", None,
                "diagnose each run on its own (one folder or file per run), or compare two runs with "
                "nsys-expert diff (one folder per run)")
    return keep, notes


def describe(files: list[str]) -> str:
    """A rank's name for the messages: its timeline file (or its folder)."""
    tl = [f for f in files if f.endswith((".sqlite", ".sqlite.gz", "_cuda_gpu_trace.csv", "_gputrace.csv", ".json",
                                          ".json.gz"))]
    return os.path.basename(tl[0]) if tl else (os.path.dirname(files[0]) if files else "?")
