"""The diagnosis: what one run (or a job) comes to, as declared types between the engine and the renderers.

``report.build`` makes a :class:`Diagnosis` from the profile, its facts and the engine's ``Evaluation``: the
findings in rank order (``Ranked``: the engine's ``Finding`` and its place), the :class:`Verdict` (a state
and a reason code, the :class:`Limiter` no finding names, the :class:`Steady` share of a window), the rules
not evaluated (``engine.missing.NotEvaluated``), the next steps (``scenarios.NextStep``, whose need and why
are Notes), the warnings and notes (``notes.Note``). The renderers read it: ``to_json`` (the JSON contract,
:func:`json_doc`), the Markdown, the HTML page and the terminal summary; ``diff`` reads two.

A diagnosis also reads as the JSON contract's mapping (``d["verdict"]["state"]``), for the tests and the
callers of ``pipeline.diagnose``; code that renders reads the attributes.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal

from ..engine.missing import NotEvaluated
from ..engine.model import Finding, Recoverable, TooLittleWork
from ..notes import Note
from ..scenarios.next_steps import NextStep
from .findings import finding_json, recoverable_json, too_little_work_json

SCHEMA_VERSION = 1

# why no finding is the verdict (docs/json-contract.md, ``verdict.reason``)
Reason = Literal["no_finding", "no_finding_partial", "no_finding_bound", "utilization_unknown", "idle_unexplained",
                 "idle_explained", "too_little_work", "estimate_near_threshold", "window_not_steady", "no_rows",
                 "no_gpu_work", "copies_unjudged", "steps_unbounded"]


@dataclass(frozen=True, slots=True)
class Steady:
    """How much of a window chosen without NVTX timestamps the NVTX summary's steady steps fill
    (``verdict.steady`` when the reason is ``window_not_steady``)."""
    range: str
    steps: int
    median_ms: float
    steady_ms: float
    window_ms: float
    share: float


@dataclass(frozen=True, slots=True)
class Limiter:
    """The limiter no finding names (``verdict.limiter``): the host's own work between CUDA calls."""
    side: str
    critical_path_host_pct: float
    replay_gain_host_offload_pct: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the report can honestly say (``report/verdict.py`` decides it): ``state`` (diagnosed, likely,
    undetermined), the finding that is the verdict (rule, category, severity, confidence) or the ``reason``
    code why none is, the GPU's activity and its basis, the system-level rules not evaluated, the command
    that confirms or decides it, and what a reason rests on (``gpu_work_to_iter_pct``, ``steady``,
    ``gpu_idle_attributed_pct``) and the ``limiter``."""
    state: str | None = None
    category: str | None = None
    rule: str | None = None
    severity: str | None = None
    confidence: str | None = None
    gpu_active_pct: float | None = None
    gpu_active_basis: str | None = None          # measured, estimated, bound
    reason: Reason | None = None
    system_rules_not_evaluated: list = field(default_factory=list)
    next_command: str | None = None
    gpu_work_to_iter_pct: float | None = None    # basis "bound": what the bound rests on
    steady: Steady | None = None                 # reason "window_not_steady"
    gpu_idle_attributed_pct: float | None = None  # reason "idle_explained"
    limiter: Limiter | None = None
    memcpy_host_share_of_busy_pct: float | None = None  # reason "copies_unjudged"


@dataclass(frozen=True, slots=True)
class Ranked:
    """A finding in the report's order: its ``rank`` (from 1) and the engine's ``finding``; it reads as the
    finding (``x.title``) for the templates."""
    rank: int
    finding: Finding

    def __getattr__(self, name: str):
        if name == "finding":          # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.finding, name)


def ranked(findings: list[Finding], categories: dict | None = None) -> list[Ranked]:
    """The findings in the report's order (``findings.rank_findings``), each with its rank."""
    from .findings import rank_findings

    return [Ranked(i + 1, f) for i, f in enumerate(rank_findings(findings, categories))]


@dataclass(frozen=True, slots=True)
class RankRow:
    """A rank's row of a multi-rank report: its own facts (the cross-rank ones with them), window, verdict
    and findings (the job's findings carry the words and advice)."""
    rank: str
    pid: object
    facts: dict
    window: dict
    verdict: Verdict
    findings: list[Ranked]


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What a multi-rank job's report adds: the ranks that failed, the representative rank, a row per rank."""
    ranks_failed: list
    representative_rank: str
    ranks: list[RankRow]


@dataclass(frozen=True)
class Diagnosis:
    """One run's (or one job's) diagnosis. ``window`` is the window's JSON (``facts.Window.to_json``),
    ``facts`` the run facts as the report writes them (``clean_value``); ``tables`` the fact groups' report
    tables by name; ``recorded``: ``some``, ``nothing`` or ``no_gpu_work``."""
    inputs: list
    window: dict
    facts: dict
    findings: list[Ranked]
    not_evaluated: list[NotEvaluated]
    warnings: list                     # of Said (notes.Note, or a text made outside the notes)
    recoverable: Recoverable | None
    too_little_work: TooLittleWork | None
    fact_sources: dict
    facts_absent: dict                 # fact -> Said
    environment: dict
    tables: dict
    settings: dict
    next_steps: list[NextStep]
    verdict: Verdict
    lang: str = "en"
    recorded: str = "some"
    tool: dict = field(default_factory=dict)
    job: JobInfo | None = None
    categories: dict = field(default_factory=dict)   # the packs' categories (engine.model.Category), by name

    @property
    def ranks(self) -> list[RankRow] | None:
        return self.job.ranks if self.job else None

    @property
    def representative_rank(self) -> str | None:
        return self.job.representative_rank if self.job else None

    # the JSON contract's mapping, for tests and callers of pipeline.diagnose
    @functools.cached_property
    def _json(self) -> dict:
        return json_doc(self)

    def __getitem__(self, key: str):
        return self._json[key]

    def get(self, key: str, default=None):
        return self._json.get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self._json

    def keys(self):
        return self._json.keys()

    def __iter__(self):
        return iter(self._json)


def verdict_json(v: Verdict) -> dict:
    """``verdict``: its fields in the contract's order, what a reason rests on and the limiter only when set."""
    out = {"state": v.state, "category": v.category, "rule": v.rule, "severity": v.severity,
           "confidence": v.confidence, "gpu_active_pct": v.gpu_active_pct, "gpu_active_basis": v.gpu_active_basis,
           "reason": v.reason, "system_rules_not_evaluated": v.system_rules_not_evaluated,
           "next_command": v.next_command}
    if v.gpu_work_to_iter_pct is not None:
        out["gpu_work_to_iter_pct"] = v.gpu_work_to_iter_pct
    if v.steady is not None:
        s = v.steady
        out["steady"] = {"range": s.range, "steps": s.steps, "median_ms": s.median_ms, "steady_ms": s.steady_ms,
                         "window_ms": s.window_ms, "share": s.share}
    if v.gpu_idle_attributed_pct is not None:
        out["gpu_idle_attributed_pct"] = v.gpu_idle_attributed_pct
    if v.memcpy_host_share_of_busy_pct is not None:
        out["memcpy_host_share_of_busy_pct"] = v.memcpy_host_share_of_busy_pct
    if v.limiter is not None:
        lim = v.limiter
        out["limiter"] = {"side": lim.side, "critical_path_host_pct": lim.critical_path_host_pct,
                          "replay_gain_host_offload_pct": lim.replay_gain_host_offload_pct}
    return out


def not_evaluated_json(n: NotEvaluated) -> dict:
    """``not_evaluated[]``: the rule, why (its Notes; ``to_json`` writes their English) and what it lacks."""
    return {"rule": n.rule, "category": n.category, "scope": n.scope, "max_severity": n.max_severity,
            "missing": n.missing, "facts": n.facts, **({"refines": n.refines} if n.refines else {})}


def next_step_json(s: NextStep) -> dict:
    """``next_steps[]``: need and why in English; the host-sampling step says ``limiter: true``."""
    if s.limiter:
        return {"need": str(s.need), "why": str(s.why), "rules": s.rules, "limiter": True, "commands": s.commands}
    return {"need": str(s.need), "rules": s.rules, "why": str(s.why), "commands": s.commands}


ROW_FIELDS = ("rule", "category", "severity", "rank", "title", "estimated_gain_pct", "scope")


def window_json(w: dict) -> dict:
    """``window``: its reason (a ``window.*`` note) in English."""
    return {**w, "reason": str(w["reason"])} if isinstance(w.get("reason"), Note) else w


def rank_row_json(r: RankRow) -> dict:
    return {"rank": r.rank, "pid": r.pid, "facts": r.facts, "window": window_json(r.window), "verdict": verdict_json(r.verdict),
            "findings": [{k: f[k] for k in ROW_FIELDS} for f in (finding_json(x.finding, x.rank) for x in r.findings)]}


def json_doc(d: Diagnosis) -> dict:
    """The JSON contract's document (docs/json-contract.md), in its order of keys."""
    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": d.tool,
        "inputs": d.inputs,
        "window": window_json(d.window),
        "facts": d.facts,
        "findings": [finding_json(x.finding, x.rank) for x in d.findings],
        "not_evaluated": [not_evaluated_json(n) for n in d.not_evaluated],
        "warnings": d.warnings,
        "recoverable": recoverable_json(d.recoverable),
        "too_little_work": too_little_work_json(d.too_little_work),
        "fact_sources": d.fact_sources,
        "facts_absent": d.facts_absent,
        "environment": d.environment,
        "tables": d.tables,
        "settings": d.settings,
        "next_steps": [next_step_json(s) for s in d.next_steps],
        "verdict": verdict_json(d.verdict),
    }
    if d.job is not None:
        doc.update(ranks_failed=d.job.ranks_failed, representative_rank=d.job.representative_rank,
                   ranks=[rank_row_json(r) for r in d.job.ranks])
    return doc
