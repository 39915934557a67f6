"""load -> facts -> engine -> report, as one call (the CLI and the tests use it), in the order of its
steps: the rule packs load (while one run's input is read), the inputs are listed, then one run's facts
or a multi-rank job (:mod:`nsys_expert.job`: each rank's unit of work, the cross-rank facts, the
representative rank), one engine run, one report (``report.build``, or ``report.job.build_job`` for a job).
For the HTML report, the chart series too (``facts.series``), which the report receives and does not
compute.

The settings are resolved once, by the caller (the CLI: ``config.resolve``, the command line's values
over the settings file's) and come in the ``Request``; the rule packs they name become one
``engine.RuleSet`` (rules, every parameter's value, the language) and the facts' ``Options``, both
passed down.
"""
from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from . import config, job as jobs, load, scheduler
from .notes import Note
from .load import ranks as rank_inputs

if TYPE_CHECKING:
    from . import engine, facts
    from .report.diagnosis import Diagnosis

# ``facts``, ``engine`` and ``report`` are imported inside ``run``, once the input is being read: a big
# trace parses off the GIL while Python imports them (and the rule packs load)


@dataclass
class Request:
    """What a diagnosis is asked: the inputs and the settings (resolved: ``config.resolve``)."""
    paths: list[str]
    settings: config.Settings = field(default_factory=config.Settings)
    charts: bool = False             # the HTML report's series (set by diagnose_with_series)


@dataclass
class Result:
    doc: Diagnosis                       # report.diagnosis: the renderers read it; it reads as the JSON contract too
    prof: load.Profile | None = None     # the loaded run and its facts (one run; None for a multi-rank job)
    fs: facts.FactSet | None = None
    settings: config.Settings | None = None
    rank_rows: list[dict] = field(default_factory=list)   # a multi-rank job's chart rows (when ``charts``)


def diagnose(req: Request, progress: Callable[..., None] | None = None) -> Diagnosis:
    """The diagnosis of ``req`` (``report.diagnosis.Diagnosis``)."""
    return run(req, progress).doc


def diagnose_with_series(req: Request, progress: Callable[[str], None] | None = None
                         ) -> tuple[Diagnosis, dict, dict | None]:
    """The report plus the chart series the HTML report draws: ``(doc, series, window_series)``.

    The series (:func:`nsys_expert.facts.series.series`) come from the profile and facts this run
    computed (no second load); ``window_series`` bins the analysis window alone, when it is under
    half of the profile (else None). For a multi-rank job (``doc["ranks"]``) there is no timeline:
    the series say why. ``progress`` is told ``"charts"`` when the series start.
    """
    res = run(dataclasses.replace(req, charts=True), progress)
    doc, prof, fs = res.doc, res.prof, res.fs
    if doc.ranks or prof is None:   # one row per rank instead (report/html.py: rank_timeline_chart)
        return doc, {"available": False, "reason": Note("series.multi_rank"),
                     "iterations": [], "causes": [], "ranks": res.rank_rows}, None
    if progress is not None:
        progress("charts")
    from .facts.series import series

    ser = series(prof, fs)
    zoom = None
    w = fs.window
    if (ser.get("available") and w is not None and w.source != "whole" and w.start_ns is not None
            and w.end_ns is not None and w.span_start_ns is not None and w.span_end_ns is not None
            and (w.end_ns - w.start_ns) < 0.5 * (w.span_end_ns - w.span_start_ns)):
        zoom = series(prof, fs, between=(w.start_ns, w.end_ns))
    return doc, ser, zoom


def run(req: Request, progress: Callable[..., None] | None = None) -> Result:
    """``progress`` (optional) is told ``("ranks", done, total, failed)`` as each rank of a multi-rank
    job ends, and a ``Note`` to say at once (the ranks are many for the local pool)."""
    # a bad scheduler is a usage error before any reading
    s = dataclasses.replace(req.settings, scheduler=scheduler.check(req.settings.scheduler))
    per_path, skipped = load.list_inputs(req.paths)
    ranks, notes = rank_inputs.discover(per_path)
    rs, opts, prof = _packs_and_input(ranks, skipped, req, s)
    from . import engine
    from .report.job import build_job

    if prof is not None:       # one export: a rank per process that ran GPU work, when several did
        ranks, notes = jobs.per_process(prof, ranks[0], notes)
    if len(ranks) == 1:
        from . import facts

        fs = facts.compute(prof, opts)
        return _one_run(prof, fs, set(prof.tables), rs, s)
    job = jobs.gather(ranks, notes, skipped, opts, s.scheduler, s.jobs, progress)
    if job.one_run:            # per-rank inputs that were one run after all: its report, saying what was read once
        one = job.representative
        return dataclasses.replace(_one_run(one.prof, one.fs, one.tables, rs, s, job.notes + job.left_out),
                                   prof=None, fs=None)
    # the job and every rank in one engine run; a rank is evaluated on its own facts (no rule of one rank
    # reads a cross-rank fact), which its row then shows with its cross-rank facts
    ev = engine.evaluate(rs, job.fs, job.representative.tables | {"ranks"},
                         ranks=[(r.label, r.fs, r.tables) for r in job.ranks])
    return Result(build_job(job, ev, s.lang, _said(s, rs)), settings=s,
                  rank_rows=job.chart_rows() if req.charts else [])


def _packs_and_input(ranks, skipped, req: Request, s: config.Settings
                     ) -> tuple[engine.RuleSet, facts.Options, load.Profile | None]:
    """The rule packs and the facts' options; one run's input, read (Polars, off the GIL) while the
    packs load and validate (a rule error is reported before any input error). A job's ranks are read
    by their units of work."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(load.load_files, ranks[0].files, skipped, req.paths) if len(ranks) == 1 else None
        try:
            # imported while the input is read (durable, Jinja2, JSON Schema)
            from . import engine, facts, report  # noqa: F401

            packs = engine.load_packs(list(s.packs))
            opts = facts.Options(user_window=s.window, skip_iterations=s.skip_iterations,
                                 iteration_range=s.iteration_range, rank_rows=req.charts,
                                 phases=tuple(e for pk in packs for e in getattr(pk, "phases", ()) or ()))
            rs = engine.RuleSet.build(packs, list(s.select), list(s.ignore), list(s.overrides), s.lang)
        except Exception:
            if pending is not None:
                pending.cancel()
                try:
                    pending.result()
                except Exception:  # noqa: BLE001 - the rule error is the one to report
                    pass
            raise
        return rs, opts, (pending.result() if pending is not None else None)


def _one_run(prof: load.Profile, fs: facts.FactSet, tables: set[str], rs, s: config.Settings,
             notes: list[str] = ()) -> Result:
    from . import engine, report

    ev = engine.evaluate(rs, fs, tables)
    return Result(report.build(prof, fs, ev, s.lang, settings=_said(s, rs), notes=notes), prof, fs, s)


def _said(s: config.Settings, rs) -> dict:
    """What the report says of the settings: those that change what is diagnosed (the window and the
    warm-up are in the report's window)."""
    return {"file": s.file, "packs": list(s.packs), "select": list(s.select), "ignore": list(s.ignore),
            "parameters": rs.changed()}
