"""One rank's unit of work: load its inputs and compute its facts (what a process pool or Dask runs).

Below both ``scheduler`` (which runs the units) and ``job`` (which asks for them): no arrow back up.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import budget, load

if TYPE_CHECKING:
    from . import facts


@dataclass
class RankResult:
    """What one rank's unit of work returns: small and picklable (no trace frames)."""
    label: str
    prof: load.Profile
    fs: facts.FactSet
    tables: set[str]
    fingerprint: dict = field(default_factory=dict)    # load.runs: tells ranks from unrelated runs


def rank_unit(label: str, files: list[str], pid: int | None, opts: facts.Options) -> RankResult:
    """Load one rank's inputs and compute its facts (the unit a process pool or Dask runs)."""
    from . import facts

    from .load import runs

    # the rank named by the memory watch while its facts are computed too (a worker's: through budget.py's folder)
    with budget.reading(files[0] if len(files) == 1 else f"{os.path.commonpath(files)} ({label})"):
        prof = load.load_files(files, pid=pid)
        fp = runs.fingerprint(prof.tables, prof.meta)
        fs = facts.compute(prof, opts)
    if opts.rank_rows:   # the rank's row of the HTML report's rank timeline, binned here where its frames are
        try:
            from .facts.series import rank_row

            fs.share.rank_row = rank_row(prof, fs)
        except Exception:  # noqa: BLE001 - a chart must never break a diagnosis
            fs.share.rank_row = None
    tables = set(prof.tables)
    prof.tables = {}                                   # the frames stay in the worker
    fs.work = facts.Work()                             # the groups' shared frames stay in the worker
    if fs.window is not None:
        fs.window.iterations = None
    return RankResult(label, prof, fs, tables, fp)
