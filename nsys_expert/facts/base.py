"""What every fact group shares: the fact set it writes into, the context it reads, small helpers.

A fact group is one module of this package with one entry point, ``compute(ctx: Context) -> None``:
it reads the loaded frames (``ctx.prof``) and the analysis window (``ctx.win``) and writes named
facts, each with the file it came from, through ``ctx.fs.put``. ``facts/groups.py`` lists the groups; their
order is derived from what each declares it reads and puts (``facts/order.py``).
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

@dataclass
class Work:
    """What the fact groups of one process share while they compute: never reported, never sent between
    processes (``units.rank_unit`` drops it). Busy unions per device (the window's, the whole span's,
    kernels only, the one device's coverage-ready form, their total), the GPU trace with launch times,
    the host's API intervals clipped to the window, the blocked thread, the gaps after syncs, the replay
    of the iteration (a function of the transformations, ``facts/replay.py``)."""
    busy: dict | None = None             # device -> busy union over the window
    busy_span: dict | None = None        # device -> busy union over the whole span
    busy_cover: object = None            # intervals.prepare of the one device's union (coverage queries)
    busy_total: float | None = None      # ns busy over the window, summed over devices
    kern_busy: dict | None = None        # device -> kernel-only union (what hides a copy: memcpy.py)
    gpu: pl.DataFrame | None = None      # the GPU trace with the launch times joined
    host: dict | None = None             # host interval kind (launch, sync, alloc, ...) -> intervals
    wait_tid: object = None              # the launching thread that blocked (waits.py)
    sync_gaps: pl.DataFrame | None = None
    replay: object = None                # facts/replay.py: callable(transformations) -> replayed iteration

    def gpu_trace(self, prof: Profile) -> pl.DataFrame | None:
        """The GPU trace with launch times where the facts joined them, else the loaded one."""
        return self.gpu if self.gpu is not None else prof.tables.get("gpu_trace")


@dataclass
class RankShare:
    """What one rank's unit of work sends the job besides its facts: its NCCL kernel sequence (the
    cross-rank facts' collective alignment, ranks.py) and its row of the HTML rank timeline."""
    nccl_sequence: pl.DataFrame | None = None
    rank_row: dict | None = None


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
    work: Work = field(default_factory=Work)        # shared by the fact groups of one process, never reported
    share: RankShare = field(default_factory=RankShare)   # sent to the job with the rank's facts
    where: dict = field(default_factory=dict)       # selector -> where.Where: the causes' places in the user's code

    def copy(self) -> FactSet:
        """A copy whose facts, sources, reasons, tables, warnings and tiers change apart from this one's
        (the kernels' facts and the window are shared: nothing changes them once computed)."""
        return FactSet(run=dict(self.run), kernels=self.kernels, window=self.window, sources=dict(self.sources),
                       absent=dict(self.absent), tables=dict(self.tables), warnings=list(self.warnings),
                       tiers=dict(self.tiers), work=self.work, share=self.share,
                       where=self.where)

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
    declared: dict = field(default_factory=dict)   # every declared run fact, name -> Fact (registry.RUN_FACTS; absent.py)


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
