"""Compile validated rules into one durable-rules JSON ruleset (plain data: it can be dumped and diffed).

Lessons from notes/durable-rules.md applied here:
- all conditions of a rule are ANDed into ONE pattern on one fact (two patterns cannot bind the
  same fact), nested all / any / not become ``$and`` / ``$or`` with ``not`` pushed down to the leaves
  (De Morgan + the opposite operator); ``$or`` may fire once per true branch, so actions dedupe;
- constants are made safe for the engine's JSON parser (floats with an exponent and no dot are
  nudged by one ulp; right-hand-side arithmetic always uses float constants: int op int is integer
  arithmetic in the engine, and int / 0 kills the process);
- string operators compile to the engine's own regex dialect (full match, ``%`` escapes);
- every rule gets a stable name and a ``cap`` (one action for all its facts); a catch-all rule with the lowest priority makes every fact handled.
"""
from __future__ import annotations

import math

from ..errors import RuleError
from .rules import Rule

_OPS = {"lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte"}
_NEG = {"lt": "gte", "lte": "gt", "gt": "lte", "gte": "lt", "eq": "neq", "neq": "eq", "in": "not_in",
        "not_in": "in", "exists": "not_exists", "not_exists": "exists"}
_SPECIAL = set(".*+?()[]{}|%^$\\<>-")
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


def _escape(s: str) -> str:
    return "".join("%" + ch if ch in _SPECIAL else ch for ch in s)


def _resolve(v, params: dict):
    if isinstance(v, str) and v.startswith("$"):
        return params[v[1:]]
    return v


def _rhs(v, params: dict):
    v = _resolve(v, params)
    if isinstance(v, dict):
        expr: dict = {"$m": v["fact"]}
        if "times" in v:
            expr = {"$mul": {"$l": expr, "$r": float(safe_number(float(_resolve(v["times"], params))))}}
        if "plus" in v:
            expr = {"$add": {"$l": expr, "$r": float(safe_number(float(_resolve(v["plus"], params))))}}
        return expr
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return safe_number(float(v)) if isinstance(v, float) else v
    return v


def compile_condition(cond: dict, params: dict, rule: Rule, negate: bool = False) -> dict:
    if "all" in cond or "any" in cond:
        key = "all" if "all" in cond else "any"
        parts = [compile_condition(c, params, rule, negate) for c in cond[key]]
        op = {"all": "$and", "any": "$or"}[key]
        if negate:
            op = "$or" if op == "$and" else "$and"
        return parts[0] if len(parts) == 1 else {op: parts}
    if "not" in cond:
        return compile_condition(cond["not"], params, rule, not negate)
    fact, op = cond["fact"], cond["op"]
    if negate:
        if op not in _NEG:
            raise RuleError(f"rule {rule.id}: 'not' cannot wrap the string operator '{op}' (the engine has no "
                            "negated match); rewrite the condition", rule.path)
        op = _NEG[op]
    val = _rhs(cond.get("value"), params)
    if op in _OPS:
        return {_OPS[op]: {fact: val}}
    if op == "eq":
        return {fact: val}
    if op == "neq":
        return {"$neq": {fact: val}}
    if op == "in":
        alts = [{fact: _rhs(x, params)} for x in val]
        return alts[0] if len(alts) == 1 else {"$or": alts}
    if op == "not_in":
        alts = [{"$neq": {fact: _rhs(x, params)}} for x in val]
        return alts[0] if len(alts) == 1 else {"$and": alts}
    if op == "exists":
        return {"$ex": {fact: 1}}
    if op == "not_exists":
        return {"$nex": {fact: 1}}
    if op == "contains":
        return {"$mt": {fact: f".*{_escape(val)}.*"}}
    if op == "icontains":
        return {"$imt": {fact: f".*{_escape(val)}.*"}}
    if op == "startswith":
        return {"$mt": {fact: f"{_escape(val)}.*"}}
    if op == "endswith":
        return {"$mt": {fact: f".*{_escape(val)}"}}
    if op == "matches":
        return {"$mt": {fact: val}}
    raise RuleError(f"rule {rule.id}: unknown operator '{op}'", rule.path)


def _pattern(scope: str, cond: dict, params: dict, rule: Rule) -> dict:
    return {"$and": [{"kind": scope}, compile_condition(cond, params, rule)]}


def alternatives(rule: Rule) -> list[dict]:
    """A top-level ``any`` is split into one durable rule per branch (durable's ``$or`` fires once per
    true branch, and the report needs to know which branch matched to show its thresholds)."""
    return list(rule.when["any"]) if "any" in rule.when else [rule.when]


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
                cond = alt if extra is None else {"all": [alt, extra]}
                name = r.id + (f"@{li}" if li else "") + (f"#{ai}" if len(alts) > 1 else "")
                definition[name] = {"all": [{"m": _pattern(r.scope, cond, params, r)}], "run": name, "cap": CAP}
                names[name] = (r.id, sev, ai)
    definition[SINK] = {"pri": 1_000_000, "all": [{"m": {"$ex": {"kind": 1}}}], "run": SINK, "cap": CAP}
    return definition, names
