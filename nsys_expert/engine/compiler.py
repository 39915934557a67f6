"""Compile validated rules into one durable-rules JSON ruleset (plain data: it can be dumped and diffed).

Lessons from notes/durable-rules.md applied here:
- all conditions of a rule are ANDed into ONE pattern on one fact (two patterns cannot bind the
  same fact), nested all / any / not become ``$and`` / ``$or`` with ``not`` pushed down to the leaves
  (De Morgan + the opposite operator); ``$or`` may fire once per true branch, so actions dedupe;
- constants are made safe for the engine's JSON parser (floats with an exponent and no dot are
  nudged by one ulp; right-hand-side arithmetic always uses float constants: int op int is integer
  arithmetic in the engine, and int / 0 kills the process);
- string operators compile to the engine's own regex dialect (full match, ``%`` escapes);
- what each operator compiles to is declared with the operator (operators.py); the conditions are
  the condition nodes (conditions/nodes.py), parsed when the rule was loaded;
- every rule gets a stable name and a ``cap`` (one action for all its facts); a catch-all rule with the lowest priority makes every fact handled.
"""
from __future__ import annotations

import math

from ..errors import RuleError
from .conditions import All, Any, FactRef, Items, Leaf, Lit, Not, Param, branches
from .operators import OPS, negated
from .rules import Rule

SINK = "__sink"
RESERVED = frozenset({"id", "sid", "kind", "$s"})   # keys the rules engine owns: never a fact's name
# every rule takes all the facts it matches in one action (``cap``): one call per rule instead of one
# per (rule, fact); the action then gets a list (durable's per-action overhead dominated at 1,000 facts)
CAP = 65_000


def safe_number(v):
    """A number the engine's JSON parser accepts (see notes: 2e-05 is a parse error, 2.0000000000000002e-05 is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"non-finite number {v!r}")
        r = repr(v)
        if "e" in r and "." not in r:
            v = math.nextafter(v, math.inf)
    return v


def _number(v):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return safe_number(float(v)) if isinstance(v, float) else v
    return v


def _rhs(v, params: dict):
    """A leaf's right-hand side (a value node) as the engine takes it: a parameter's value, a fact
    reference as its arithmetic (always on float constants), a list item by item."""
    t = type(v)
    if t is Lit:
        return _number(v.value)
    if t is Param:
        p = params[v.name]
        return [_number(x) for x in p] if isinstance(p, list) else _number(p)
    if t is FactRef:
        expr: dict = {"$m": v.fact}
        if v.times is not None:
            expr = {"$mul": {"$l": expr, "$r": float(safe_number(float(_const(v.times, params))))}}
        if v.plus is not None:
            expr = {"$add": {"$l": expr, "$r": float(safe_number(float(_const(v.plus, params))))}}
        return expr
    if t is Items:
        return [_rhs(x, params) for x in v.items]
    return v


def _const(v, params: dict):
    return params[v.name] if type(v) is Param else v.value


def compile_condition(cond, params: dict, rule: Rule, negate: bool = False) -> dict:
    """A condition (nodes) as one durable-rules pattern, ``not`` pushed down to the leaves."""
    t = type(cond)
    if t is All or t is Any:
        parts = [compile_condition(c, params, rule, negate) for c in cond.parts]
        return parts[0] if len(parts) == 1 else {"$and" if (t is All) != negate else "$or": parts}
    if t is Not:
        return compile_condition(cond.part, params, rule, not negate)
    if t is not Leaf:
        raise RuleError(f"rule {rule.id}: '{cond.raw()}' is only for advice and relation conditions", rule.path)
    op = OPS.get(cond.op)
    if op is not None and negate:
        op = negated(cond.op)
        if op is None or op.engine is None:
            raise RuleError(f"rule {rule.id}: 'not' cannot wrap the string operator '{cond.op}' (the engine has no "
                            "negated match); rewrite the condition", rule.path)
    if op is None or op.engine is None:
        raise RuleError(f"rule {rule.id}: unknown operator '{cond.op}'", rule.path)
    return op.engine(cond.fact, _rhs(cond.value, params))


def _pattern(scope: str, cond, params: dict, rule: Rule) -> dict:
    return {"$and": [{"kind": scope}, compile_condition(cond, params, rule)]}


def alternatives(rule: Rule) -> list[dict]:
    """A top-level ``any`` is split into one durable rule per branch (durable's ``$or`` fires once per
    true branch, and the report needs to know which branch matched to show its thresholds)."""
    return branches(rule.when)


def compile_rules(rules: list[Rule], params_of=None) -> tuple[dict, dict]:
    """-> (durable ruleset definition, {durable rule name: (rule id, severity level, branch index)}).
    ``params_of``: rule id -> its parameter values (``RuleSet.params``; a rule it lacks: its defaults)."""
    definition: dict = {}
    names: dict = {}
    for r in rules:
        params = (params_of or {}).get(r.id)
        if params is None:
            params = r.param_values()
        alts = alternatives(r)
        levels = [(r.severity, None)] + [(e["severity"], e["when"]) for e in r.escalate]
        for li, (sev, extra) in enumerate(levels):
            for ai, alt in enumerate(alts):
                cond = alt if extra is None else All((alt, extra))
                name = r.id + (f"@{li}" if li else "") + (f"#{ai}" if len(alts) > 1 else "")
                definition[name] = {"all": [{"m": _pattern(r.scope, cond, params, r)}], "run": name, "cap": CAP}
                names[name] = (r.id, sev, ai)
    definition[SINK] = {"pri": 1_000_000, "all": [{"m": {"$ex": {"kind": 1}}}], "run": SINK, "cap": CAP}
    return definition, names
