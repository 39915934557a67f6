"""load -> facts -> engine -> report, as one call (the CLI and the tests use it), and for the HTML
report the chart series (``facts.series``), which the report receives and does not compute.

One run gives one fact set. A multi-rank job (several per-rank inputs, or one export with several
processes) gives one fact set per rank, computed by :func:`rank_unit` - a plain function of plain
arguments, so the same unit of work runs in a local process pool or on Dask (``Request.scheduler``,
:mod:`nsys_expert.scheduler`; docs/multi-rank.md) - then cross-rank facts from those small per-rank
results only, and the job is diagnosed from the representative rank (the median one) plus those
cross-rank facts, in one engine run over the job's facts and every rank's (each rank's findings apart:
its row), and one report. A rank that fails is reported and the job diagnosed from the others, unless
fewer than half of the ranks remain.

The settings are resolved once, at the entry (``config.resolve``: the command line's values, which a
``Request`` holds, over the settings file's); the rule packs they name become one ``engine.RuleSet``
(rules, every parameter's value, the language) and the facts' ``Options``, both passed down.
"""
from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from . import config, load, scheduler
from .units import RankResult, rank_unit  # noqa: F401 - the unit of work per rank (units.py)
from .errors import InputError
from .load import ranks as rank_inputs

if TYPE_CHECKING:
    from . import facts

# ``facts``, ``engine`` and ``report`` are imported inside ``run``, once the input is being read: a big
# trace parses off the GIL while Python imports them (and the rule packs load)


@dataclass
class Request:
    """What a diagnosis is asked: the inputs and the command line's settings (None or empty: not given;
    ``config``: the settings file's, ``config.load``)."""
    paths: list[str]
    packs: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    window: tuple[int, int] | None = None
    skip_iterations: int | None = None
    lang: str | None = None          # en (default) or zh
    jobs: int | None = None          # worker processes for per-rank facts (None: automatic)
    iteration_range: str | None = None   # --iteration-range NAME: the NVTX range that marks iterations
    scheduler: str | None = None     # where per-rank work runs: local (default), dask, tcp://HOST:PORT
    charts: bool = False             # the HTML report's series (set by diagnose_with_series)
    fail_on: str | None = None
    config: dict = field(default_factory=dict)


@dataclass
class Result:
    doc: dict
    prof: load.Profile | None = None     # the loaded run and its facts (one run; None for a multi-rank job)
    fs: facts.FactSet | None = None
    settings: config.Settings | None = None


def diagnose(req: Request, progress: Callable[..., None] | None = None) -> dict:
    return run(req, progress).doc


def diagnose_with_series(req: Request, progress: Callable[[str], None] | None = None,
                         settings: config.Settings | None = None) -> tuple[dict, dict, dict | None]:
    """The report plus the chart series the HTML report draws: ``(doc, series, window_series)``.

    The series (:func:`nsys_expert.facts.series.series`) come from the profile and facts this run
    computed (no second load); ``window_series`` bins the analysis window alone, when it is under
    half of the profile (else None). For a multi-rank job (``doc["ranks"]``) there is no timeline:
    the series say why. ``progress`` is told ``"charts"`` when the series start.
    """
    res = run(dataclasses.replace(req, charts=True), progress, settings)
    doc, prof, fs = res.doc, res.prof, res.fs
    if doc.get("ranks") or prof is None:   # one row per rank instead (report/html.py: rank_timeline_chart)
        return doc, {"available": False, "reason": "a multi-rank job: one row per rank below, no single timeline",
                     "iterations": [], "causes": [], "ranks": doc.pop("_rank_rows", [])}, None
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


def settings_of(req: Request) -> config.Settings:
    """The request's settings: its command line's values over its settings file's (once per run)."""
    return config.resolve(req, req.config)


def run(req: Request, progress: Callable[..., None] | None = None, settings: config.Settings | None = None) -> Result:
    """``progress`` (optional) is told ``("ranks", done, total)`` as each rank of a multi-rank job ends.
    ``settings``: the request's, when the caller resolved them already (the CLI: it reads the language
    and ``--fail-on``), else resolved here."""
    s = settings if settings is not None else settings_of(req)
    s = dataclasses.replace(s, scheduler=scheduler.check(s.scheduler))  # a bad value: a usage error before any reading
    per_path, skipped = load.list_inputs(req.paths)
    ranks, notes = rank_inputs.discover(per_path)
    # one run: start reading it (Polars, off the GIL) while the rule packs load and validate
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(load.load_files, ranks[0].files, skipped, req.paths) if len(ranks) == 1 else None
        try:
            from . import engine, facts, report  # imported while the input is read (durable, Jinja2, JSON Schema)

            packs = engine.load_packs(list(s.packs))   # a rule error is reported before any input error
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
        prof = pending.result() if pending is not None else None
    if len(ranks) == 1:
        pids = rank_inputs.processes_with_gpu_work(prof.tables.get("gpu_trace"))
        if len(pids) < 2:
            fs = facts.compute(prof, opts)
            ev = engine.evaluate(rs, fs, set(prof.tables))
            return Result(report.build(prof, fs, ev, s.lang, settings=_said(s, rs)), prof, fs, s)
        ranks = [rank_inputs.RankInput(f"pid {p}", ranks[0].files, pid=p) for p in pids]
        notes.append(f"{len(pids)} processes ran GPU work in one export: each is diagnosed as a rank")
    return Result(_diagnose_ranks(ranks, notes, skipped, rs, opts, s, progress), settings=s)


def _said(s: config.Settings, rs) -> dict:
    """What the report says of the settings: those that change what is diagnosed (the window and the
    warm-up are in the report's window)."""
    return {"file": s.file, "packs": list(s.packs), "select": list(s.select), "ignore": list(s.ignore),
            "parameters": rs.changed()}


def _why(e: BaseException) -> str:
    if isinstance(e, InputError):
        return e.line()
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _gather(ranks, opts, s: config.Settings, progress, arrived: Callable[[int, RankResult], None]
            ) -> tuple[list[RankResult], list[int], list[dict]]:
    """Every rank's result, in rank order, as the scheduler streams them back (``arrived(i, result)``
    is called as each comes in, while the others still run); the index in ``ranks`` of each; the
    failed ranks ``[{"rank", "error"}]``.
    Fewer than half of the ranks left: the job is not diagnosed."""
    got: list[RankResult | None] = [None] * len(ranks)
    errors: dict[int, BaseException] = {}
    done = 0
    for i, out in scheduler.run_units(ranks, opts, s.scheduler, s.jobs):
        if isinstance(out, BaseException):
            errors[i] = out
        else:
            got[i] = out
            arrived(i, out)
        done += 1
        if progress is not None:
            progress("ranks", done, len(ranks), len(errors))
    failed = [{"rank": ranks[i].label, "error": _why(e)} for i, e in sorted(errors.items())]
    left = len(ranks) - len(failed)
    if failed and 2 * left < len(ranks):
        if not any(isinstance(e, InputError) for e in errors.values()):
            raise next(iter(errors.values()))         # no rank's input was at fault: an internal error
        others = [f["rank"] for f in failed[1:]]
        more = f"; also {', '.join(others[:8])}{', ...' if len(others) > 8 else ''}" if others else ""
        raise InputError(f"{len(failed)} of {len(ranks)} ranks could not be diagnosed, fewer than half remain "
                         f"({failed[0]['rank']}: {failed[0]['error']}{more})",
                         hint="fix or leave out those ranks' files")
    return [g for g in got if g is not None], [i for i, g in enumerate(got) if g is not None], failed


def _diagnose_ranks(ranks, notes, skipped, rs, opts, s: config.Settings, progress=None) -> dict:
    from . import engine, facts, report
    from .facts import ranks as rank_facts

    # as each rank's result arrives, only what the engine, the cross-rank facts and the job's report
    # read of it is kept (its facts and their sources, its kernels' facts, the NCCL kernel sequence, its
    # chart row, warnings, inputs): the client's memory grows by tens of KB per rank, not by its tables.
    # The ranks' fact names, reasons for absent facts and sources are mostly the same texts: one copy each
    texts: dict[str, str] = {}

    def shared(d: dict) -> dict:
        return {texts.setdefault(k, k): texts.setdefault(v, v) if isinstance(v, str) else v for k, v in d.items()}

    def arrived(i: int, r: RankResult) -> None:
        f = r.fs
        kept = {k: f.tables[k] for k in ("_nccl_sequence", "_rank_row", "ncu_command") if f.tables.get(k) is not None}
        r.fs = facts.FactSet(run=shared(f.run), kernels=[shared(k) for k in f.kernels], window=f.window,
                             sources=shared(f.sources),
                             absent=shared(f.absent), tiers=shared(f.tiers), warnings=f.warnings, tables=kept)

    results, indices, failed = _gather(ranks, opts, s, progress, arrived)   # results[j] is ranks[indices[j]]
    if all(r.pid is None for r in ranks):   # separate files: ranks of one job, one run twice, or unrelated runs?
        from .load import runs

        keep, said = runs.relate([r.label for r in results], [r.fingerprint for r in results],
                                 [runs.describe(ranks[i].files) for i in indices])
        notes = notes + said
        if len(keep) < len(results):
            results, indices = ([xs[j] for j in keep] for xs in (results, indices))
        if len(results) == 1:      # one run after all: its report, saying what was read once
            r = ranks[indices[0]]
            one = rank_unit(r.label, r.files, r.pid, opts)   # its tables were dropped when it arrived
            doc = report.build(one.prof, one.fs, engine.evaluate(rs, one.fs, one.tables), s.lang,
                               settings=_said(s, rs))
            doc["warnings"] += notes
            return doc
    labels = [r.label for r in results]
    cross = rank_facts.cross_rank(labels, [r.fs for r in results])
    # the representative rank is the typical one: median iteration time, then median compute per
    # iteration (ranks in lockstep share one iteration time; a straggler has more compute)
    def typical(i):
        f = {**results[i].fs.run, **cross["per_rank"][i]}
        return (f.get("iter_median_ms") or 0.0, f.get("compute_ms_per_iter") or 0.0, f.get("gpu_active_pct") or 0.0, i)
    order = sorted(range(len(results)), key=typical)
    mid = order[len(order) // 2]
    # the representative's full facts (kernels, tables, sources) once more, here: one rank's load
    # (the client reads the job's files too: it found the ranks), instead of every rank's tables kept
    r = ranks[indices[mid]]
    rep = rank_unit(r.label, r.files, r.pid, opts)
    for k, v in cross["per_rank"][mid].items():
        rep.fs.put(k, v, "cross-rank")
    job = facts.FactSet(run=dict(rep.fs.run), kernels=rep.fs.kernels, window=rep.fs.window,
                        sources=dict(rep.fs.sources), absent=dict(rep.fs.absent), tables=dict(rep.fs.tables),
                        warnings=list(rep.fs.warnings), tiers=dict(rep.fs.tiers))
    for k, v in cross["job"].items():
        job.put(k, v, "cross-rank")
    for k in list(job.absent):
        if k in job.run:
            del job.absent[k]
    # the job and every rank in one engine run; a rank is evaluated on its own facts (no rule of one rank
    # reads a cross-rank fact), which its row then shows with its cross-rank facts
    ev = engine.evaluate(rs, job, rep.tables | {"ranks"}, ranks=[(r.label, r.fs, r.tables) for r in results])
    for r, extra in zip(results, cross["per_rank"]):
        for k, v in extra.items():
            r.fs.put(k, v, "cross-rank")
    prof = rep.prof
    doc = report.build(prof, job, ev, s.lang, ranks=[(r.label, r.prof, r.fs) for r in results], settings=_said(s, rs))
    doc["inputs"] = [dict(i, rank=r.label) for r in results for i in r.prof.inputs]
    # a warning every rank has is said once; the others name their rank
    per_rank = [r.prof.warnings + r.fs.warnings for r in results]
    common = set.intersection(*(set(w) for w in per_rank)) if per_rank else set()
    doc["warnings"] = [w for w in dict.fromkeys(x for ws in per_rank for x in ws) if w in common] + notes
    doc["warnings"] += [f"[{r.label}] {w}" for r, ws in zip(results, per_rank) for w in ws if w not in common]
    doc["environment"]["gpus"] = [dict(g, rank=r.label) for r in results for g in r.prof.meta.get("gpus", [])]
    if skipped:
        doc["warnings"].append("subfolders not read (pass one as its own PATH to diagnose it): "
                               + ", ".join(os.path.basename(d) for d in skipped))
    for f in failed:
        doc["warnings"].append(f"[{f['rank']}] not diagnosed: {f['error']}; the job is diagnosed from the other "
                               f"{len(results)} of {len(ranks)} ranks")
    doc["ranks_failed"] = failed
    doc["representative_rank"] = rep.label
    if opts.rank_rows:
        doc["_rank_rows"] = [{"rank": r.label, **(r.fs.tables.get("_rank_row") or {})} for r in results]
    doc["ranks"] = doc.pop("ranks")      # last in the JSON, after the job's own fields
    return doc
