"""Conditions evaluated in Python, with the rule engine's semantics, for what is decided after a rule fired:
which advice items fit the data (``advice: [{en, when}]``) and which relations apply (``supersedes`` /
``refutes`` items with a ``when``).

The conditions are nodes.py's nodes (a YAML dict is parsed first); what each operator means is
operators.py's. Same meaning as compiler.compile_condition gives a condition in durable-rules: ``not``
is pushed down to the leaves with the opposite operator, so a comparison on a missing fact is false
whether negated or not (``exists`` / ``not exists`` excepted); ``$param`` values and ``{fact, times,
plus}`` right-hand sides work as in ``when``. Two leaves only these conditions have:

- ``{input: NAME}``: the run's input holds that table (``ncu``, ``api_trace``, ... as facts/registry.INPUTS);
- ``{condition: NAME}``: a named condition of the pack (pack.yaml ``conditions:``).

tests/engine/test_conditions.py checks, rule by rule over the golden fixtures, that this evaluator and the
compiled durable rules agree on every rule's ``when``.
"""
from __future__ import annotations

import math

from .nodes import All, Any, FactRef, Input, Items, Leaf, Lit, Not, Param, leaves, parse  # noqa: F401 - leaves
from ..operators import OPS, is_number, negated

_UNKNOWN = object()      # a fact reference whose fact is missing or no number: the leaf is false


def _value(v, facts: dict, params: dict):
    """A leaf's right-hand side for ``facts`` (``_UNKNOWN``: a fact reference that cannot be worked out)."""
    t = type(v)
    if t is Lit:
        return v.value
    if t is Param:
        return params[v.name]                 # a parameter the rule lacks: KeyError, when tested
    if t is FactRef:
        base = facts.get(v.fact)
        if not is_number(base):
            return _UNKNOWN
        times = 1.0 if v.times is None else _value(v.times, facts, params)
        plus = 0.0 if v.plus is None else _value(v.plus, facts, params)
        return float(base) * float(times) + float(plus)
    if t is Items:
        return [None if x is _UNKNOWN else x for x in (_value(i, facts, params) for i in v.items)]
    return v


def _operator(leaf: Leaf, negate: bool):
    op = OPS[leaf.op]
    if negate:
        op = negated(leaf.op)
        if op is None:
            raise ValueError(f"operator '{leaf.op}' cannot be negated outside the rule engine")
    return op


def holds(cond, facts: dict, params: dict | None = None, inputs=frozenset(),
          named: dict | None = None, negate: bool = False) -> bool:
    """Whether ``cond`` (nodes, or its YAML form) holds for ``facts`` (a missing condition holds)."""
    if cond is None:
        return True
    return _holds(parse(cond), facts, params or {}, inputs, named or {}, negate)


def _holds(c, facts: dict, params: dict, inputs, named: dict, negate: bool) -> bool:
    t = type(c)
    if t is Leaf:
        op = _operator(c, negate)
        val = _value(c.value, facts, params)
        if val is _UNKNOWN:
            return False
        have = facts.get(c.fact)
        if have is None:
            return op.missing
        return op.test(have, op.prepare(val) if op.prepare else val)
    if t is All or t is Any:
        # short-circuit: a condition has no effects, and the packs' validation leaves no branch that raises
        parts = (_holds(p, facts, params, inputs, named, negate) for p in c.parts)
        return all(parts) if (t is All) != negate else any(parts)
    if t is Not:
        return _holds(c.part, facts, params, inputs, named, not negate)
    if t is Input:
        return (c.name in inputs) != negate
    return _holds(parse(named[c.name]), facts, params, inputs, named, negate)


def compiled(cond, params: dict | None = None, inputs=frozenset(), named: dict | None = None,
             negate: bool = False, shared: dict | None = None):
    """``holds`` made into one function of the facts, for a condition tested on many findings (an advice
    item's ``when`` on every kernel a rule fires on): ``compiled(cond, params, inputs, named)(facts) ==
    holds(cond, facts, params, inputs, named)``. The tree is walked once: the parameters, the constant
    right-hand sides and the negations are worked out here, so a test is a few calls instead of a walk
    of the tree (a named condition of 17 name tests on each advice item of each kernel). ``params``,
    ``inputs`` and ``named`` must not change while it is used (they do not within one evaluation).
    Conditions compiled with one ``shared`` dict share their named conditions, and a named condition
    tested again on the same facts (the same mapping, unchanged in between: the advice items of one
    finding) gives its last answer. tests/engine/test_conditions.py checks it against ``holds``."""
    if cond is None:
        return _true
    return _Compiler(params or {}, inputs, named or {}, {} if shared is None else shared).node(parse(cond), negate)


class _Compiler:
    """One compilation's context (what ``compiled`` was given); ``node`` makes a node's function."""

    def __init__(self, params: dict, inputs, named: dict, shared: dict):
        self.params, self.inputs, self.named, self.shared = params, inputs, named, shared

    def node(self, c, negate: bool):
        t = type(c)
        if t is Leaf:
            return self.leaf(c, negate)
        if t is All or t is Any:
            parts = [self.node(p, negate) for p in c.parts]
            return _conj(parts) if (t is All) != negate else _disj(parts)
        if t is Not:
            return self.node(c.part, not negate)
        if t is Input:
            return _true if (c.name in self.inputs) != negate else _false
        return self.named_condition(c.name, negate)

    def named_condition(self, name: str, negate: bool):
        key = ("condition", name, negate)
        fn = self.shared.get(key)
        if fn is None:
            memo: list = []          # [the compiled condition, the facts last tested, its answer]

            def fn(facts):           # looked up when first tested, as holds does
                if not memo:
                    memo[:] = [self.node(parse(self.named[name]), negate), None, None]
                if memo[1] is not facts:
                    memo[2] = memo[0](facts)
                    memo[1] = facts
                return memo[2]
            self.shared[key] = fn
        return fn

    def slow(self, c: Leaf, negate: bool):
        """The leaf as ``holds`` tests it (it reads other facts, or raises when tested)."""
        params, inputs, named = self.params, self.inputs, self.named
        return lambda facts: _holds(c, facts, params, inputs, named, negate)

    def leaf(self, c: Leaf, negate: bool):
        v = c.value
        if type(v) is FactRef or type(v) is Items and any(type(x) is FactRef for x in v.items):
            return self.slow(c, negate)
        try:
            op = _operator(c, negate)
            val = _value(v, {}, self.params)
        except (KeyError, ValueError):     # a parameter the rule lacks, 'not matches': raised when tested
            return self.slow(c, negate)
        if op.cmp is not None and (type(val) is float or type(val) is int and abs(val) <= 2 ** 53):
            return _numeric(c.fact, op, val)
        return _tested(c.fact, op.test, op.prepare(val) if op.prepare else val, op.missing)


def _numeric(fact: str, op, val):
    """A float fact against the threshold as a float: the same comparison when the threshold is a float or
    an int that a float holds exactly; anything else (an int fact) as the operator's test."""
    cmp, test, fval, isfinite = op.cmp, op.test, float(val), math.isfinite

    def numeric(facts):
        have = facts.get(fact)
        if type(have) is float:
            return isfinite(have) and cmp(have, fval)
        return False if have is None else test(have, val)
    return numeric


def _tested(fact: str, test, val, missing: bool):
    def tested(facts):
        have = facts.get(fact)
        return missing if have is None else test(have, val)
    return tested


def _conj(parts):
    def conj(facts):
        for p in parts:
            if not p(facts):
                return False
        return True
    return conj


def _disj(parts):
    def disj(facts):
        for p in parts:
            if p(facts):
                return True
        return False
    return disj


def _true(facts) -> bool:
    return True


def _false(facts) -> bool:
    return False
