"""After the rules fired: one finding per cause, gains that add up, severity that follows the gain.

Called by ``evaluate`` on the findings the firings became (``model.Finding``), which it completes in
place: the fields after ``references``, and nothing the type does not declare. Everything it decides
comes from the rule files (``subject``, ``cause``, ``supersedes``, ``refutes``, ``actionable``) and the
pack's params; nothing here knows a rule by name.

1. A finding that **refutes** another one about the same subject (or a part of it) drops it; the dropped
   finding becomes supporting evidence with the reason (``because``).
2. The findings of a ``combine: kernels`` rule become one, about the kernels (their gains add).
3. A finding that **supersedes** another one folds it in: its evidence becomes supporting evidence, the
   gain is the larger of the two (they estimate the same time), the severity the higher. Deeper rules
   fold first, so a chain (system rule > kernel rule > ncu's own suggestion) ends in one finding.
4. Each gain is capped at its subject's share of the window and at what the critical path lets its fix
   win; severity is capped by the gain; the gains' union is the recoverable time (``engine/gains.py``).
5. Too little GPU work in the window (``min_gpu_busy_ms``) caps every finding at low and says so.
6. A finding about the idle time names the step's phase that holds most of it (``phase``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..notes import Note
from . import conditions, critical
from .gains import (PARENT, SHARE_FACT, SUMMARY_RANGE, allowed_severity, gain_basis, guard, overlap,  # noqa: F401
                    recoverable, settle, share, within)
from .gains import parent as _parent
from .model import Finding, IdlePhase, Recoverable, Support, TooLittleWork
from .relations import supersede_depth
from .categories import builtin_categories
from .rules import SEVERITIES, Rule

# a finding about the idle time names the NVTX phase that holds this share of the idle time or more (issue 46)
PHASE_MIN_SHARE_PCT = 30.0


@dataclass
class Resolution:
    findings: list[Finding]
    recoverable: Recoverable
    notes: list[str] = field(default_factory=list)
    too_little_work: TooLittleWork | None = None


class _Alive:
    """The findings still standing, in their order, indexed by rule and by (rule, subject): membership and
    removal by identity in O(1) (two findings may be equal, and comparing their evidence costs
    more than the whole resolution); the findings of a rule about subjects overlapping a subject without
    looking at the other findings (resolution is linear in the findings, not quadratic)."""

    def __init__(self, items):
        d: dict[int, Finding] = {}
        pos: dict[int, int] = {}
        by_rule: dict[str, dict[int, Finding]] = {}
        by_subject: dict[str, dict[str, dict[int, Finding]]] = {}   # rule -> subject -> findings
        for i, f in enumerate(items):      # (one pass, no default dicts made for nothing: 18,000 findings at 10 k)
            k = id(f)
            d[k] = f
            pos[k] = i
            r = f.rule
            mine = by_rule.get(r)
            if mine is None:
                mine = by_rule[r] = {}
                by_subject[r] = {}
            mine[k] = f
            subjects = by_subject[r]
            bucket = subjects.get(f.subject)
            if bucket is None:
                bucket = subjects[f.subject] = {}
            bucket[k] = f
        self._d, self._pos, self._by_rule, self._by_subject = d, pos, by_rule, by_subject

    def __iter__(self):
        return iter(list(self._d.values()))

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, f) -> bool:
        return id(f) in self._d

    def remove(self, f) -> None:
        del self._d[id(f)]
        del self._by_rule[f.rule][id(f)]
        self._unfile(f)

    def _unfile(self, f) -> None:
        bucket = self._by_subject[f.rule][f.subject]
        del bucket[id(f)]
        if not bucket:
            del self._by_subject[f.rule][f.subject]

    def set_subject(self, f, subject: str) -> None:
        self._unfile(f)
        f.subject = subject
        self._by_subject[f.rule].setdefault(subject, {})[id(f)] = f

    def of_rule(self, rid: str) -> list[Finding]:
        """The live findings of rule ``rid``, in order."""
        return list(self._by_rule.get(rid, {}).values())

    def overlapping(self, rid: str, subject: str) -> list[Finding]:
        """The live findings of rule ``rid`` whose subject is ``subject``, a part of it or a whole it is part
        of, in order: the subject's ancestors are looked up; its parts are found among the rule's subjects
        (a kernel has no parts, so a kernel finding looks at a handful of buckets)."""
        subjects = self._by_subject.get(rid)
        if not subjects:
            return []
        found: list[Finding] = []
        s: str | None = subject
        while s is not None:                       # the subject and the wholes it is part of
            found += subjects.get(s, {}).values()
            s = _parent(s)
        if not subject.startswith("kernel:"):      # its parts (a kernel subject has none)
            for t, bucket in subjects.items():
                if t != subject and within(t, subject):
                    found += bucket.values()
        pos = self._pos
        return sorted(found, key=lambda f: pos[id(f)])


def _brief(f: Finding, relation: str, because: str | None) -> Support:
    return Support(f.rule, relation, because, f.title, f.message, f.scope, f.estimated_gain_pct, f.evidence)


def _text(t: dict | None, lang: str) -> str | None:
    from ..notes import catalogs

    return catalogs.rule_text(t, lang)


def _max_sev(a: str, b: str) -> str:
    return a if SEVERITIES.index(a) >= SEVERITIES.index(b) else b


def _gain_order(f: Finding) -> float:
    return -(f.estimated_gain_pct or 0.0)


class _Folding:
    """Steps 1-3 on the live findings (``_Alive``): what the rules' relations drop, combine and fold."""

    def __init__(self, findings: list[Finding], rules: dict[str, Rule], run: dict, kernels: dict, inputs: set[str],
                 params_of: dict, lang: str):
        self.rules, self.run, self.kernels, self.inputs, self.params_of, self.lang = rules, run, kernels, inputs, params_of, lang
        self.defaults: dict[str, dict] = {}
        self.ctx_of: dict[int, dict] = {}      # a finding's names for relation conditions, made once (read only)
        for f in findings:
            r = rules[f.rule]
            f.subject = "kernel:" + str(f.scope.get("kernel")) if r.subject == "kernel" else r.subject
            f.cause = r.cause
        self.alive = _Alive(findings)

    def params(self, r: Rule) -> dict:
        p = self.params_of.get(r.id)
        if p is None:
            p = self.defaults.get(r.id)
            if p is None:
                p = self.defaults[r.id] = r.param_values()
        return p

    def ctx(self, f: Finding) -> dict:
        c = self.ctx_of.get(id(f))
        if c is None:
            r = self.rules[f.rule]
            k = self.kernels.get(f.scope.get("kernel")) or {} if r.scope == "kernel" else {}
            c = self.ctx_of[id(f)] = {**self.run, **self.params(r), **k}
        return c

    def related(self, a: Finding, rel: dict):
        """The live findings of the related rule about an overlapping subject (one within the other)."""
        r = self.rules[a.rule]
        for f in self.alive.overlapping(rel["rule"], a.subject):
            if f is a:
                continue
            # (no condition holds: the finding's names are not gathered for nothing)
            if rel["when"] is None or conditions.holds(rel["when"], self.ctx(f), self.params(r), self.inputs,
                                                       r.pack_conditions):
                yield f

    def refute(self) -> None:
        """1. A finding drops the ones its rule refutes; each becomes supporting evidence, with the reason."""
        alive = self.alive
        for a in list(alive):
            if a not in alive:
                continue
            for rel in self.rules[a.rule].refutes:
                for f in list(self.related(a, rel)):
                    alive.remove(f)
                    a.supporting += [_brief(f, "refuted", _text(rel["because"], self.lang))] + f.supporting

    def combine(self) -> None:
        """2. One finding for the kernels a ``combine: kernels`` rule fired on (their gains add: different kernels)."""
        alive = self.alive
        for rid in dict.fromkeys(f.rule for f in alive):
            group = sorted(alive.of_rule(rid), key=_gain_order)
            if self.rules[rid].combine != "kernels" or len(group) < 2:
                continue
            head = group[0]
            for f in group[1:]:
                alive.remove(f)
                head.supporting += [_brief(f, "also", None)] + f.supporting
                if f.estimated_gain_pct is not None:
                    head.estimated_gain_pct = (head.estimated_gain_pct or 0.0) + f.estimated_gain_pct
                head.severity = _max_sev(head.severity, f.severity)
            alive.set_subject(head, "kernels")

    def supersede(self) -> None:
        """3. Supersessions, deepest rules first (a folded finding has folded its own)."""
        alive, rules = self.alive, self.rules
        depth = supersede_depth(rules)
        for a in sorted(alive, key=lambda f: (depth.get(f.rule, 0), _gain_order(f))):
            if a not in alive:
                continue
            for rel in rules[a.rule].supersedes:
                for f in sorted(self.related(a, rel), key=_gain_order):
                    alive.remove(f)
                    self.fold(a, f, _text(rel["because"], self.lang))

    def fold(self, a: Finding, f: Finding, because: str | None) -> None:
        """``a`` takes in ``f``: its evidence, its subject when broader, its gain and severity (see the rules)."""
        a.supporting += [_brief(f, "folded", because)] + f.supporting
        if within(a.subject, f.subject):
            self.alive.set_subject(a, f.subject)     # the broader subject: a kernel finding that folds a run one
        # a rule whose estimate replays its own advice (or, without traces, bounds it: the time the host
        # waited in syncs) keeps it; otherwise the larger of the two gains
        rule = self.rules[a.rule]
        est = rule.estimate or {}
        if f.estimated_gain_pct is not None and rule.actionable and (
                a.estimated_gain_pct is None or not (est.get("replay") or est.get("own"))):
            a.estimated_gain_pct = max(a.estimated_gain_pct or 0.0, f.estimated_gain_pct)
        if self.rules[f.rule].lends_severity:
            a.severity = _max_sev(a.severity, f.severity)


def resolve(findings: list[Finding], rules: dict[str, Rule], run: dict, kernels: dict, inputs: set[str],
            params_of=None, lang: str = "en", replay=None, categories: dict | None = None,
            where: dict | None = None) -> Resolution:
    """``findings``: the engine's (``model.Finding``), completed in place: subject, cause, supporting,
    rule_severity, subject_share_pct, the gain's basis, range and cap, the idle time's phase.
    ``categories``: the packs' (``RuleSet.categories``; the built-in pack's when None).
    ``params_of``: rule id -> its parameter values (``RuleSet.params``; a rule it lacks has its
    defaults). ``replay``: names of transformations -> their gain replayed together (facts/replay.py),
    when the iteration could be replayed: the total of the findings then comes from it, never from a sum."""
    kernels = {k.get("name"): k for k in kernels if k.get("name")} if isinstance(kernels, list) else kernels
    folding = _Folding(findings, rules, run, kernels, inputs, params_of if params_of is not None else {}, lang)
    folding.refute()
    folding.combine()
    folding.supersede()
    alive = list(folding.alive)
    sides_of = critical.sides(categories if categories is not None else builtin_categories())
    for f in alive:                     # 4. gains within the subject's share; severity from the gain
        settle(f, rules[f.rule], run, kernels, sides_of)
    res = Resolution(alive, critical.cap_total(recoverable(alive, run, kernels, rules, replay),
                                               critical.total_cap(alive, run, within, sides_of)))
    guarded = guard(res.findings, rules, run)          # 5. too little work to judge
    if guarded is not None:
        res.too_little_work, note = guarded
        res.notes.append(note)
    place_idle(res.findings, run)                      # 6. where the idle time is
    unplaced = place_code(res.findings, rules, where or {})       # 7. where in the user's code
    if unplaced and run.get("stacks_source") is None:
        # a torch.profiler trace (the only input that names its GPUs' maker) gets its own words: with_stack
        words = "torch" if "gpu_vendor" in run else "full"
        res.notes.append(Note("engine.no_stacks", {"rules": ", ".join(unplaced)}, words=words))
    return res


def idle_phase(run: dict) -> IdlePhase | None:
    """The NVTX phase of the step that holds ``PHASE_MIN_SHARE_PCT`` of the GPU's idle time or more
    (facts/phase_work.py's ``idle_top_phase*``), or None when no phase holds that much."""
    share_pct = run.get("idle_top_phase_share_pct")
    if not isinstance(share_pct, (int, float)) or share_pct < PHASE_MIN_SHARE_PCT:
        return None
    return IdlePhase(run.get("idle_top_phase"), run.get("idle_top_phase_names"), round(float(share_pct), 1))


def place_code(findings: list[Finding], rules: dict[str, Rule], where: dict) -> list[str]:
    """A finding whose rule names the points it is about (``locate``) lists their places in the user's
    code (facts/locations.py), largest share first; a folded finding's points count when its cause has
    none of its own. -> the rules whose findings wanted places and got none."""
    unplaced = []
    for f in findings:
        sel = rules[f.rule].locate
        if sel is None:
            sel = next((rules[s.rule].locate for s in f.supporting if s.rule in rules and rules[s.rule].locate), None)
        w = where.get(sel) if sel else None
        if w is not None and w.locations:
            f.locations = list(w.locations)
        elif sel:
            unplaced.append(f.rule)
    return unplaced


def place_idle(findings: list[Finding], run: dict) -> None:
    """A finding about the GPU's idle time says which phase of the step holds most of it (issue 46)."""
    phase = idle_phase(run)
    if phase is None:
        return
    for f in findings:
        if f.subject == "idle":
            f.phase = phase
