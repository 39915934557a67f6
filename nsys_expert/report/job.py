"""The report of a multi-rank job (:func:`build_job`): the report of the job's facts and findings
(:func:`nsys_expert.report.build`, on the representative rank's profile), with every rank's inputs
and GPUs (each naming its rank), the warnings merged (one that every rank has is said once, the
others name their rank), the ranks that failed, the representative, and a row per rank, last.
"""
from __future__ import annotations

import dataclasses
from typing import Protocol

from ..facts import FactSet
from ..load import Profile
from ..notes import Note
from .diagnosis import Diagnosis, JobInfo


class Rank(Protocol):
    """A rank as the report reads it (``units.RankResult``)."""
    label: str
    prof: Profile
    fs: FactSet


class Job(Protocol):
    """A job as the report reads it: :class:`nsys_expert.job.Job` (a layer above the report, which the
    report does not import)."""
    ranks: list              # of Rank, in the order of the evaluation's ranks
    failed: list[dict]
    notes: list[str]
    left_out: list[str]
    representative: Rank
    fs: FactSet

    def rank_facts(self, i: int) -> FactSet: ...


def build_job(job: Job, evaluation, lang: str = "en", settings: dict | None = None) -> Diagnosis:
    """The diagnosis of ``job``; ``evaluation``: the engine's run over the job's facts and every rank's
    (``engine.evaluate(..., ranks=...)``, in the order of ``job.ranks``); ``settings`` as
    :func:`nsys_expert.report.build` takes them."""
    from . import build

    rep = job.representative
    rows = [(r.label, r.prof, job.rank_facts(i)) for i, r in enumerate(job.ranks)]
    d = build(rep.prof, job.fs, evaluation, lang, ranks=rows, settings=settings)
    return dataclasses.replace(
        d, inputs=[dict(i, rank=r.label) for r in job.ranks for i in r.prof.inputs], warnings=warnings(job),
        environment={**d.environment,
                     "gpus": [dict(g, rank=r.label) for r in job.ranks for g in r.prof.meta.get("gpus", [])]},
        job=JobInfo(job.failed, rep.label, d.job.ranks))      # last in the JSON, after the job's own fields


def warnings(job: Job) -> list[str]:
    """A warning every rank has is said once, first; then what was said of the inputs; then each
    other warning naming its rank (``[rank0] ...``); then what was left out."""
    per_rank = [r.prof.warnings + r.fs.warnings for r in job.ranks]
    common = set.intersection(*(set(w) for w in per_rank)) if per_rank else set()
    return ([w for w in dict.fromkeys(x for ws in per_rank for x in ws) if w in common] + job.notes
            + [Note("pipeline.rank_note", {"rank": r.label, "note": w}) for r, ws in zip(job.ranks, per_rank)
               for w in ws if w not in common]
            + job.left_out)
