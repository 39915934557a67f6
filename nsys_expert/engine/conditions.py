"""Conditions evaluated in Python, with the rule engine's semantics, for what is decided after a rule fired:
which advice items fit the data (``advice: [{en, when}]``) and which relations apply (``supersedes`` /
``refutes`` items with a ``when``).

Same grammar as a rule's ``when`` (nested all / any / not over ``{fact, op, value}``) and the same
meaning as compiler.compile_condition gives it in durable-rules: ``not`` is pushed down to the leaves
with the opposite operator, so a comparison on a missing fact is false whether negated or not
(``exists`` / ``not exists`` excepted); ``$param`` values and ``{fact, times, plus}`` right-hand sides
work as in ``when``. Two leaves only these conditions have:

- ``{input: NAME}``: the run's input holds that table (``ncu``, ``api_trace``, ... as facts/registry.INPUTS);
- ``{condition: NAME}``: a named condition of the pack (pack.yaml ``conditions:``).

tests/test_conditions.py checks, rule by rule over the golden fixtures, that this evaluator and the
compiled durable rules agree on every rule's ``when``.
"""
from __future__ import annotations

import math

NEG = {"lt": "gte", "lte": "gt", "gt": "lte", "gte": "lt", "eq": "neq", "neq": "eq", "in": "not_in",
       "not_in": "in", "exists": "not_exists", "not_exists": "exists", "contains": "not_contains",
       "icontains": "not_icontains", "startswith": "not_startswith", "endswith": "not_endswith"}


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _rhs(v, facts: dict, params: dict):
    if isinstance(v, str) and v.startswith("$"):
        v = params[v[1:]]
    if isinstance(v, dict):
        base = facts.get(v["fact"])
        if not _num(base):
            return None
        t = _rhs(v.get("times", 1.0), facts, params)
        p = _rhs(v.get("plus", 0.0), facts, params)
        return float(base) * float(t) + float(p)
    return v


def _same(a, b) -> bool:
    """Equality as the engine has it: true matches 1, numbers compare by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return (a is True or a == 1) == (b is True or b == 1) if _num(a) or _num(b) else a == b
    return a == b


def _leaf(op: str, have, val) -> bool:
    if op == "exists":
        return have is not None
    if op == "not_exists":
        return have is None
    if have is None:
        return False
    if op in ("lt", "lte", "gt", "gte"):
        if not _num(have) or not _num(val) or not math.isfinite(float(have)):
            return False
        return have < val if op == "lt" else have <= val if op == "lte" else have > val if op == "gt" else have >= val
    if op == "eq":
        return _same(have, val)
    if op == "neq":
        return not _same(have, val)
    if op == "in":
        return any(_same(have, x) for x in val)
    if op == "not_in":
        return not any(_same(have, x) for x in val)
    s = str(have)
    negated = op.startswith("not_")
    base = op[4:] if negated else op
    if base == "contains":
        hit = str(val) in s
    elif base == "icontains":
        hit = str(val).lower() in s.lower()
    elif base == "startswith":
        hit = s.startswith(str(val))
    elif base == "endswith":
        hit = s.endswith(str(val))
    else:
        raise ValueError(f"operator '{op}' is not evaluated outside the rule engine")
    return hit != negated


def holds(cond: dict | None, facts: dict, params: dict | None = None, inputs=frozenset(),
          named: dict | None = None, negate: bool = False) -> bool:
    """Whether ``cond`` holds for ``facts`` (a missing condition holds)."""
    if cond is None:
        return True
    params = params or {}
    if "all" in cond or "any" in cond:
        # short-circuit: a condition has no effects, and the packs' validation leaves no branch that raises
        parts = (holds(c, facts, params, inputs, named, negate) for c in cond.get("all", cond.get("any")))
        conj = ("all" in cond) != negate
        return all(parts) if conj else any(parts)
    if "not" in cond:
        return holds(cond["not"], facts, params, inputs, named, not negate)
    if "input" in cond:
        return (cond["input"] in inputs) != negate
    if "condition" in cond:
        return holds((named or {})[cond["condition"]], facts, params, inputs, named, negate)
    op = NEG[cond["op"]] if negate else cond["op"]
    val = _rhs(cond.get("value"), facts, params)
    if isinstance(cond.get("value"), dict) and val is None:
        return False
    if op in ("in", "not_in") and isinstance(val, list):
        val = [_rhs(x, facts, params) for x in val]
    return _leaf(op, facts.get(cond["fact"]), val)


def leaves(cond: dict | None):
    """Every leaf of a condition (fact, input and named-condition leaves)."""
    if not cond:
        return
    if "all" in cond or "any" in cond:
        for c in cond.get("all", cond.get("any")):
            yield from leaves(c)
    elif "not" in cond:
        yield from leaves(cond["not"])
    else:
        yield cond
