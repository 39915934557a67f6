"""What every fact group shares: the fact set it writes into, the context it reads, small helpers.

A fact group is one module of this package with one entry point, ``compute(ctx: Context) -> None``:
it reads the loaded frames (``ctx.prof``) and the analysis window (``ctx.win``) and writes named
facts, each with the file it came from, through ``ctx.fs.put``. ``facts.GROUPS`` lists the groups in
the order they run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from ..load import Profile
from . import timeline
from . import window as window_mod

SMALL_KERNEL_NS = 10_000
KERNEL_FACT_LIMIT = 50

# frames and numbers kept in ``FactSet.tables`` for the steps of one process (never reported, never
# sent between processes): busy unions, their total and coverage-ready form, the GPU trace with launch
# times, the host's API intervals, the gaps after syncs, the replay of the iteration (a function of the
# transformations)
PRIVATE_TABLES = ("_busy", "_busy_span", "_busy_cover", "_busy_total", "_gpu", "_host", "_kern_busy", "_wait_tid", "_sync_gaps",
                  "_replay")


@dataclass
class Options:
    user_window: tuple[int, int] | None = None
    skip_iterations: int | None = None
    iteration_range: str | None = None     # --iteration-range NAME: the NVTX range that marks iterations
    rank_rows: bool = False                # bin each rank's timeline row (the HTML report of a multi-rank job)
    phases: tuple = ()                     # the rule packs' NVTX phase entries (pack.yaml ``phases:``), before phases.yaml's


@dataclass
class FactSet:
    run: dict = field(default_factory=dict)
    kernels: list[dict] = field(default_factory=list)
    window: window_mod.Window | None = None
    sources: dict = field(default_factory=dict)     # fact -> file it came from
    absent: dict = field(default_factory=dict)      # fact -> why it is absent (a notes.Note)
    tables: dict = field(default_factory=dict)      # report tables
    warnings: list = field(default_factory=list)    # notes.Note (or, from the pipeline, a plain text)
    tiers: dict = field(default_factory=dict)       # fact -> "summary" when estimated from summary reports

    def put(self, name: str, value, source: str | None, tier: str | None = None) -> None:
        if value is None:
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                return
            value = round(value, 4)
        self.run[name] = value
        if source:
            self.sources[name] = source
        if tier:
            self.tiers[name] = tier


@dataclass
class Context:
    """What a fact group reads: the loaded profile, the window, and what the first steps decided."""
    prof: Profile
    win: window_mod.Window
    fs: FactSet
    timeline_ok: bool = False      # a GPU trace with work in a non-empty window, graphs visible
    graph_hidden: bool = False     # CUDA graph work is not in the GPU trace
    phases: tuple = ()             # the rule packs' NVTX phase entries (facts/phases.py)


def srcs(*names) -> str:
    """Several sources of one fact, each named once."""
    return " + ".join(dict.fromkeys(n for n in names if n))


def pct(part: float, whole: float) -> float | None:
    if not whole or whole <= 0:
        return None
    return 100.0 * part / whole


def in_window(df: pl.DataFrame, win) -> pl.DataFrame:
    return timeline.starting_in(df, win.start_ns, win.end_ns)


def of_kinds(df: pl.DataFrame, kinds: tuple[str, ...]) -> pl.DataFrame:
    """The rows of these operation kinds (no copy when every row is one: the usual trace of kernels)."""
    wanted = pl.col("kind").is_in(list(kinds))
    if df.height == 0 or df.select(wanted.all()).item():
        return df
    return df.filter(wanted)
