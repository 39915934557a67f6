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
from . import compiler
from . import conditions, resolve
from . import missing as missing_mod
from .model import Finding
from .rules import ENV, SEVERITIES, Pack, Rule, load_packs, walk_conditions
from .ruleset import RuleSet, parse_overrides, select_rules
from .texts import _finding_texts, _render, lang_text  # noqa: F401 - lang_text: engine.lang_text

__all__ = ["evaluate", "Evaluation", "Finding", "load_packs", "Rule", "Pack", "RuleSet", "select_rules", "parse_overrides"]


@dataclass
class Evaluation:
    findings: list[Finding] = field(default_factory=list)   # engine/model.py; the report makes their JSON
    not_evaluated: list[dict] = field(default_factory=list)
    evaluated: list[str] = field(default_factory=list)
    recoverable: dict = field(default_factory=dict)     # resolve.recoverable: the union of the gains
    notes: list[str] = field(default_factory=list)      # what the resolution says about the run (too little work)
    too_little_work: dict | None = None
    not_collected: list[str] = field(default_factory=list)   # opt-in rules whose input was not collected
    ranks: list[tuple[str, Evaluation]] | None = None        # a multi-rank job: each rank's own (evaluate)


def _missing(cond: dict, have: set[str]) -> set[str]:
    """Facts a condition needs but the run lacks (an ``exists`` test never needs its fact)."""
    if "fact" in cond:
        return set() if cond["fact"] in have or cond["op"] == "exists" else {cond["fact"]}
    if "all" in cond:
        return set().union(*(_missing(c, have) for c in cond["all"]))
    if "any" in cond:
        # the branch nearest to running: what the user would export to make the rule evaluable
        parts = [_missing(c, have) for c in cond["any"]]
        return min(parts, key=lambda p: (len(p), sorted(p))) if parts else set()
    return _missing(cond["not"], have)


def _rhs_facts(cond: dict) -> set[str]:
    return {c["value"]["fact"] for c in walk_conditions(cond) if isinstance(c.get("value"), dict)}


def _positive_facts(cond: dict) -> set[str]:
    """Facts a condition tests for a value (not under ``not``, not mere ``exists`` checks)."""
    if "fact" in cond:
        out = set() if cond["op"] == "exists" else {cond["fact"]}
        if isinstance(cond.get("value"), dict):
            out.add(cond["value"]["fact"])
        return out
    if "not" in cond:
        return set()
    return set().union(*(_positive_facts(c) for c in cond.get("all", cond.get("any", []))))


def confidence(cond: dict, fs: FactSet, bound: dict) -> str:
    """``likely`` when the branch that fired rests on a summary-tier fact, else ``measured``."""
    return _confidence(_positive_facts(cond), fs, bound)


def _confidence(positive: set[str], fs: FactSet, bound: dict) -> str:
    if bound is not fs.run or not fs.tiers:        # a kernel's facts have no summary tier
        return "measured"
    tiers = fs.tiers
    return "likely" if any(tiers.get(f) == "summary" for f in positive) else "measured"


def _threshold(cond: dict, fact: str, params: dict):
    for c in walk_conditions(cond):
        if c["fact"] == fact:
            v = c.get("value")
            v = params.get(v[1:], v) if isinstance(v, str) and v.startswith("$") else v
            if isinstance(v, dict):
                v = f"{v['fact']}" + (f" x {params.get(str(v['times'])[1:], v['times'])}" if "times" in v else "")
            return v, c["op"]
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
            ev.not_evaluated.append({
                "rule": r.id, "category": r.category, "scope": r.scope,
                "max_severity": max([r.severity] + [e["severity"] for e in r.escalate], key=SEVERITIES.index),
                "missing": [missing_mod.needs(i, fs) for i in missing_inputs]
                + missing_mod.reasons(missing, fs, r.scope, tables),
                "facts": sorted(missing), **({"refines": r.refines} if r.refines else {})})
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
            for c in walk_conditions(w):
                used[r.scope].add(c["fact"])
                if isinstance(c.get("value"), dict):
                    used[r.scope].add(c["value"]["fact"])
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
    fs, ev, lang, tables = g.fs, g.ev, rs.lang, g.tables
    by_id = {r.id: r for r in g.runnable}
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
    pending: dict[int, tuple] = {}
    shapes: dict[tuple, tuple] = {}
    memo: dict[tuple, str] = {}
    bases: dict[str, dict] = {}
    bases_used: set[str] = set()        # rules that have a finding already: memoise their texts from now on
    tries: dict[str, list[int]] = {}    # rule -> [memoised findings, of them rendered anew]: see _memo_pays
    kernels = fs.kernels
    for rid, at in order:
        rule = by_id[rid]
        params = rs.params[rid]
        bound = fs.run if rule.scope == "run" else (kernels[at - 1] if 0 < at <= len(kernels) else {})
        # the names a rule's text sees (later ones win): the sandbox's globals, the run's facts, the rule's
        # params, then for a kernel rule the kernel's facts. The run part is made once per rule and shared
        # (rendering never writes into it: the sandbox renders with shared=True, writes go to its own vars).
        base = bases.get(rid)
        if base is None:
            base = bases[rid] = {**ENV.globals, **fs.run, **params}
        ctx = {**base, "kernel": bound, **bound} if rule.scope == "kernel" else base
        b = branch[(rid, at)]
        shape = shapes.get((rid, b))
        if shape is None:       # what depends on the rule and its branch only: worked out once per evaluate
            matched = compiler.alternatives(rule)[b]
            shape = shapes[(rid, b)] = (matched, [
                (f, *_threshold(matched, f, params), _unit(registry.lookup(rule.scope, f)), fs.sources.get(f))
                for f in (rule.evidence or rule.facts_used())], _positive_facts(matched))
        matched, ev_shape, positive = shape
        evidence = [{"fact": f, "value": bound[f], "threshold": thr, "op": op, "unit": unit, "source": src}
                    for f, thr, op, unit, src in ev_shape if f in bound]
        use = memo if rid in bases_used and _memo_pays(tries.setdefault(rid, [0, 0])) else None
        before = len(memo)
        title, message, estimate = _finding_texts(rule, lang, ctx, use)
        if use is not None:
            tries[rid][0] += 1
            tries[rid][1] += len(memo) > before
        bases_used.add(rid)
        # positional, in Finding's field order: by keyword it took 8x as long (2.5 us a finding, 20,000 kernel findings)
        finding = Finding(rid, rule.category, hits[(rid, at)], title, message, evidence,
                          None,      # advice: rendered below, for the findings that remain after resolution
                          estimate, _confidence(positive, fs, bound),
                          {"kernel": bound.get("name")} if rule.scope == "kernel" else {}, rule.pack, rule.references)
        ev.findings.append(finding)
        # what its advice needs, if it survives resolution: not ``ctx`` (a few hundred names per finding, kept
        # for every finding, was over a gigabyte at 100,000 kernel facts), made again for the survivors
        pending[id(finding)] = (rule, bound, params)
    res = resolve.resolve(ev.findings, by_id, fs.run, fs.kernels, tables, rs.params, lang, fs.tables.get("_replay"))
    ev.findings, ev.recoverable, ev.notes, ev.too_little_work = res.findings, res.recoverable, res.notes, res.too_little_work
    if not g.advice:
        return
    per_rule: dict[str, int] = {}
    for f in ev.findings:
        per_rule[f.rule] = per_rule.get(f.rule, 0) + 1
    tests: dict[str, list] = {}       # a rule's advice conditions, compiled once per evaluation
    for f in ev.findings:       # folded and refuted findings show their message only: no advice to render
        rule, bound, params = pending[id(f)]
        base = bases[rule.id]
        ctx = {**base, "kernel": bound, **bound} if rule.scope == "kernel" else base
        pays = _memo_pays(tries.get(f.rule, [0, 0]))
        f.advice = _advice(rule, ctx, lang, tables, params, memo if per_rule[f.rule] > 1 and pays else None,
                              tests)


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
    items = rule.advice.get(lang) or rule.advice.get("en") or []
    when = rule.advice_when if any(rule.advice_when) else [None] * len(items)
    fits = tests.get(rule.id) if tests is not None else None
    if fits is None:
        shared: dict = {}        # the rule's items share their named conditions (three test library-kernel)
        fits = [conditions.compiled(w, params, tables, rule.pack_conditions, shared=shared) for w in when]
        if tests is not None:
            tests[rule.id] = fits
    return [_render(a, ctx, rule, "advice", memo) for a, fit in zip(items, fits) if fit(ctx)]
