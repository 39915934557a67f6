"""The report's findings: the engine's (``engine.model.Finding``) ranked and turned into the JSON
contract's dicts, with what they win back together (``Recoverable``) and the minimum-work guard
(``TooLittleWork``). The one place these types become dicts; it reads them and writes nothing into them
(every key comes from a declared field: issue 49, item 1)."""
from __future__ import annotations

from ..engine.model import Evidence, Finding, IdlePhase, PathCap, Recoverable, SubjectGain, Support, TooLittleWork
from ..engine.categories import builtin_categories
from ..engine.rules import SEVERITIES


def system_categories(categories: dict | None = None) -> frozenset:
    """The categories of the system-level (whole-run) rules (level ``system`` in pack.yaml ``categories:``;
    ``categories``: the packs', ``Evaluation.categories``; the built-in pack's when None): a verdict of "no
    bottleneck" needs them all."""
    cats = categories if categories else builtin_categories()
    return frozenset(n for n, c in cats.items() if c.level == "system")


def _rank_key(f: Finding, system: frozenset):
    gain = f.estimated_gain_pct
    return (-(round(gain, 1) if gain is not None else -1.0), -SEVERITIES.index(f.severity),
            f.category not in system, f.rule, str(f.scope.get("kernel") or ""))


def rank_findings(findings: list[Finding], categories: dict | None = None) -> list[Finding]:
    """Fix first what wins back the most time; then by severity; then the system-level cause before other
    ways to win the same time (sync_bound: removing the syncs and TF32 GEMMs both give back the host's
    wait); then by rule id (stable). The findings in that order (their rank: the place in it, from 1)."""
    system = system_categories(categories)
    return sorted(findings, key=lambda f: _rank_key(f, system))


def ordered(findings: list[Finding], categories: dict | None = None) -> list[dict]:
    """The findings ranked, each as the JSON contract's dict (finding_json)."""
    return [finding_json(f, i + 1) for i, f in enumerate(rank_findings(findings, categories))]


def finding_json(f: Finding, rank: int) -> dict:
    """The one place a finding (engine/model.py) becomes the JSON contract's dict: its fields in the
    contract's order, the optional ones only when set, its parts (evidence, supporting, phase) as theirs.
    It reads the finding and writes nothing into it: every key comes from a declared field."""
    return {"rule": f.rule, "category": f.category, "severity": f.severity, "rank": rank,
            "title": f.title, "message": f.message, "evidence": [evidence_json(e) for e in f.evidence],
            "advice": f.advice, "estimated_gain_pct": f.estimated_gain_pct,
            **({"gain_basis": f.gain_basis} if f.gain_basis else {}),
            **({"gain_capped_by": f.gain_capped_by} if f.gain_capped_by else {}),
            **({"estimated_gain_range_pct": f.estimated_gain_range_pct} if f.estimated_gain_range_pct else {}),
            "confidence": f.confidence, "scope": f.scope,
            "pack": f.pack, "references": f.references,
            "subject": f.subject, "subject_share_pct": f.subject_share_pct,
            "cause": f.cause, "supporting": [support_json(s) for s in f.supporting],
            **({"phase": phase_json(f.phase)} if f.phase is not None else {}),
            **({"locations": [location_json(x) for x in f.locations]} if f.locations else {})}


def evidence_json(e: Evidence) -> dict:
    """``findings[].evidence[]``: a fact the finding rests on."""
    return {"fact": e.fact, "value": e.value, "threshold": e.threshold, "op": e.op, "unit": e.unit, "source": e.source}


def support_json(s: Support) -> dict:
    """``findings[].supporting[]``: a finding resolution took in, and how."""
    return {"rule": s.rule, "relation": s.relation, "because": s.because, "title": s.title, "message": s.message,
            "scope": s.scope, "estimated_gain_pct": s.estimated_gain_pct,
            "evidence": [evidence_json(e) for e in s.evidence]}


def location_json(x) -> dict:
    """``findings[].locations[]``: a place in the user's code (facts/where.py's ``Location``)."""
    return {"file": x.file, "line": x.line, "function": x.function, "operator": x.operator,
            "share_pct": x.share_pct, "chain": list(x.chain), "source": x.source}


def phase_json(p: IdlePhase) -> dict:
    """``findings[].phase``: the step's phase that holds most of the GPU's idle time (engine/resolve.py)."""
    return {"phase": p.phase, "names": p.names, "share_pct": p.share_pct}


def recoverable_json(r: Recoverable | None) -> dict:
    """``recoverable``: the total, each subject's part, how the total was found, the path's bound; ``{}``
    when no rule could run (nothing was resolved)."""
    if r is None:
        return {}
    return {"total_pct": r.total_pct, "subjects": [subject_gain_json(s) for s in r.subjects],
            **({"basis": r.basis} if r.basis is not None else {}),
            **({"replayed": r.replayed} if r.replayed is not None else {}),
            **({"critical_path": path_cap_json(r.critical_path)} if r.critical_path is not None else {})}


def subject_gain_json(s: SubjectGain) -> dict:
    return {"subject": s.subject, "share_pct": s.share_pct, "gain_pct": s.gain_pct, "findings": s.findings}


def path_cap_json(c: PathCap) -> dict:
    return {"cap_pct": c.cap_pct, "fact": c.fact, "value": c.value}


def too_little_work_json(t: TooLittleWork | None) -> dict | None:
    """``too_little_work``: the GPU work the run had and the least the pack asks, or None."""
    if t is None:
        return None
    out = {"gpu_busy_ms": t.gpu_busy_ms, "min_gpu_busy_ms": t.min_gpu_busy_ms}
    if t.gpu_ops is not None:   # the window's few kernels decided, not its GPU time
        out.update(gpu_ops=t.gpu_ops, min_gpu_ops=t.min_gpu_ops)
    if t.profiler_steps is not None:   # a torch.profiler trace of one step: it cannot be told from a stub
        out["profiler_steps"] = t.profiler_steps
    return out
