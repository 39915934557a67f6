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


def compiled(cond: dict | None, params: dict | None = None, inputs=frozenset(), named: dict | None = None,
             negate: bool = False, shared: dict | None = None):
    """``holds`` made into one function of the facts, for a condition tested on many findings (an advice
    item's ``when`` on every kernel a rule fires on): ``compiled(cond, params, inputs, named)(facts) ==
    holds(cond, facts, params, inputs, named)``. The tree is walked once: the parameters, the constant
    right-hand sides and the negations are worked out here, so a test is a few calls instead of a walk
    that looks at every key of every node (a named condition of 17 name tests on each advice item of
    each kernel). ``params``, ``inputs`` and ``named`` must not change while it is used (they do not
    within one evaluation). Conditions compiled with one ``shared`` dict share their named conditions,
    and a named condition tested again on the same facts (the same mapping, unchanged in between: the
    advice items of one finding) gives its last answer. tests/test_conditions.py checks it against
    ``holds``."""
    params = params or {}
    shared = {} if shared is None else shared
    if cond is None:
        return _true
    if "all" in cond or "any" in cond:
        parts = [compiled(c, params, inputs, named, negate, shared) for c in cond.get("all", cond.get("any"))]
        if ("all" in cond) != negate:
            def conj(facts):
                for p in parts:
                    if not p(facts):
                        return False
                return True
            return conj

        def disj(facts):
            for p in parts:
                if p(facts):
                    return True
            return False
        return disj
    if "not" in cond:
        return compiled(cond["not"], params, inputs, named, not negate, shared)
    if "input" in cond:
        out = (cond["input"] in inputs) != negate
        return _true if out else _false
    if "condition" in cond:
        key = ("condition", cond["condition"], negate)
        fn = shared.get(key)
        if fn is None:
            memo: list = []          # [the compiled condition, the facts last tested, its answer]
            name = cond["condition"]

            def fn(facts):           # looked up when first tested, as holds does
                if not memo:
                    memo[:] = [compiled((named or {})[name], params, inputs, named, negate, shared), None, None]
                if memo[1] is not facts:
                    memo[2] = memo[0](facts)
                    memo[1] = facts
                return memo[2]
            shared[key] = fn
        return fn
    fact, value = cond["fact"], cond.get("value")
    if negate and cond["op"] not in NEG or isinstance(value, dict) or isinstance(value, list) and any(isinstance(x, dict) for x in value) \
            or isinstance(value, str) and value.startswith("$") and isinstance(params.get(value[1:]), (dict, list)):
        return lambda facts: holds(cond, facts, params, inputs, named, negate)   # reads other facts: as holds does
    op = NEG[cond["op"]] if negate else cond["op"]
    try:
        val = _rhs(value, {}, params)
        if op in ("in", "not_in") and isinstance(val, list):
            val = [_rhs(x, {}, params) for x in val]
    except KeyError:                     # a parameter the rule lacks: raised when tested, as holds does
        return lambda facts: holds(cond, facts, params, inputs, named, negate)
    if op in ("lt", "lte", "gt", "gte") and (type(val) is float or type(val) is int and abs(val) <= 2 ** 53):
        # a float fact against the threshold as a float: the same comparison when the threshold is a float
        # or an int that a float holds exactly; anything else (an int fact) as _leaf
        cmp = {"lt": float.__lt__, "lte": float.__le__, "gt": float.__gt__, "gte": float.__ge__}[op]
        fval = float(val)
        isfinite = math.isfinite

        def numeric(facts):
            have = facts.get(fact)
            t = type(have)
            if t is float:
                return isfinite(have) and cmp(have, fval)
            if have is None or not _num(have):
                return False
            return _leaf(op, have, val)
        return numeric
    if op in ("contains", "icontains", "startswith", "endswith", "not_contains", "not_icontains",
              "not_startswith", "not_endswith"):
        negated = op.startswith("not_")
        base = op[4:] if negated else op
        sval = str(val)
        if base == "icontains":
            low = sval.lower()

            def test(facts):
                have = facts.get(fact)
                return have is not None and (low in str(have).lower()) != negated
        elif base == "contains":
            def test(facts):
                have = facts.get(fact)
                return have is not None and (sval in str(have)) != negated
        elif base == "startswith":
            def test(facts):
                have = facts.get(fact)
                return have is not None and str(have).startswith(sval) != negated
        else:
            def test(facts):
                have = facts.get(fact)
                return have is not None and str(have).endswith(sval) != negated
        return test
    return lambda facts: _leaf(op, facts.get(fact), val)


def _true(facts) -> bool:
    return True


def _false(facts) -> bool:
    return False
