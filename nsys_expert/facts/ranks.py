"""Cross-rank facts: balance, skew and the straggler, from the per-rank fact sets of one job.

Clock-free by design: separate nsys reports (one per rank) do not share a time origin, so the
straggler is found from durations, not timestamps. In a synchronous collective every rank waits
inside the NCCL kernel until the last one arrives, so the last rank to arrive has the *shortest*
NCCL kernel. The rank that is last most often is the straggler; without collectives, the rank with
the most compute per iteration is.
"""
from __future__ import annotations

import statistics

from .base import FactSet
from .declare import fact


def _median(xs):
    return statistics.median(xs) if xs else None


def cross_rank(labels: list[str], sets: list[FactSet]) -> dict:
    """-> {"job": job facts, "per_rank": [extra facts per rank]}."""
    n = len(sets)
    job: dict = {"rank_count": n}
    per = [dict() for _ in sets]
    for i, fs in enumerate(sets):
        comp = fs.run.get("compute_active_pct")
        win_ms = fs.run.get("window_ms")
        iters = fs.run.get("iter_count")
        if comp is not None and win_ms:
            total = comp / 100.0 * win_ms
            per[i]["compute_ms_per_iter"] = round(total / iters, 4) if iters else round(total, 4)
    it = [fs.run.get("iter_median_ms") for fs in sets]
    if all(v for v in it):
        med = _median(it)
        job["rank_iter_skew"] = round(max(it) / med, 4) if med else None
    comp = [p.get("compute_ms_per_iter") for p in per]
    if all(v is not None for v in comp) and n:
        med = _median(comp)
        if med:
            job["rank_compute_skew"] = round(max(comp) / med, 4)
    act = [fs.run.get("gpu_active_pct") for fs in sets]
    if all(v is not None for v in act):
        job["rank_gpu_active_spread_pct"] = round(max(act) - min(act), 4)
    share = [fs.run.get("nccl_share_of_busy_pct") for fs in sets]
    if all(v is not None for v in share):
        job["rank_nccl_share_spread_pct"] = round(max(share) - min(share), 4)
    # last arrival at each collective, matched by order (the k-th collective of every rank)
    seqs = [fs.share.nccl_sequence for fs in sets]
    if all(s is not None and s.height for s in seqs) and n >= 2:
        k = min(s.height for s in seqs)
        durs = [s["dur_ns"].head(k).to_list() for s in seqs]
        last = [0] * n
        for j in range(k):
            col = [durs[r][j] for r in range(n)]
            m = min(col)
            if col.count(m) == 1:  # a tie says nothing about who came last
                last[col.index(m)] += 1
        for r in range(n):
            per[r]["nccl_last_arrival_pct"] = round(100.0 * last[r] / k, 4)
        top = max(range(n), key=lambda r: (last[r], -r))
        job["straggler_last_arrival_pct"] = round(100.0 * last[top] / k, 4)
        job["straggler_rank"] = labels[top]
    elif all(v is not None for v in comp) and n >= 2:
        top = max(range(n), key=lambda r: comp[r])
        job["straggler_rank"] = labels[top]
    return {"job": {k: v for k, v in job.items() if v is not None}, "per_rank": per}


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("rank_count", "", "ranks (processes with GPU work) in this job", ("ranks",)),
    fact("rank_iter_skew", "x", "slowest rank's median iteration time / the median over ranks", ("ranks",)),
    fact("rank_compute_skew", "x", "most compute per iteration (non-NCCL kernel time) / the median over ranks", ("ranks",)),
    fact("rank_gpu_active_spread_pct", "%", "highest minus lowest GPU-active % over ranks (points)", ("ranks",)),
    fact("rank_nccl_share_spread_pct", "%", "highest minus lowest NCCL share of busy time over ranks (points)", ("ranks",)),
    fact("straggler_last_arrival_pct", "%", "share of the collectives the most often last-arriving rank arrived last at (shortest NCCL kernel: it waited least)", ("ranks",)),
    fact("straggler_rank", "", "the rank that arrives last most often (by compute skew when there are no collectives)", ("ranks",)),
    fact("nccl_last_arrival_pct", "%", "share of the collectives this rank arrived at last (its NCCL kernel was the shortest)", ("ranks",)),
    fact("compute_ms_per_iter", "ms", "non-NCCL kernel time per iteration (per window when there are no iterations)", ("ranks",)),
]
