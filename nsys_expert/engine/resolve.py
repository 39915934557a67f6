"""After the rules fired: one finding per cause, gains that add up, severity that follows the gain.

Called by ``evaluate`` on the findings the firings became. Everything it decides comes from the rule
files (``subject``, ``cause``, ``supersedes``, ``refutes``, ``actionable``) and the pack's params; nothing
here knows a rule by name.

1. A finding that **refutes** another one about the same subject (or a part of it) drops it; the dropped
   finding becomes supporting evidence with the reason (``because``).
2. A finding that **supersedes** another one folds it in: its evidence becomes supporting evidence, the
   gain is the larger of the two (they estimate the same time), the severity the higher. Deeper rules
   fold first, so a chain (system rule > kernel rule > ncu's own suggestion) ends in one finding.
3. Each gain is capped at its subject's share of the window (a kernel: its share of kernel time x the
   kernel-active share; the idle gaps: the idle share; ...). Per subject the gains combine as
   overlapping (each fix works on what the others leave: ``S (1 - prod(1 - g/S))``); different parts
   of the window add, within their parent's share; the total is the union, at most 100 %.
4. Severity is capped by the gain: pack params ``gain_for_<level>_pct`` are the least gain a level
   needs (escalations included); too little GPU work in the window (``min_gpu_busy_ms``) caps every
   finding at low and says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import conditions, critical
from .model import Finding
from .relations import supersede_depth
from .rules import SEVERITIES, Rule

# subject -> (parent, how its share of the window is found); kernel:<name> subjects hang under "kernels"
PARENT = {"run": None, "idle": "run", "busy": "run", "kernels": "busy", "copies": "busy", "nccl": "kernels",
          "ranks": "run", "iterations": "run", "startup": "run"}
SHARE_FACT = {"idle": "gpu_idle_pct", "busy": "gpu_active_pct", "kernels": "kernel_active_pct",
              "copies": "memcpy_active_pct"}


@dataclass
class Resolution:
    findings: list[Finding]
    recoverable: dict
    notes: list[str] = field(default_factory=list)
    too_little_work: dict | None = None


def _parent(sid: str) -> str | None:
    return "kernels" if sid.startswith("kernel:") else PARENT.get(sid)


def within(child: str, parent: str) -> bool:
    """Whether subject ``child`` is ``parent`` or a part of it (kernel:X < kernels < busy < run)."""
    s: str | None = child
    while s is not None:
        if s == parent:
            return True
        s = _parent(s)
    return False


def share(sid: str, run: dict, kernels: dict) -> float:
    """The subject's share of the window (%): its own fact, else its parent's share (an upper bound)."""
    v = None
    if sid == "run":
        return 100.0
    if sid == "startup":
        return 0.0                                     # outside the window: it wins back none of it
    if sid in ("ranks", "iterations"):
        v = 100.0
    elif sid == "idle":
        v = run.get("gpu_idle_pct")
        if v is None and isinstance(run.get("gpu_active_pct"), (int, float)):
            v = 100.0 - run["gpu_active_pct"]
    elif sid == "nccl":
        a, b = run.get("nccl_share_of_busy_pct"), run.get("gpu_active_pct")
        v = a * b / 100.0 if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
    elif sid.startswith("kernel:"):
        k = kernels.get(sid[7:]) or {}
        a, b = k.get("time_share_pct"), run.get("kernel_active_pct")
        v = a * b / 100.0 if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
    else:
        v = run.get(SHARE_FACT.get(sid, ""))
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return share(_parent(sid) or "run", run, kernels)
    return max(0.0, min(100.0, float(v)))


def overlap(s: float, gains: list[float]) -> float:
    """Gains on one subject of share ``s``, each fix working on what the others leave."""
    if s <= 0:
        return 0.0
    left = 1.0
    for g in gains:
        left *= 1.0 - min(max(g, 0.0), s) / s
    return s * (1.0 - left)


class _Alive:
    """The findings still standing, in their order, indexed by rule and by (rule, subject): membership and
    removal by identity in O(1) (two findings may be equal dicts, and comparing dicts of evidence costs
    more than the whole resolution); the findings of a rule about subjects overlapping a subject without
    looking at the other findings (resolution is linear in the findings, not quadratic)."""

    def __init__(self, items):
        d: dict[int, dict] = {}
        pos: dict[int, int] = {}
        by_rule: dict[str, dict[int, dict]] = {}
        by_subject: dict[str, dict[str, dict[int, dict]]] = {}   # rule -> subject -> findings
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

    def of_rule(self, rid: str) -> list[dict]:
        """The live findings of rule ``rid``, in order."""
        return list(self._by_rule.get(rid, {}).values())

    def overlapping(self, rid: str, subject: str) -> list[dict]:
        """The live findings of rule ``rid`` whose subject is ``subject``, a part of it or a whole it is part
        of, in order: the subject's ancestors are looked up; its parts are found among the rule's subjects
        (a kernel has no parts, so a kernel finding looks at a handful of buckets)."""
        subjects = self._by_subject.get(rid)
        if not subjects:
            return []
        found: list[dict] = []
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


def _brief(f: Finding, relation: str, because: str | None) -> dict:
    return {"rule": f.rule, "relation": relation, "because": because, "title": f.title, "message": f.message,
            "scope": f.scope, "estimated_gain_pct": f.estimated_gain_pct, "evidence": f.evidence}


def _text(t: dict | None, lang: str) -> str | None:
    return (t.get(lang) or t.get("en")) if t else None


def _max_sev(a: str, b: str) -> str:
    return a if SEVERITIES.index(a) >= SEVERITIES.index(b) else b


def allowed_severity(gain: float | None, params: dict) -> str:
    """The most severe level a gain (% of the window) allows under the pack's ``gain_for_<level>_pct``."""
    if gain is None:
        return "critical"
    best = "info"
    for level in ("low", "medium", "high", "critical"):
        need = params.get(f"gain_for_{level}_pct")
        if need is None or gain >= need:
            best = level
        else:
            break
    return best


def resolve(findings: list[Finding], rules: dict[str, Rule], run: dict, kernels: dict, inputs: set[str],
            params_of=None, lang: str = "en", replay=None) -> Resolution:
    """``findings``: the engine's (``model.Finding``), completed in place: subject, cause, supporting,
    rule_severity, subject_share_pct, the gain's basis, range and cap.
    ``params_of``: rule id -> its parameter values (``RuleSet.params``; a rule it lacks has its
    defaults). ``replay``: names of transformations -> their gain replayed together (facts/replay.py),
    when the iteration could be replayed: the total of the findings then comes from it, never from a sum."""
    params_of = params_of if params_of is not None else {}
    kernels = {k.get("name"): k for k in kernels if k.get("name")} if isinstance(kernels, list) else kernels
    defaults: dict[str, dict] = {}

    def params(r: Rule):
        p = params_of.get(r.id)
        if p is None:
            p = defaults.get(r.id)
            if p is None:
                p = defaults[r.id] = r.param_values()
        return p

    for f in findings:
        r = rules[f.rule]
        f.subject = "kernel:" + str(f.scope.get("kernel")) if r.subject == "kernel" else r.subject
        f.cause = r.cause
    alive = _Alive(findings)

    ctx_of: dict[int, dict] = {}      # a finding's names for relation conditions, made once (read only)

    def ctx(f):
        c = ctx_of.get(id(f))
        if c is None:
            r = rules[f.rule]
            k = kernels.get(f.scope.get("kernel")) or {} if r.scope == "kernel" else {}
            c = ctx_of[id(f)] = {**run, **params(r), **k}
        return c

    def related(a: dict, rel: dict):
        """The live findings of the related rule about an overlapping subject (one within the other)."""
        r = rules[a.rule]
        for f in alive.overlapping(rel["rule"], a.subject):
            if f is a:
                continue
            # (no condition holds: the finding's names are not gathered for nothing)
            if rel["when"] is None or conditions.holds(rel["when"], ctx(f), params(r), inputs, r.pack_conditions):
                yield f

    # 1. refutations
    for a in list(alive):
        if a not in alive:
            continue
        for rel in rules[a.rule].refutes:
            for f in list(related(a, rel)):
                alive.remove(f)
                a.supporting += [_brief(f, "refuted", _text(rel["because"], lang))] + f.supporting
    # 2. one finding for the kernels a `combine: kernels` rule fired on (their gains add: different kernels)
    for rid in dict.fromkeys(f.rule for f in alive):
        group = sorted(alive.of_rule(rid), key=lambda f: -(f.estimated_gain_pct or 0.0))
        if rules[rid].combine != "kernels" or len(group) < 2:
            continue
        head = group[0]
        for f in group[1:]:
            alive.remove(f)
            head.supporting += [_brief(f, "also", None)] + f.supporting
            if f.estimated_gain_pct is not None:
                head.estimated_gain_pct = (head.estimated_gain_pct or 0.0) + f.estimated_gain_pct
            head.severity = _max_sev(head.severity, f.severity)
        alive.set_subject(head, "kernels")
    # 3. supersessions, deepest rules first (a folded finding has folded its own)
    depth = supersede_depth(rules)
    for a in sorted(alive, key=lambda f: (depth.get(f.rule, 0), -(f.estimated_gain_pct or 0.0))):
        if a not in alive:
            continue
        for rel in rules[a.rule].supersedes:
            for f in sorted(related(a, rel), key=lambda f: -(f.estimated_gain_pct or 0.0)):
                alive.remove(f)
                a.supporting += [_brief(f, "folded", _text(rel["because"], lang))] + f.supporting
                if within(a.subject, f.subject):
                    alive.set_subject(a, f.subject)     # the broader subject: a kernel finding that folds a run one
                # a rule whose estimate replays its own advice (or, without traces, bounds it: the time the host
                # waited in syncs) keeps it; otherwise the larger of the two gains
                est = rules[a.rule].estimate or {}
                if f.estimated_gain_pct is not None and rules[a.rule].actionable and (
                        a.estimated_gain_pct is None or not (est.get("replay") or est.get("own"))):
                    a.estimated_gain_pct = max(a.estimated_gain_pct or 0.0, f.estimated_gain_pct)
                if rules[f.rule].lends_severity:
                    a.severity = _max_sev(a.severity, f.severity)
    # 4. gains within the subject's share; 5. severity from the gain
    for f in alive:
        f.rule_severity = f.severity            # the rule's own level (its cases test this one)
        s = share(f.subject, run, kernels)
        f.subject_share_pct = round(s, 1)
        if f.estimated_gain_pct is not None:
            f.estimated_gain_pct = round(min(f.estimated_gain_pct, s), 1)
        _gain_basis(f, rules[f.rule], run, s)
        bound = critical.finding_cap(f, run, within)
        cap = bound[0] if bound else None
        if cap is not None and f.estimated_gain_pct is not None and f.estimated_gain_pct > cap:
            f.estimated_gain_pct, f.gain_capped_by = round(cap, 1), bound[1]
            if f.estimated_gain_range_pct:
                f.estimated_gain_range_pct = [min(v, round(cap, 1)) for v in f.estimated_gain_range_pct]
        params = rules[f.rule].pack_params
        cap = allowed_severity(f.estimated_gain_pct, params)
        if SEVERITIES.index(f.severity) > SEVERITIES.index(cap):
            f.severity = cap
    res = Resolution(list(alive), critical.cap_total(recoverable(alive, run, kernels, rules, replay),
                                                     critical.total_cap(list(alive), run, within)))
    _guard(res, rules, run)
    return res


# a gain from summary reports is a flat factor of an estimated share: on the measured pairs such factors
# missed by up to half of the measured gain either way (docs/gains.md), so it is given as this range
SUMMARY_RANGE = (0.5, 1.5)


def _gain_basis(f: Finding, rule: Rule, run: dict, share_pct: float) -> None:
    """``gain_basis``: ``replayed`` (the rule's transformation replayed on the iteration), ``summary`` (from
    summary reports: ``estimated_gain_range_pct`` is [low, high], never a point pretending precision) or
    ``estimated`` (a rule's factor over measured trace facts)."""
    g = f.estimated_gain_pct
    if g is None:
        return
    t = (rule.estimate or {}).get("replay")
    if t and isinstance(run.get(f"replay_gain_{t}_pct"), (int, float)):
        f.gain_basis = "replayed"
    elif f.confidence == "likely":
        f.gain_basis = "summary"
        lo, hi = SUMMARY_RANGE
        f.estimated_gain_range_pct = [round(g * lo, 1), round(min(share_pct, 100.0, g * hi), 1)]
    else:
        f.gain_basis = "estimated"


def _guard(res: Resolution, rules: dict[str, Rule], run: dict) -> None:
    """Too little GPU work in the window to judge: say so, and no finding above low."""
    limit = next((r.pack_params["min_gpu_busy_ms"] for r in rules.values() if "min_gpu_busy_ms" in r.pack_params), None)
    if limit is None:
        return
    active, window = run.get("gpu_active_pct"), run.get("window_ms")
    if isinstance(active, (int, float)) and isinstance(window, (int, float)):
        busy_ms, where = active * window / 100.0, f"in the {window:.3g} ms window"
    elif isinstance(run.get("gpu_work_ms"), (int, float)):
        # no trace: the summaries' GPU work (kernels + copies + memsets) of the whole profile, which is the window
        busy_ms, where = float(run["gpu_work_ms"]), "in the whole profile (kernels and copies in the summary reports)"
    else:
        return
    if busy_ms >= limit:
        return
    res.too_little_work = {"gpu_busy_ms": round(busy_ms, 4), "min_gpu_busy_ms": limit}
    res.notes.append(f"only {busy_ms:.3g} ms of GPU work {where} (less than {limit:g} ms): too "
                     "little to judge the run; findings are capped at low severity; profile more steps")
    for f in res.findings:
        if SEVERITIES.index(f.severity) > SEVERITIES.index("low"):
            f.severity = "low"


def recoverable(findings: list[Finding], run: dict, kernels: dict, rules: dict[str, Rule] | None = None,
                replay=None) -> dict:
    """The union of the findings' gains: per subject as overlapping, subjects of one parent added (at most
    the parent's share), up the tree to the run (at most 100 %). When every finding with a gain names
    its transformation (``estimate.replay``) and the iteration was replayed, the total is those
    transformations replayed together (``basis: replayed``)."""
    gaining = [f for f in findings if f.estimated_gain_pct]
    rules = rules or {}
    names = [(rules[f.rule].estimate or {}).get("replay") if f.rule in rules else None for f in gaining]
    if replay is not None and gaining and all(names):
        out = _union(findings, run, kernels)
        gains = [f.estimated_gain_pct for f in gaining]
        # between the largest gain and their sum: fixes replayed together may overlap, never more than add
        total = min(100.0, sum(gains), max(max(gains), replay(names)))
        out.update(total_pct=round(total, 1), basis="replayed", replayed=sorted(set(names)))
        return out
    return _union(findings, run, kernels)


def _union(findings: list[Finding], run: dict, kernels: dict) -> dict:
    known: dict[str, float] = {}

    def shares(sid: str) -> float:       # share() of each subject once (it is asked three times)
        v = known.get(sid)
        if v is None:
            v = known[sid] = share(sid, run, kernels)
        return v

    own: dict[str, list[float]] = {}
    for f in findings:
        if f.estimated_gain_pct is not None:
            own.setdefault(f.subject, []).append(f.estimated_gain_pct)
    nodes = set()
    for sid in own:
        s: str | None = sid
        while s is not None:
            nodes.add(s)
            s = _parent(s)
    children: dict[str, list[str]] = {}
    for n in nodes:
        if _parent(n) is not None:
            children.setdefault(_parent(n), []).append(n)

    def union(n: str) -> float:
        s = shares(n)
        below = min(s, sum(union(c) for c in children.get(n, [])))
        return overlap(s, own.get(n, []) + ([below] if below else []))

    total = union("run") if nodes else 0.0
    return {"total_pct": round(total, 1),
            "subjects": [{"subject": sid, "share_pct": round(shares(sid), 1),
                          "gain_pct": round(overlap(shares(sid), g), 1), "findings": len(g)}
                         for sid, g in sorted(own.items())]}
