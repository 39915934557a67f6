"""The one list of fact group modules (issue 59, item 4).

Each module here declares, beside its code, the facts it puts (its ``FACTS`` list: ``registry.py`` collects
them, in this order, for ``nsys-expert facts`` and docs/rules.md's fact list) and, when it runs as a fact
group, what each of its groups reads and puts (its ``GROUPS`` list of ``declare.group``). ``window``,
``graph``, ``ranks`` and ``ncu_metrics`` declare facts without a group of their own (the window and the
graph check run before the groups, the cross-rank facts in the pipeline, the ncu metrics inside ``ncu``).
The order the groups run in is not this list's: ``facts/order.py`` derives it from the declarations; this
list only breaks the ties between two groups that put the same item without reading it from each other.
A new group is one module plus one entry here.
"""
from __future__ import annotations

from . import (absent, allocator, api, api_shares, between_ops, busy, call_ops, cpu_ops, estimates, fusion, gaps, gpu_metrics, graph, iterations, jit,
               kernels, locations, memcpy, memlevel, multigpu, nccl, ncu, ncu_metrics, nvtx, osrt, overlap, phase_work, phases,
               platform, ranks, replay, starved, summaries, sync_context, waits, window)
from .declare import Group

MODULES = (window, busy, platform, gaps, waits, memcpy, summaries, jit, overlap, kernels, fusion, api, graph, nccl, nvtx,
           iterations, replay, osrt, phase_work, between_ops, estimates, allocator, memlevel, starved, cpu_ops, call_ops, ranks, gpu_metrics, api_shares,
           phases, ncu, ncu_metrics, locations, sync_context, multigpu, absent)

GROUPS: list[Group] = [g for m in MODULES for g in getattr(m, "GROUPS", ())]
