"""load -> facts -> engine -> report, as one call (the CLI and the tests use it), and for the HTML
report the chart series (``facts.series``), which the report receives and does not compute.

One run gives one fact set. A multi-rank job (several per-rank inputs, or one export with several
processes) gives one fact set per rank, computed by :func:`rank_unit` - a plain function of plain
arguments, so the same unit of work runs in a local process pool here and on a distributed engine
(Dask, Ray) for jobs with hundreds of ranks (docs/multi-rank.md) - then cross-rank facts, and the
job is diagnosed from the representative rank (the median one) plus those cross-rank facts.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from . import load
from .load import ranks as rank_inputs

if TYPE_CHECKING:
    from . import facts

# ``facts``, ``engine`` and ``report`` are imported inside ``run``, once the input is being read: a big
# trace parses off the GIL while Python imports them (and the rule packs load)


@dataclass
class Request:
    paths: list[str]
    packs: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    window: tuple[int, int] | None = None
    skip_iterations: int | None = None
    lang: str | None = "en"
    jobs: int | None = None          # worker processes for per-rank facts (None: automatic)
    iteration_range: str | None = None   # --iteration-range NAME: the NVTX range that marks iterations


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

    prof = load.load_files(files, pid=pid)
    fp = runs.fingerprint(prof.tables, prof.meta)
    fs = facts.compute(prof, opts)
    tables = set(prof.tables)
    prof.tables = {}                                   # the frames stay in the worker
    fs.tables = {k: v for k, v in fs.tables.items() if k not in facts.PRIVATE_TABLES}
    if fs.window is not None:
        fs.window.iterations = None
    return RankResult(label, prof, fs, tables, fp)


@dataclass
class Result:
    doc: dict
    prof: load.Profile | None = None     # the loaded run and its facts (one run; None for a multi-rank job)
    fs: facts.FactSet | None = None


def diagnose(req: Request) -> dict:
    return run(req).doc


def diagnose_with_series(req: Request, progress: Callable[[str], None] | None = None
                         ) -> tuple[dict, dict, dict | None]:
    """The report plus the chart series the HTML report draws: ``(doc, series, window_series)``.

    The series (:func:`nsys_expert.facts.series.series`) come from the profile and facts this run
    computed (no second load); ``window_series`` bins the analysis window alone, when it is under
    half of the profile (else None). For a multi-rank job (``doc["ranks"]``) there is no timeline:
    the series say why. ``progress`` is told ``"charts"`` when the series start.
    """
    res = run(req)
    doc, prof, fs = res.doc, res.prof, res.fs
    if doc.get("ranks") or prof is None:
        return doc, {"available": False, "reason": "a multi-rank job: one timeline per rank is not drawn",
                     "iterations": [], "causes": []}, None
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


def run(req: Request) -> Result:
    req.lang = req.lang or "en"
    per_path, skipped = load.list_inputs(req.paths)
    ranks, notes = rank_inputs.discover(per_path)
    # one run: start reading it (Polars, off the GIL) while the rule packs load and validate
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(load.load_files, ranks[0].files, skipped, req.paths) if len(ranks) == 1 else None
        try:
            from . import engine, facts, report  # imported while the input is read (durable, Jinja2, JSON Schema)

            opts = facts.Options(user_window=req.window, skip_iterations=req.skip_iterations,
                                 iteration_range=req.iteration_range)
            packs = engine.load_packs(req.packs)   # a rule error is reported before any input error
            rules = engine.select_rules(packs, req.select, req.ignore)
            overrides = engine.parse_overrides(req.overrides, [r for p in packs for r in p.rules])
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
            ev = engine.evaluate(rules, fs, set(prof.tables), overrides, req.lang)
            return Result(report.build(prof, fs, ev, req.lang), prof, fs)
        ranks = [rank_inputs.RankInput(f"pid {p}", ranks[0].files, pid=p) for p in pids]
        notes.append(f"{len(pids)} processes ran GPU work in one export: each is diagnosed as a rank")
    return Result(_diagnose_ranks(ranks, notes, skipped, rules, overrides, opts, req))


def _run_units(ranks, opts, jobs):
    workers = jobs if jobs is not None else (min(len(ranks), os.cpu_count() or 1) if len(ranks) > 2 else 1)
    if workers <= 1:
        return [rank_unit(r.label, r.files, r.pid, opts) for r in ranks]
    # spawn, not fork: Polars' thread pools do not survive a fork
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futs = [pool.submit(rank_unit, r.label, r.files, r.pid, opts) for r in ranks]
        return [f.result() for f in futs]


def _diagnose_ranks(ranks, notes, skipped, rules, overrides, opts, req) -> dict:
    from . import engine, facts, report
    from .facts import ranks as rank_facts

    results = _run_units(ranks, opts, req.jobs)
    if all(r.pid is None for r in ranks):   # separate files: ranks of one job, one run twice, or unrelated runs?
        from .load import runs

        keep, said = runs.relate([r.label for r in results], [r.fingerprint for r in results],
                                 [runs.describe(r.files) for r in ranks])
        notes = notes + said
        results = [results[i] for i in keep]
        if len(results) == 1:      # one run after all: its report, saying what was read once
            r = results[0]
            ev = engine.evaluate(rules, r.fs, r.tables, overrides, req.lang)
            doc = report.build(r.prof, r.fs, ev, req.lang)
            doc["warnings"] += notes
            return doc
    labels = [r.label for r in results]
    cross = rank_facts.cross_rank(labels, [r.fs for r in results])
    for r, extra in zip(results, cross["per_rank"]):
        for k, v in extra.items():
            r.fs.put(k, v, "cross-rank")
    # the representative rank is the typical one: median iteration time, then median compute per
    # iteration (ranks in lockstep share one iteration time; a straggler has more compute)
    def typical(i):
        f = results[i].fs.run
        return (f.get("iter_median_ms") or 0.0, f.get("compute_ms_per_iter") or 0.0, f.get("gpu_active_pct") or 0.0, i)
    order = sorted(range(len(results)), key=typical)
    rep = results[order[len(order) // 2]]
    job = facts.FactSet(run=dict(rep.fs.run), kernels=rep.fs.kernels, window=rep.fs.window,
                        sources=dict(rep.fs.sources), absent=dict(rep.fs.absent), tables=dict(rep.fs.tables),
                        warnings=list(rep.fs.warnings), tiers=dict(rep.fs.tiers))
    for k, v in cross["job"].items():
        job.put(k, v, "cross-rank")
    for k in list(job.absent):
        if k in job.run:
            del job.absent[k]
    ev = engine.evaluate(rules, job, rep.tables | {"ranks"}, overrides, req.lang)
    prof = rep.prof
    doc = report.build(prof, job, ev, req.lang)
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
    doc["representative_rank"] = rep.label
    doc["ranks"] = []
    for r in results:
        rev = engine.evaluate(rules, r.fs, r.tables, overrides, req.lang)
        rdoc = report.build(r.prof, r.fs, rev, req.lang)
        doc["ranks"].append({"rank": r.label, "pid": r.prof.meta.get("pid"), "facts": rdoc["facts"],
                             "window": rdoc["window"], "verdict": rdoc["verdict"],
                             "findings": [{k: f[k] for k in ("rule", "category", "severity", "rank", "title",
                                                             "estimated_gain_pct", "scope")} for f in rdoc["findings"]]})
    return doc
