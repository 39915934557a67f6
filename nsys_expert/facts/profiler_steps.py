"""torch.profiler's steps (``ProfilerStep#N``) as the window's iterations (issue 56, item 3).

A trace written by ``on_trace_ready`` with ``schedule(wait, warmup, active)`` holds one cycle's active
steps: the steps before it ran untraced (wait) or traced and dropped (warm-up), so its first recorded step
is already steady, and leaving it out as warm-up halves a three-step window. The profiler stops inside its
last step when the cycle ends before the next ``prof.step()``, leaving a stub (``ProfilerStep#40`` of
1.8 ms after two of 50 ms) that halves every per-step figure. So, for ``ProfilerStep`` iterations:

- a last step shorter than :data:`CUT_SHARE` of the median of the others is cut off: left out, and said;
- in a short cycle (:data:`FEW_STEPS` steps or fewer left), a first step numbered :data:`SCHEDULED_FROM` or more
  (steps ran before the trace) whose length is within :data:`STEADY_BAND` of the others' median is kept: no
  iteration is left out as warm-up, where leaving one out would leave one or two. One that stands out (the
  profiler started inside it, or it still warmed up) is left out as before. Longer traces keep the default
  (the first step's own time, from its start to the end of its GPU work, includes the queue the host ran
  ahead of: kept, it reads as jitter, 1.7x on HTA's TorchRec trace).

``--skip-iterations`` decides the warm-up when given.
"""
from __future__ import annotations

import re

import polars as pl

from ..notes import Note

CUT_SHARE = 0.5            # a last step shorter than this share of the others' median was cut off
STEADY_BAND = (0.8, 1.25)  # a first step within this band of the others' median is steady (as long as they)
FEW_STEPS = 3             # a cycle this short keeps its first step when it is steady
SCHEDULED_FROM = 2         # a first recorded step of this number or more: the schedule ran steps before it
_NUMBER = re.compile(r"ProfilerStep#(\d+)\s*$")


def _median(d: pl.Series) -> float:
    return float(d.median()) if d.len() else 0.0


def _first_number(iters: pl.DataFrame, nvtx: pl.DataFrame | None) -> int | None:
    """The number N of the first iteration's ``ProfilerStep#N`` range, or None."""
    if nvtx is None or not nvtx.height or "name" not in nvtx.columns:
        return None
    s0 = int(iters["s"][0])
    names = nvtx.filter(pl.col("start_ns") == s0)["name"].cast(pl.String).to_list()
    nums = [int(m.group(1)) for m in (_NUMBER.search(n or "") for n in names) if m]
    return min(nums) if nums else None


def steady_steps(iters: pl.DataFrame, nvtx: pl.DataFrame | None,
                 skip_iterations: int | None) -> tuple[pl.DataFrame, int | None, list[Note], list[Note]]:
    """-> (the iterations without a cut-off last step, the warm-up to skip (None: the default), the clauses
    of the window's reason (``window.*`` notes), notes)."""
    notes: list[Note] = []
    why: list[Note] = []
    d = iters["e"] - iters["s"]
    if iters.height >= 3:
        med = _median(d.head(iters.height - 1))
        last = float(d[-1])
        if med > 0 and last < CUT_SHARE * med:
            notes.append(Note("facts.profiler_step_cut", {"ms": last / 1e6, "median": med / 1e6}))
            iters = iters.head(iters.height - 1)
            d = d.head(iters.height)
            why = [Note("window.step_cut", {"ms": last / 1e6, "median": med / 1e6})]
    if skip_iterations is not None or not 2 <= iters.height <= FEW_STEPS:
        return iters, skip_iterations, why, notes
    first = _first_number(iters, nvtx)
    med = _median(d.tail(iters.height - 1))
    if first is not None and first >= SCHEDULED_FROM and med > 0 and \
            STEADY_BAND[0] * med <= float(d[0]) <= STEADY_BAND[1] * med:
        return iters, 0, [*why, Note("window.step_scheduled", {"n": first, "m": iters.height})], notes
    return iters, None, why, notes
