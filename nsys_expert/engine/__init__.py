"""engine: rule packs in, findings out.

``evaluate`` decides which rules can run (their facts and inputs exist), compiles those to one
durable-rules ruleset (cached per process), asserts the facts, and turns each firing into a finding:
message and advice rendered in a sandbox, evidence with thresholds, an estimate of the time it wins
back. Ranking is the report's job; findings come out in rule order.
"""
from __future__ import annotations

import bisect
import gc
from dataclasses import dataclass, field

from ..facts import FactSet, registry
from ..notes import catalogs
from . import compiler
from . import condition, conditions, resolve
from . import missing as missing_mod
from .model import Evidence, Finding, Recoverable, TooLittleWork
from .rules import ENV, SEVERITIES, Pack, Rule, load_packs, walk_conditions
from .ruleset import RuleSet, parse_overrides, select_rules
from .texts import _finding_texts, _render, lang_text  # noqa: F401 - lang_text: engine.lang_text

__all__ = ["evaluate", "Evaluation", "Finding", "load_packs", "Rule", "Pack", "RuleSet", "select_rules", "parse_overrides"]


@dataclass
class Evaluation:
    findings: list[Finding] = field(default_factory=list)   # engine/model.py; the report makes their JSON
    not_evaluated: list[missing_mod.NotEvaluated] = field(default_factory=list)
    evaluated: list[str] = field(default_factory=list)
    recoverable: Recoverable | None = None                   # gains.recoverable: what the findings win back together
    notes: list = field(default_factory=list)           # of Note: what the resolution says about the run (too little work)
    too_little_work: TooLittleWork | None = None
    not_collected: list[str] = field(default_factory=list)   # opt-in rules whose input was not collected
    ranks: list[tuple[str, Evaluation]] | None = None        # a multi-rank job: each rank's own (evaluate)
    categories: dict = field(default_factory=dict)           # the packs' categories (RuleSet.categories)


def _missing(cond, have: set[str]) -> set[str]:
    """Facts a condition needs but the run lacks (an ``exists`` test never needs its fact)."""
    return condition.missing(cond, have)


def _rhs_facts(cond) -> set[str]:
    return condition.rhs_facts(cond)


def _positive_facts(cond) -> set[str]:
    """Facts a condition tests for a value (not under ``not``, not mere ``exists`` checks)."""
    return condition.positive_facts(cond)


def confidence(cond, fs: FactSet, bound: dict) -> str:
    """``likely`` when the branch that fired rests on a summary-tier fact, else ``measured``."""
    return _confidence(_positive_facts(cond), fs, bound)


def _confidence(positive: set[str], fs: FactSet, bound: dict) -> str:
    if bound is not fs.run or not fs.tiers:        # a kernel's facts have no summary tier
        return "measured"
    tiers = fs.tiers
    return "likely" if any(tiers.get(f) == "summary" for f in positive) else "measured"


def _threshold(cond, fact: str, params: dict):
    """The evidence's threshold of ``fact`` in the branch that fired, and its operator: the first leaf on
    the fact (a parameter as its value, another fact as ``fact x times``), or (None, None)."""
    for c in walk_conditions(cond):
        if c.fact == fact:
            v = c.value
            if type(v) is condition.Param:
                v = params.get(v.name, v.raw())
            elif type(v) is condition.FactRef:
                times = None if v.times is None else v.times.raw()
                v = v.fact + (f" x {params.get(str(times)[1:], times)}" if times is not None else "")
            elif v is not None:
                v = v.raw()
            return v, c.op
    return None, None


def _nvidia_only(rule: Rule, missing: set, missing_inputs: list) -> bool:
    """Everything the rule lacks comes only from NVIDIA's tools (ncu, GPU metrics, the OS runtime trace)."""
    if not set(missing_inputs) <= registry.NVIDIA_ONLY_INPUTS:
        return False
    for f in missing:
        d = registry.lookup(rule.scope, f) or registry.lookup("run", f)
        if d is None or not set(d.needs) <= registry.NVIDIA_ONLY_INPUTS:
            return False
    return True


def evaluate(rs: RuleSet, fs: FactSet, tables: set[str], ranks: list[tuple[str, FactSet, set[str]]] | None = None
             ) -> Evaluation:
    """The findings of ``rs`` on the run ``fs`` (its inputs: ``tables``). ``ranks``: the ranks of a
    multi-rank job, ``[(label, the rank's facts, its inputs)]``, evaluated in the same engine run as
    the job, each apart (its own facts, resolution and not-evaluated list, no advice: a rank's row
    shows its findings' titles): ``Evaluation.ranks``, in their order."""
    # a finding is a few dozen small objects and none of them form cycles: the cyclic collector would only
    # walk them again and again (a fifth of the time at 1,000 kernel facts); it runs again afterwards
    was_on = gc.isenabled()
    gc.disable()
    try:
        groups = [_Group(fs, tables, True)] + [_Group(rfs, rt, False, label) for label, rfs, rt in ranks or ()]
        _evaluate(rs, groups)
        for g in groups:
            g.ev.categories = dict(rs.categories)
        ev = groups[0].ev
        if ranks is not None:
            ev.ranks = [(g.label, g.ev) for g in groups[1:]]
        return ev
    finally:
        if was_on:
            gc.enable()


@dataclass
class _Group:
    """One fact set of an evaluation (the run, or one rank of a job) and what is worked out for it."""
    fs: FactSet
    tables: set[str]
    advice: bool                      # render the survivors' advice (the job's report; a rank's row has none)
    label: str | None = None
    ev: Evaluation = field(default_factory=Evaluation)
    runnable: list = field(default_factory=list)
    first: int = 0                    # the index of its run fact in the engine's fact list


def _sort_rules(rules, g: _Group) -> None:
    """Which rules can run on the group's facts; the others are not evaluated (or not collected)."""
    fs, tables, ev = g.fs, g.tables, g.ev
    run_have = set(fs.run)
    kernel_have: set[str] = set()
    for k in fs.kernels:
        kernel_have.update(k)
    amd = fs.run.get("gpu_vendor") == "amd"
    for r in rules:
        have = run_have if r.scope == "run" else kernel_have
        missing = _missing(r.when, have) | (_rhs_facts(r.when) - have)
        missing_inputs = [i for i in r.requires if i not in tables]
        if amd and (missing or missing_inputs) and _nvidia_only(r, missing, missing_inputs):
            ev.not_collected.append(r.id)   # an AMD run: no NVIDIA tool can give what the rule lacks
            continue
        if missing_inputs and set(missing_inputs) <= registry.OPT_IN_INPUTS:
            # an opt-in collection (GPU metrics samples) that this profile did not ask for: the rule
            # is not listed under "not evaluated" (it would be on every report); `rules` lists it
            ev.not_collected.append(r.id)
            continue
        if missing or missing_inputs:
            ev.not_evaluated.append(missing_mod.NotEvaluated(
                r.id, r.category, r.scope,
                max([r.severity] + [e["severity"] for e in r.escalate], key=SEVERITIES.index),
                [missing_mod.needs(i, fs) for i in missing_inputs] + missing_mod.reasons(missing, fs, r.scope, tables),
                sorted(missing), r.refines or None))
            continue
        g.runnable.append(r)
    ev.evaluated = [r.id for r in g.runnable]


def _evaluate(rs: RuleSet, groups: list[_Group]) -> None:
    for g in groups:
        _sort_rules(rs.rules, g)
    can_run = {r.id for g in groups for r in g.runnable}
    runnable = [r for r in rs.rules if r.id in can_run]
    if not runnable:
        return
    definition, names = compiler.compile_rules(runnable, rs.params)
    from . import durable_adapter    # the C engine is imported only when rules run

    eng = durable_adapter.engine_for(definition)
    # only the values some rule tests go to the engine (a kernel fact has ~60, the rules read ~15 of
    # them), and a scope no runnable rule reads sends nothing
    used: dict[str, set] = {"run": set(), "kernel": set()}
    for r in runnable:
        for w in [r.when] + [e["when"] for e in r.escalate]:
            used[r.scope].update(condition.facts_read(w))
    facts: list[tuple[str, dict]] = []
    for g in groups:        # every group's facts in one engine run; a fact's id is "<kind>:<its index>"
        g.first = len(facts)
        facts.append(("run", g.fs.run))
        if used["kernel"]:
            facts += [("kernel", kf) for kf in g.fs.kernels]
    firsts = [g.first for g in groups]
    fired: list[list[tuple[str, int]]] = [[] for _ in groups]
    for name, fact_id in eng.run(facts, used):
        n = int(fact_id.rpartition(":")[2])
        gi = bisect.bisect_right(firsts, n) - 1
        fired[gi].append((name, n - firsts[gi]))     # 0: the group's run, k: its kernel k (from 1)
    for g, got in zip(groups, fired):
        _findings(rs, g, names, got)


def _findings(rs: RuleSet, g: _Group, names: dict, fired: list[tuple[str, int]]) -> None:
    """The group's findings from its firings: texts, evidence, then the resolution and the advice."""
    fs, ev = g.fs, g.ev
    by_id = {r.id: r for r in g.runnable}
    order, hits, branch = _collate(by_id, names, fired)
    texts = _Texts(rs, fs)
    ev.findings = [texts.finding(by_id[rid], at, hits[(rid, at)], branch[(rid, at)]) for rid, at in order]
    res = resolve.resolve(ev.findings, by_id, fs.run, fs.kernels, g.tables, rs.params, rs.lang, fs.work.replay,
                          rs.categories, where=fs.where)
    ev.findings, ev.recoverable, ev.notes, ev.too_little_work = res.findings, res.recoverable, res.notes, res.too_little_work
    if g.advice:
        texts.advise(ev.findings, g.tables)


def _collate(by_id: dict[str, Rule], names: dict, fired: list[tuple[str, int]]):
    """The firings per (rule, fact): in the order they first fired, each with its severity (the highest
    level that fired) and the branch of the rule's condition that matched (at its base level)."""
    hits: dict[tuple[str, int], str] = {}
    branch: dict[tuple[str, int], int] = {}
    order: list[tuple[str, int]] = []
    for name, at in fired:
        rid, sev, alt = names[name]
        if rid not in by_id:          # a rule another group could run: its facts or inputs are missing here
            continue
        key = (rid, at)
        if key not in hits:
            order.append(key)
            hits[key] = sev
            branch[key] = alt
        else:
            if SEVERITIES.index(sev) > SEVERITIES.index(hits[key]):
                hits[key] = sev
            if sev == by_id[rid].severity:  # the base level says which branch matched
                branch[key] = min(branch[key], alt)
    return order, hits, branch


class _Texts:
    """A group's findings made one by one (``finding``), their words rendered in the sandbox with the
    memo of texts whose values were seen before, and the advice of those that remain after resolution
    (``advise``)."""

    def __init__(self, rs: RuleSet, fs: FactSet):
        self.rs, self.fs = rs, fs
        self.shapes: dict[tuple, tuple] = {}
        self.memo: dict[tuple, str] = {}
        self.bases: dict[str, dict] = {}
        self.bases_used: set[str] = set()       # rules that have a finding already: memoise their texts from now on
        self.tries: dict[str, list[int]] = {}   # rule -> [memoised findings, of them rendered anew]: see _memo_pays
        # what a finding's advice needs, if it survives resolution: not its ``ctx`` (a few hundred names per
        # finding, kept for every finding, was over a gigabyte at 100,000 kernel facts), made again for the survivors
        self.pending: dict[int, tuple] = {}

    def ctx(self, rule: Rule, bound: dict, params: dict) -> dict:
        """The names a rule's text sees (later ones win): the sandbox's globals, the run's facts, the rule's
        params, then for a kernel rule the kernel's facts. The run part is made once per rule and shared
        (rendering never writes into it: the sandbox renders with shared=True, writes go to its own vars)."""
        base = self.bases.get(rule.id)
        if base is None:
            base = self.bases[rule.id] = {**ENV.globals, **self.fs.run, **params}
        return {**base, "kernel": bound, **bound} if rule.scope == "kernel" else base

    def shape(self, rule: Rule, b: int, params: dict) -> tuple:
        """What depends on the rule and its branch only, worked out once per evaluation: the branch's
        condition, each evidence fact's (fact, threshold, op, unit, source), the facts it tests for a value."""
        shape = self.shapes.get((rule.id, b))
        if shape is None:
            fs = self.fs
            matched = compiler.alternatives(rule)[b]
            shape = self.shapes[(rule.id, b)] = (matched, [
                (f, *_threshold(matched, f, params), _unit(registry.lookup(rule.scope, f)), fs.sources.get(f))
                for f in (rule.evidence or rule.facts_used())], _positive_facts(matched))
        return shape

    def finding(self, rule: Rule, at: int, severity: str, b: int) -> Finding:
        """The finding of ``rule`` firing on fact ``at`` (0: the run, k: kernel k from 1) at ``severity``."""
        fs, rid = self.fs, rule.id
        params = self.rs.params[rid]
        kernels = fs.kernels
        bound = fs.run if rule.scope == "run" else (kernels[at - 1] if 0 < at <= len(kernels) else {})
        ctx = self.ctx(rule, bound, params)
        matched, ev_shape, positive = self.shape(rule, b, params)
        evidence = [Evidence(f, bound[f], thr, op, unit, src) for f, thr, op, unit, src in ev_shape if f in bound]
        memo = self.memo
        use = memo if rid in self.bases_used and _memo_pays(self.tries.setdefault(rid, [0, 0])) else None
        before = len(memo)
        title, message, estimate = _finding_texts(rule, self.rs.lang, ctx, use)
        if use is not None:
            self.tries[rid][0] += 1
            self.tries[rid][1] += len(memo) > before
        self.bases_used.add(rid)
        # positional, in Finding's field order: by keyword it took 8x as long (2.5 us a finding, 20,000 kernel findings)
        finding = Finding(rid, rule.category, severity, title, message, evidence,
                          None,      # advice: rendered by ``advise``, for the findings that remain after resolution
                          estimate, _confidence(positive, fs, bound),
                          {"kernel": bound.get("name")} if rule.scope == "kernel" else {}, rule.pack, rule.references)
        self.pending[id(finding)] = (rule, bound, params)
        return finding

    def advise(self, findings: list[Finding], tables: set[str]) -> None:
        """The advice of the findings that remain (folded and refuted ones show their message only)."""
        per_rule: dict[str, int] = {}
        for f in findings:
            per_rule[f.rule] = per_rule.get(f.rule, 0) + 1
        tests: dict[str, list] = {}       # a rule's advice conditions, compiled once per evaluation
        for f in findings:
            rule, bound, params = self.pending[id(f)]
            pays = _memo_pays(self.tries.get(f.rule, [0, 0]))
            f.advice = _advice(rule, self.ctx(rule, bound, params), self.rs.lang, tables, params,
                               self.memo if per_rule[f.rule] > 1 and pays else None, tests)


def _unit(d) -> str:
    return d.unit if d else ""


def _memo_pays(tried: list[int]) -> bool:
    """Whether a rule's texts are still worth memoising: the key of the values a text reads costs about
    as much as rendering it, so a rule whose findings all read other values (distinct kernel figures, as
    in a real profile) stops memoising after 64 tries with fewer than a quarter served from the memo.
    The texts are the same either way (a memoised text is the one its values render)."""
    done, anew = tried
    return done < 64 or anew * 4 <= done * 3


def _advice(rule: Rule, ctx, lang: str, tables: set[str], params: dict, memo: dict | None = None,
            tests: dict | None = None) -> list[str]:
    """The advice items that fit the data (an item's ``when`` holds), rendered. ``tests``: the rules'
    advice conditions compiled (conditions.compiled), filled here, for one evaluation (its params and
    tables)."""
    items = catalogs.rule_texts(rule.advice, lang)
    when = rule.advice_when if any(rule.advice_when) else [None] * len(items)
    fits = tests.get(rule.id) if tests is not None else None
    if fits is None:
        shared: dict = {}        # the rule's items share their named conditions (three test library-kernel)
        fits = [conditions.compiled(w, params, tables, rule.pack_conditions, shared=shared) for w in when]
        if tests is not None:
            tests[rule.id] = fits
    return [_render(a, ctx, rule, "advice", memo) for a, fit in zip(items, fits) if fit(ctx)]
