"""What the iteration's critical path lets a fix win back (issue 48, item 2).

The replay (facts/replay.py) splits each iteration's critical path into the launching thread's own time
(``critical_path_host_pct``) and GPU operations (``critical_path_gpu_pct``). A fix shortens one side:
- a fix of the GPU's work (a subject inside ``busy``: kernels, copies, NCCL) leaves the host's own time,
  so it wins at most ``100 - host``: faster kernels of a 1,024-element launch-bound loop win nothing
  while the host launches 99.99 % of the critical path (``launch_bound``'s tail-effect);
- a fix of the host's own time (launching, host work, input loading, the allocator) leaves the GPU's,
  so at most ``100 - gpu``;
- removing syncs (``sync-bound``) lets the two overlap, so at most ``100 - max(host, gpu)``;
- a fix that takes a whole phase out of the step (subject ``run``, not a host-side category: a checkpoint's
  pauses, a per-step read-back with the host work that waits for it) shortens both sides: no cap here.
A gain replayed on the dependency model already respects the path and is left as it is. The total is
capped the same way: without a fix of the host's own time it is at most ``100 - host`` (``sync_bound``
with its ncu CSVs: 10 % syncs + 9.3 % TF32 were 19.3 % while the host is 85 % of the path: at most 15 %).
"""
from __future__ import annotations

import dataclasses

from .model import Finding, PathCap, Recoverable



def path(run: dict) -> tuple[float, float] | None:
    """(host %, GPU %) of the replayed critical path, or None without a replay."""
    h, g = run.get("critical_path_host_pct"), run.get("critical_path_gpu_pct")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (h, g)):
        return None
    return float(h), float(g)


def sides(categories: dict) -> dict:
    """category -> the side of the critical path its fix shortens (``Category.side``: host, overlap, or None)."""
    return {name: c.side for name, c in categories.items()}


def side(f: Finding, within, sides_of: dict) -> str:
    """``host``, ``gpu``, ``overlap`` or ``both``: which side of the critical path the finding's fix shortens:
    its category's side (``sides_of``: :func:`sides` of the packs' categories), else its subject's."""
    category, subject = f.category, f.subject or "run"
    declared = sides_of.get(category)
    if declared is not None:
        return declared
    if subject == "run":
        return "both"
    return "gpu" if within(subject, "busy") else "host"


def copies_cap(f: Finding, run: dict) -> float | None:
    """Without a replay, what a fix of host-device copies can win: hiding them under compute wins at most
    the kernels' time, pinning at most the pageable copies' time (memcpy_bound_fixed's CSVs: pinned
    copies at ~52 GB/s beside 1.2 % of kernels claimed 66.6 %; its SQLite's replay says 1.2 %)."""
    if f.subject != "copies" or f.gain_basis == "replayed":
        return None
    kern, copies, pageable = (run.get(k) for k in ("kernel_active_pct", "memcpy_active_pct", "memcpy_pageable_share_pct"))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (kern, copies, pageable)):
        return None
    return max(0.0, float(kern) + float(copies) * float(pageable) / 100.0)


def finding_cap(f: Finding, run: dict, within, sides_of: dict) -> tuple[float, str] | None:
    """The most the finding's fix can win back (% of the window) and what bounds it (``critical_path``
    or ``copies``), or None when nothing does."""
    p = path(run)
    if p is None or f.gain_basis == "replayed":
        c = copies_cap(f, run)
        return None if c is None else (c, "copies")
    host, gpu = p
    s = side(f, within, sides_of)
    if s == "both":
        return None
    return max(0.0, 100.0 - (gpu if s == "host" else host if s == "gpu" else max(host, gpu))), "critical_path"


def total_cap(findings: list[Finding], run: dict, within, sides_of: dict) -> PathCap | None:
    """The bound on the total recoverable time: which side no finding shortens, and its share."""
    p = path(run)
    gaining = [f for f in findings if f.estimated_gain_pct]
    if p is None or not gaining:
        return None
    host, gpu = p
    found = {side(f, within, sides_of) for f in gaining}
    caps = []
    if "both" in found:
        return None
    if "host" not in found:
        caps.append((100.0 - host, "critical_path_host_pct", host))
    if "gpu" not in found and "overlap" not in found:
        caps.append((100.0 - gpu, "critical_path_gpu_pct", gpu))
    if not caps:
        return None
    cap, fact, value = min(caps)
    return PathCap(round(max(0.0, cap), 1), fact, round(value, 1))


def cap_total(rec: Recoverable, cap: PathCap | None) -> Recoverable:
    """``recoverable`` with its total held to the critical path's bound (``critical_path`` says which)."""
    if cap is not None and rec.total_pct > cap.cap_pct:
        rec = dataclasses.replace(rec, total_pct=cap.cap_pct, critical_path=cap)
    return rec
