"""A multi-rank job, gathered (:func:`gather`): every rank's unit of work (:func:`units.rank_unit`, run
where ``Settings.scheduler`` says: a local process pool or Dask, :mod:`nsys_expert.scheduler`), the
runs related (the same run read twice is read once; unrelated runs are an input error), the
representative rank chosen and read once more in full, and the cross-rank facts from the ranks'
small results only. A rank that fails is reported and the job made of the others, unless fewer than
half of the ranks remain.

Below ``pipeline`` (which evaluates a :class:`Job` and hands it to ``report.job.build_job``), above
``units`` and ``scheduler``: no call back up. The report reads a Job; it never computes one.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from . import budget, scheduler
from .errors import InputError
from .notes import Note
from .load import ranks as rank_inputs
from .units import RankResult, rank_unit

if TYPE_CHECKING:
    from . import facts, load


@dataclass
class Job:
    """What a multi-rank job's report is made of. ``ranks`` hold each rank's own facts (what the engine
    evaluates a rank on); its cross-rank facts are ``per_rank`` (:meth:`rank_facts` puts them together
    for the rank's row)."""
    ranks: list[RankResult]          # the ranks diagnosed, in rank order, kept small (no tables' frames)
    total: int                       # the ranks asked for, the failed ones included
    failed: list[dict]               # [{"rank", "error"}]: the ranks that could not be diagnosed
    notes: list[str]                 # said of the inputs (a copy read once, one export of processes, a run read twice)
    skipped: list[str]               # the subfolders not read
    left_out: list[str]              # said last: the subfolders not read, each rank not diagnosed
    representative: RankResult       # the typical rank's full result: its facts, kernels, tables, the tables' names
    per_rank: list[dict] = field(default_factory=list)   # each rank's cross-rank facts, in the order of ``ranks``
    fs: facts.FactSet | None = None  # the job's facts: the representative's with its and the job's cross-rank facts
    one_run: bool = False            # the per-rank inputs were one run after all: ``representative`` alone is diagnosed

    def rank_facts(self, i: int) -> facts.FactSet:
        """Rank ``i``'s facts with its cross-rank facts (its row of the report)."""
        fs = self.ranks[i].fs.copy()
        for k, v in self.per_rank[i].items():
            fs.put(k, v, "cross-rank")
        return fs

    def chart_rows(self) -> list[dict]:
        """Each rank's row of the HTML report's rank timeline (binned by its unit of work)."""
        return [{"rank": r.label, **(r.fs.share.rank_row or {})} for r in self.ranks]


def per_process(prof: load.Profile, run: rank_inputs.RankInput, notes: list[str]
                ) -> tuple[list[rank_inputs.RankInput], list[str]]:
    """One export: a rank per process that ran GPU work, when several did (else the run alone)."""
    pids = rank_inputs.processes_with_gpu_work(prof.tables.get("gpu_trace"))
    if len(pids) < 2:
        return [run], notes
    return ([rank_inputs.RankInput(f"pid {p}", run.files, pid=p) for p in pids],
            notes + [Note("pipeline.processes_as_ranks", {"n": len(pids)})])


def gather(ranks: list[rank_inputs.RankInput], notes: list[str], skipped: list[str], opts: facts.Options,
           sched: str | None, workers: int | None, progress: Callable[..., None] | None = None) -> Job:
    """The job of ``ranks`` (``notes``: what was said of the inputs so far; ``skipped``: the subfolders
    not read): each rank's unit of work where ``sched`` says, ``progress("ranks", done, total, failed)``
    told as each ends; ``progress(note)`` first when the ranks are many for the local pool (:func:`many_ranks`)."""
    slow = many_ranks(len(ranks), sched, workers)
    if slow is not None and progress is not None:
        progress(slow)   # said before any rank's work starts
    results, indices, failed = _gather(ranks, opts, sched, workers, progress)   # results[j] is ranks[indices[j]]
    if sched and scheduler.check(sched) not in (scheduler.LOCAL, scheduler.DASK) and os.environ.get(budget.ENV):
        # a budget was given: said where it does not reach (another machine's workers)
        notes = notes + [Note("pipeline.remote_budget", {"address": sched})]
    separate = all(r.pid is None for r in ranks)
    if separate:   # separate files: ranks of one job, one run twice, or unrelated runs?
        from .load import runs

        keep, said = runs.relate([r.label for r in results], [r.fingerprint for r in results],
                                 [runs.describe(ranks[i].files) for i in indices])
        notes = notes + said
        if len(keep) < len(results):
            results, indices = ([xs[j] for j in keep] for xs in (results, indices))
    left_out = [] if not skipped else [Note("load.subfolders", {"dirs": tuple(os.path.basename(d) for d in skipped)})]
    left_out += [Note("pipeline.rank_failed", {"rank": f["rank"], "error": f["error"], "n": len(results),
                                               "total": len(ranks)}) for f in failed]
    if separate and len(results) == 1:   # one run after all: its report, saying what was read once and what was not
        r = ranks[indices[0]]
        one = rank_unit(r.label, r.files, r.pid, opts)   # its tables were dropped when it arrived
        return Job(results, len(ranks), failed, notes, skipped, left_out, one, fs=one.fs, one_run=True)
    from .facts import ranks as rank_facts

    cross = rank_facts.cross_rank([r.label for r in results], [r.fs for r in results])
    mid = _typical(results, cross["per_rank"])
    # the representative's full facts (kernels, tables, sources) once more, here: one rank's load
    # (the client reads the job's files too: it found the ranks), instead of every rank's tables kept
    r = ranks[indices[mid]]
    rep = rank_unit(r.label, r.files, r.pid, opts)
    return Job(results, len(ranks), failed, notes, skipped, left_out, rep, cross["per_rank"],
               _job_facts(rep.fs, cross["per_rank"][mid], cross["job"]))


# what one rank costs the local pool, in CPU seconds per worker process: a rank of a few hundred operations
# loads, computes its ~300 facts and is evaluated in ~80 ms (issue 57, measured 2026-12-07: 512 derived
# ranks, 78 ms of CPU a rank, two workers; 50,000 per-rank files: about half an hour on two cores, the
# note said 18 s after the start, once the files were listed and grouped into ranks); past LOCAL_LIMIT_S
# of that, the run says to use a cluster first
LOCAL_RANK_S = 0.08
LOCAL_LIMIT_S = 60.0


def many_ranks(n: int, sched: str | None, jobs: int | None) -> Note | None:
    """The note that ``n`` ranks take the local pool more than a minute, with what to use instead (a
    Dask cluster), or None (few ranks, or a Dask scheduler already)."""
    if scheduler.check(sched) != scheduler.LOCAL:
        return None
    workers = scheduler.workers_for(n, jobs)
    seconds = n * LOCAL_RANK_S / workers
    if seconds <= LOCAL_LIMIT_S:
        return None
    return Note("pipeline.many_ranks", {"n": n, "workers": workers, "minutes": seconds / 60})


def _typical(results: list[RankResult], per_rank: list[dict]) -> int:
    """The representative rank is the typical one: median iteration time, then median compute per
    iteration (ranks in lockstep share one iteration time; a straggler has more compute)."""
    def key(i):
        f = {**results[i].fs.run, **per_rank[i]}
        return (f.get("iter_median_ms") or 0.0, f.get("compute_ms_per_iter") or 0.0, f.get("gpu_active_pct") or 0.0, i)
    order = sorted(range(len(results)), key=key)
    return order[len(order) // 2]


def _job_facts(rep: facts.FactSet, own: dict, job: dict) -> facts.FactSet:
    """The job's facts: the representative rank's, its cross-rank facts and the job's put in (a fact
    now known has no reason to be absent)."""
    fs = rep.copy()
    for k, v in own.items():
        fs.put(k, v, "cross-rank")
    for k, v in job.items():
        fs.put(k, v, "cross-rank")
    for k in [k for k in fs.absent if k in fs.run]:
        del fs.absent[k]
    return fs


def _why(e: BaseException) -> str:
    if isinstance(e, InputError):
        return e.line()
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _gather(ranks, opts, sched, workers, progress) -> tuple[list[RankResult], list[int], list[dict]]:
    """Every rank's result, in rank order, kept small as the scheduler streams it back; the index in
    ``ranks`` of each; the failed ranks ``[{"rank", "error"}]``. Fewer than half of the ranks left:
    the job is not diagnosed (an input error; an internal one when no rank's input was at fault)."""
    got: list[RankResult | None] = [None] * len(ranks)
    errors: dict[int, BaseException] = {}
    keep = _Small()
    for done, (i, out) in enumerate(scheduler.run_units(ranks, opts, sched, workers), 1):
        if isinstance(out, BaseException):
            errors[i] = out
        else:
            got[i] = keep(out)
        if progress is not None:
            progress("ranks", done, len(ranks), len(errors))
    failed = [{"rank": ranks[i].label, "error": _why(e)} for i, e in sorted(errors.items())]
    if failed and 2 * (len(ranks) - len(failed)) < len(ranks):
        if not any(isinstance(e, InputError) for e in errors.values()):
            raise next(iter(errors.values()))         # no rank's input was at fault: an internal error
        others = [f["rank"] for f in failed[1:]]
        more = f"; also {', '.join(others[:8])}{', ...' if len(others) > 8 else ''}" if others else ""
        raise InputError(f"{len(failed)} of {len(ranks)} ranks could not be diagnosed, fewer than half remain "
                         f"({failed[0]['rank']}: {failed[0]['error']}{more})",
                         hint="fix or leave out those ranks' files")
    return [g for g in got if g is not None], [i for i, g in enumerate(got) if g is not None], failed


class _Small:
    """As each rank's result arrives, only what the engine, the cross-rank facts and the job's report
    read of it is kept (its facts and their sources, its kernels' facts, the NCCL kernel sequence, its
    chart row, warnings, inputs): the client's memory grows by tens of KB per rank, not by its tables.
    The ranks' fact names, reasons for absent facts and sources are mostly the same texts: one copy each."""
    KEPT_TABLES = ("ncu_command",)

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def shared(self, d: dict) -> dict:
        t = self.texts
        return {t.setdefault(k, k): t.setdefault(v, v) if isinstance(v, str) else v for k, v in d.items()}

    def __call__(self, r: RankResult) -> RankResult:
        from . import facts

        f = r.fs
        kept = {k: f.tables[k] for k in self.KEPT_TABLES if f.tables.get(k) is not None}
        r.fs = facts.FactSet(run=self.shared(f.run), kernels=[self.shared(k) for k in f.kernels], window=f.window,
                             sources=self.shared(f.sources), absent=self.shared(f.absent), tiers=self.shared(f.tiers),
                             warnings=f.warnings, tables=kept, share=f.share)
        return r
