"""A starved GPU: how much of the window it is idle, how much of that the cause facts attribute, and
what is left unexplained.

With the GPU and API traces every idle gap gets one cause (``gaps``); the causes a rule can name
(launch, sync, memcpy, data, host) are *attributed*; the rest (``other``: the next operation was
already queued, and gaps whose cause could not be found) is *unexplained*. With the GPU trace and no
API trace, only the host time found by elimination (idle minus all CUDA API time) is attributed. With summaries only, the idle share is the estimate of the summary
tier and nothing is attributed either (the summaries cannot say which gap had which cause).
"""
from __future__ import annotations

from .base import Context
from .declare import fact, group

ATTRIBUTED = ("launch", "sync", "memcpy", "data", "alloc", "load", "sleep", "gil", "wait", "host")


def compute(ctx: Context) -> None:
    fs, run = ctx.fs, ctx.fs.run
    if "gpu_idle_pct" in run:
        idle, tier = run["gpu_idle_pct"], None
        src = fs.sources.get("gpu_idle_pct")
    elif "gpu_idle_est_pct" in run:
        idle, tier = run["gpu_idle_est_pct"], "summary"
        src = fs.sources.get("gpu_idle_est_pct")
    else:
        return
    causes = [f"gpu_idle_{c}_pct" for c in ATTRIBUTED]
    if "gpu_idle_host_pct" not in run:   # no API trace: the host time found by elimination (summaries.py)
        causes.append("gpu_idle_host_elim_pct")
        if "gpu_idle_data_pct" not in run:   # and the idle time inside nvtx_sum's data ranges (phases.py), left out of it
            causes.append("gpu_idle_data_phase_pct")
    attributed = sum(run[c] for c in causes if c in run) if any(c in run for c in causes) else 0.0
    srcs = " + ".join(dict.fromkeys(s for s in [src] + [fs.sources.get(c) for c in causes if c in run] if s))
    fs.put("gpu_idle_attributed_pct", min(idle, attributed), srcs, tier)
    fs.put("gpu_idle_unexplained_pct", max(0.0, idle - attributed), srcs, tier)


# the facts this group puts, beside its code (issue 49): facts/registry.py collects them in its
# table; a doc changed here loses its translation in locale/zh/LC_MESSAGES/facts.po until that is updated
FACTS = [
    fact("gpu_idle_attributed_pct", "%", "idle share of the window that the gap causes attribute (launch, sync, memcpy, data, host)", ("gpu_trace", "nvtx_sum")),
    fact("gpu_idle_unexplained_pct", "%", "idle share of the window no cause attributes (all of it without cuda_api_trace)", ("gpu_trace", "nvtx_sum")),
]

# the group(s) of this module: what each reads and puts (facts/order.py derives the order from it)
GROUPS = [
    group("starved", compute, puts=(FACTS,),
          reads=["fact:gpu_idle_pct", "fact:gpu_idle_est_pct", "fact:gpu_idle_host_elim_pct", "fact:gpu_idle_data_phase_pct"]
          + [f"fact:gpu_idle_{c}_pct" for c in ATTRIBUTED]),
]
