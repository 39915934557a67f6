"""Validation of what a pack says about how its findings relate, and of pack.yaml's params and conditions.

Per rule (after the JSON Schema): ``subject`` fits the scope; ``actionable: false`` (a finding that says
"nothing to fix") has severity info, no escalation and no estimate; every advice / relation condition
names known facts, inputs and operators, with declared ``$params``.
Across the loaded packs (like ruff's rule redirects, checked once): ``supersedes`` / ``refutes`` name
existing rules; ``supersedes`` has no cycle; a rule that says "nothing to fix" supersedes no actionable
rule; two rules with one ``cause`` are ordered by ``supersedes``; named conditions exist.
Every error is one line naming the file and the rule.
"""
from __future__ import annotations

import difflib

from ..errors import RuleError
from ..facts import registry
from .conditions import ConditionError, Input, Leaf, Named, leaves, parse
from .model import PACK_PARAMS, SUBJECTS, Rule
from .operators import PY_OPS
from .validate import fail, check_leaf


def _check_condition(rule: Rule, cond, where: str, line) -> None:
    """An advice or relation condition (parsed) names known facts, inputs and operators, with declared ``$params``."""
    for leaf in leaves(cond):
        if type(leaf) is Input:
            if leaf.name not in registry.INPUTS:
                raise fail(rule.path, line, rule.id, f"{where}: unknown input '{leaf.name}'; inputs: "
                            + ", ".join(sorted(registry.INPUTS)))
        elif type(leaf) is Leaf:                       # named conditions: checked with the packs (check_packs)
            check_leaf(rule, leaf, f"{where}: ", line, PY_OPS)


def check_rule(rule: Rule, lines: dict) -> None:
    """The per-rule checks of the relation and advice keys."""
    if (rule.scope == "kernel") != (rule.subject == "kernel"):
        raise fail(rule.path, lines.get("subject"), rule.id,
                    f"subject '{rule.subject}' does not fit scope {rule.scope}: a kernel rule's subject is kernel, "
                    f"a run rule's one of {', '.join(s for s in SUBJECTS if s != 'kernel')}")
    if rule.combine and rule.scope != "kernel":
        raise fail(rule.path, lines.get("combine"), rule.id, "combine: kernels is for kernel rules (scope: kernel)")
    if not rule.actionable and (rule.severity != "info" or rule.escalate or rule.estimate):
        raise fail(rule.path, lines.get("actionable"), rule.id,
                    "actionable: false (nothing to fix) needs severity info, no escalate and no estimate")
    for i, cond in enumerate(rule.advice_when):
        _check_condition(rule, cond, f"advice item {i + 1}", lambda: lines.get("advice"))
    n = len(rule.advice.get("en", []))
    if any(len(v) != n for v in rule.advice.values()) and any(rule.advice_when):
        raise fail(rule.path, lines.get("advice"), rule.id, "advice with conditions needs the same items in every language")
    for key in ("supersedes", "refutes"):
        for rel in getattr(rule, key):
            if rel["rule"] == rule.id:
                raise fail(rule.path, lines.get(key), rule.id, f"{key}: a rule cannot name itself")
            _check_condition(rule, rel["when"], f"{key} {rel['rule']}", lambda k=key: lines.get(k))


def pack_meta(meta: dict, meta_path: str) -> tuple[dict, dict]:
    """pack.yaml ``params`` (the engine's thresholds, each {default, doc, min, max}) and ``conditions``
    (named conditions for advice and relations: {NAME: {doc, when}})."""
    params = meta.get("params") or {}
    if not isinstance(params, dict):
        raise RuleError("pack.yaml params: a mapping of name -> {default, doc}", meta_path)
    out = {}
    for name, spec in params.items():
        if name not in PACK_PARAMS:
            hint = difflib.get_close_matches(str(name), list(PACK_PARAMS), 1)
            raise RuleError(f"pack.yaml params: unknown param '{name}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                            + "; params: " + ", ".join(PACK_PARAMS), meta_path)
        v = spec.get("default") if isinstance(spec, dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise RuleError(f"pack.yaml params: {name} needs a number >= 0 as default", meta_path)
        out[name] = float(v)
    named = meta.get("conditions") or {}
    if not isinstance(named, dict) or any(not isinstance(c, dict) or "when" not in c for c in named.values()):
        raise RuleError("pack.yaml conditions: a mapping of name -> {doc, when}", meta_path)
    conds = {}
    for k, c in named.items():
        try:
            conds[str(k)] = parse(c["when"])
        except ConditionError as e:
            raise RuleError(f"pack.yaml conditions: {k}: {e}", meta_path) from e
    probe = Rule(id="pack-conditions", title={}, category="", severity="info", scope="kernel", when=None, message={},
                 advice={}, path=meta_path)
    for k, c in conds.items():
        _check_condition(probe, c, f"condition {k}", None)
    lows = [out.get(f"gain_for_{s}_pct") for s in ("low", "medium", "high", "critical")]
    known = [x for x in lows if x is not None]
    if known != sorted(known):
        raise RuleError("pack.yaml params: gain_for_low_pct <= gain_for_medium_pct <= gain_for_high_pct <= "
                        "gain_for_critical_pct", meta_path)
    return out, conds


def pack_categories(meta: dict, meta_path: str) -> dict:
    """pack.yaml ``categories``: name -> ``{title: {en, zh, ...}, level, side}`` (``model.LEVELS``,
    ``model.SIDES``), checked like ``params``; the raw mapping (the pack cache keeps JSON)."""
    from .model import LEVELS, SIDES

    cats = meta.get("categories") or {}
    if not isinstance(cats, dict):
        raise RuleError("pack.yaml categories: a mapping of name -> {title: {en, zh}, level, side}", meta_path)
    out = {}
    for name, spec in cats.items():
        if not isinstance(spec, dict) or set(spec) - {"title", "level", "side"}:
            raise RuleError(f"pack.yaml categories: {name}: a mapping of title, level and side", meta_path)
        title = spec.get("title")
        if not isinstance(title, dict) or not isinstance(title.get("en"), str) or \
                not all(isinstance(k, str) and isinstance(v, str) for k, v in title.items()):
            raise RuleError(f"pack.yaml categories: {name}: title needs its English words (title: {{en: ...}})", meta_path)
        if spec.get("level") not in LEVELS:
            raise RuleError(f"pack.yaml categories: {name}: level is one of " + ", ".join(LEVELS), meta_path)
        if spec.get("side") is not None and spec["side"] not in SIDES:
            raise RuleError(f"pack.yaml categories: {name}: side is one of " + ", ".join(SIDES) + " (or none)", meta_path)
        out[str(name)] = {"title": dict(title), "level": spec["level"], **({"side": spec["side"]} if spec.get("side") else {})}
    return out


def check_categories(rules, categories: dict) -> None:
    """Every rule names a declared category (``categories``: what its pack and the built-in pack declare)."""
    for r in rules:
        if r.category not in categories:
            hint = difflib.get_close_matches(str(r.category), list(categories), 1)
            raise RuleError(f"rule {r.id}: category '{r.category}' is not declared in pack.yaml categories"
                            + (f" (did you mean '{hint[0]}'?)" if hint else ""), r.path)


def check_packs(packs) -> None:
    """The checks across every loaded pack; then each rule gets its pack's params and named conditions,
    falling back to the first pack that defines them (the built-in pack when loaded)."""
    rules = {r.id: r for p in packs for r in p.rules}
    named: dict = {}
    for p in packs:
        for k, c in p.conditions.items():
            named.setdefault(k, c)
    fallback_params = next((p.params for p in packs if p.params), {})
    for p in packs:
        for r in p.rules:
            r.pack_params = p.params or fallback_params
            r.pack_conditions = {**named, **p.conditions}
            conds = [c for c in r.advice_when] + [rel["when"] for rel in r.supersedes + r.refutes]
            for leaf in (x for c in conds for x in leaves(c)):
                if type(leaf) is Named and leaf.name not in r.pack_conditions:
                    raise RuleError(f"rule {r.id}: unknown named condition '{leaf.name}' (pack.yaml conditions: "
                                    + (", ".join(sorted(r.pack_conditions)) or "none") + ")", r.path)
            for key in ("supersedes", "refutes"):
                for rel in getattr(r, key):
                    if rel["rule"] not in rules:
                        hint = difflib.get_close_matches(rel["rule"], list(rules), 1)
                        raise RuleError(f"rule {r.id}: {key} names no rule '{rel['rule']}'"
                                        + (f" (did you mean '{hint[0]}'?)" if hint else ""), r.path)
            if r.refines is not None and r.refines not in rules:
                hint = difflib.get_close_matches(r.refines, list(rules), 1)
                raise RuleError(f"rule {r.id}: refines names no rule '{r.refines}'"
                                + (f" (did you mean '{hint[0]}'?)" if hint else ""), r.path)
            for rel in r.supersedes:
                if not r.actionable and rules[rel["rule"]].actionable:
                    raise RuleError(f"rule {r.id}: says nothing to fix (actionable: false) and cannot supersede "
                                    f"the actionable rule {rel['rule']}", r.path)
    order = supersede_depth(rules)                      # raises on a cycle
    by_cause: dict[str, list[Rule]] = {}
    for r in rules.values():
        by_cause.setdefault(r.cause, []).append(r)
    for cause, rs in by_cause.items():
        for a in rs:
            for b in rs:
                if a.id < b.id and not (_reaches(a.id, b.id, rules) or _reaches(b.id, a.id, rules)):
                    raise RuleError(f"rules {a.id} and {b.id} share the cause '{cause}' but neither supersedes the other: "
                                    "one finding per cause needs an order", a.path)
    del order


def unordered_twins(pack, packs) -> list[tuple[str, str]]:
    """(rule of ``pack``, rule of another pack) that estimate a gain on the same subject in the same category
    with no relation between them (a shared cause, supersedes / refutes / refines either way): if they are one
    cause, both findings' gains count in the total recoverable time (a team rule for the built-in idle cause
    took it from 57 to 70 %: issue 56, item 13). ``check-rules`` warns of each pair; it is not an error (two
    rules may name two causes of one subject)."""
    rules = {r.id: r for p in packs for r in p.rules}
    mine = {r.id for r in pack.rules}
    out = []
    for r in pack.rules:
        if not r.estimate:
            continue
        for o in rules.values():
            if o.id in mine or not o.estimate or (o.subject, o.category) != (r.subject, r.category):
                continue
            related = r.cause == o.cause or r.refines == o.id or o.refines == r.id or \
                any(rel["rule"] == o.id for rel in r.supersedes + r.refutes) or \
                any(rel["rule"] == r.id for rel in o.supersedes + o.refutes)
            if not related:
                out.append((r.id, o.id))
    return out


def _reaches(a: str, b: str, rules: dict) -> bool:
    seen, todo = set(), [a]
    while todo:
        x = todo.pop()
        for rel in rules[x].supersedes:
            y = rel["rule"]
            if y == b:
                return True
            if y not in seen and y in rules:
                seen.add(y)
                todo.append(y)
    return False


def supersede_depth(rules: dict) -> dict[str, int]:
    """Rule id -> the length of the longest ``supersedes`` chain below it (0: supersedes nothing).
    Findings are folded in this order, so a folded finding has already folded its own."""
    depth: dict[str, int] = {}
    active: list[str] = []

    def visit(rid: str) -> int:
        if rid in depth:
            return depth[rid]
        if rid in active:
            cycle = " -> ".join(active[active.index(rid):] + [rid])
            raise RuleError(f"rule {rid}: supersedes forms a cycle ({cycle})", rules[rid].path)
        active.append(rid)
        d = 1 + max((visit(rel["rule"]) for rel in rules[rid].supersedes if rel["rule"] in rules), default=-1)
        active.pop()
        depth[rid] = d
        return d

    for rid in rules:
        visit(rid)
    return depth
