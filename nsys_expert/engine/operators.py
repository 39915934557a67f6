"""The operators of the condition language, each declared once (issue 49, item 5): what it means in
Python (advice and relation conditions, conditions.py), what it compiles to in durable-rules (a rule's
``when``, compiler.py), its words for ``explain`` and docs/rules.md (describe.py, English and Chinese),
its kind (the loader's operand checks, validate.py) and its opposite (``not`` is pushed down to the
leaves with the opposite operator, in both evaluators). Adding an operator is one entry in ``OPS``.

Semantics shared by both evaluators: a comparison on a missing fact is false, negated or not (``exists``
/ ``not_exists`` excepted: ``missing`` is what they give then); numbers compare by value, true matches 1.
``test(have, prepare(value))`` is called with a fact that is present (``prepare``: the value as the test
takes it, worked out once for a condition tested many times, conditions.compiled; none: the value itself).
``engine(fact, value)`` gets the right-hand side already compiled (compiler.py: numbers made safe for
the engine's parser, a fact reference as its arithmetic, a list item by item); None: the engine cannot
test it (the negated string tests: ``not`` cannot wrap them in a rule's ``when``).
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Callable

NUMERIC, STRING, EQUALITY, LIST, PRESENCE = "numeric", "string", "equality", "list", "presence"


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def same(a, b) -> bool:
    """Equality as the engine has it: true matches 1, numbers compare by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return (a is True or a == 1) == (b is True or b == 1) if _num(a) or _num(b) else a == b
    return a == b


_SPECIAL = set(".*+?()[]{}|%^$\\<>-")


def escape(s: str) -> str:
    """Text as a literal in the engine's regex dialect (``%`` escapes)."""
    return "".join("%" + ch if ch in _SPECIAL else ch for ch in s)


@dataclass(frozen=True)
class Operator:
    name: str
    kind: str                       # NUMERIC, STRING, EQUALITY, LIST or PRESENCE
    en: str                         # its words (explain, docs/rules.md); in another language the labels
                                    # catalog's entry ``operator.<name>`` (none: these words, a symbol)
    negation: str | None            # the operator meaning not-this; None: none (``not`` cannot wrap it)
    test: Callable                  # (have, prepare(value)) -> bool, ``have`` present
    engine: Callable | None         # (fact, compiled value) -> durable-rules pattern
    missing: bool = False           # what it gives on a missing fact
    prepare: Callable | None = None  # the value as ``test`` takes it (worked out once)
    in_files: bool = True           # a pack may write it (False: made only by pushing ``not`` down)
    python: bool = True             # evaluated outside the engine (advice and relation conditions)
    cmp: Callable | None = None     # a numeric operator's comparison of two floats

    def words(self, lang: str = "en") -> str:
        from ..notes import catalogs

        return catalogs.catalog("labels", lang).get(f"operator.{self.name}\x04{self.en}", self.en)

    @property
    def needs_value(self) -> bool:
        return self.kind != PRESENCE


def _numeric(cmp) -> Callable:
    def test(have, val):
        if not _num(have) or not _num(val) or not math.isfinite(float(have)):
            return False
        return cmp(have, val)
    return test


def _cmp_engine(key: str) -> Callable:
    return lambda fact, val: {key: {fact: val}}


def _one_or(key: str, alts: list) -> dict:
    return alts[0] if len(alts) == 1 else {key: alts}


def _not_python(have, val):
    raise ValueError("operator 'matches' is not evaluated outside the rule engine")


def _low(v) -> str:
    return str(v).lower()


_OPS = [
    Operator("lt", NUMERIC, "<", "gte", _numeric(operator.lt), _cmp_engine("$lt"), cmp=operator.lt),
    Operator("lte", NUMERIC, "≤", "gt", _numeric(operator.le), _cmp_engine("$lte"), cmp=operator.le),
    Operator("gt", NUMERIC, ">", "lte", _numeric(operator.gt), _cmp_engine("$gt"), cmp=operator.gt),
    Operator("gte", NUMERIC, "≥", "lt", _numeric(operator.ge), _cmp_engine("$gte"), cmp=operator.ge),
    Operator("eq", EQUALITY, "=", "neq", same, lambda fact, val: {fact: val}),
    Operator("neq", EQUALITY, "≠", "eq", lambda h, v: not same(h, v), _cmp_engine("$neq")),
    Operator("in", LIST, "in", "not_in", lambda h, v: any(same(h, x) for x in v),
             lambda fact, val: _one_or("$or", [{fact: x} for x in val])),
    Operator("not_in", LIST, "not in", "in", lambda h, v: not any(same(h, x) for x in v),
             lambda fact, val: _one_or("$and", [{"$neq": {fact: x}} for x in val])),
    Operator("contains", STRING, "contains", "not_contains", lambda h, v: v in str(h),
             lambda fact, val: {"$mt": {fact: f".*{escape(val)}.*"}}, prepare=str),
    Operator("icontains", STRING, "contains (any case)", "not_icontains",
             lambda h, v: v in str(h).lower(),
             lambda fact, val: {"$imt": {fact: f".*{escape(val)}.*"}}, prepare=_low),
    Operator("startswith", STRING, "starts with", "not_startswith", lambda h, v: str(h).startswith(v),
             lambda fact, val: {"$mt": {fact: f"{escape(val)}.*"}}, prepare=str),
    Operator("endswith", STRING, "ends with", "not_endswith", lambda h, v: str(h).endswith(v),
             lambda fact, val: {"$mt": {fact: f".*{escape(val)}"}}, prepare=str),
    Operator("matches", STRING, "matches", None, _not_python, lambda fact, val: {"$mt": {fact: val}},
             python=False),
    Operator("exists", PRESENCE, "is known", "not_exists", lambda h, v: True,
             lambda fact, val: {"$ex": {fact: 1}}),
    # made only by ``not`` over the operators above
    Operator("not_exists", PRESENCE, "is not known", "exists", lambda h, v: False,
             lambda fact, val: {"$nex": {fact: 1}}, missing=True, in_files=False),
    Operator("not_contains", STRING, "does not contain", "contains", lambda h, v: v not in str(h),
             None, prepare=str, in_files=False),
    Operator("not_icontains", STRING, "does not contain (any case)", "icontains",
             lambda h, v: v not in str(h).lower(), None, prepare=_low, in_files=False),
    Operator("not_startswith", STRING, "does not start with", "startswith",
             lambda h, v: not str(h).startswith(v), None, prepare=str, in_files=False),
    Operator("not_endswith", STRING, "does not end with", "endswith",
             lambda h, v: not str(h).endswith(v), None, prepare=str, in_files=False),
]

OPS: dict[str, Operator] = {o.name: o for o in _OPS}

# the operators a pack may write, by what they take (the loader's checks)
ALL_OPS = frozenset(o.name for o in _OPS if o.in_files)
PY_OPS = frozenset(o.name for o in _OPS if o.in_files and o.python)   # advice and relation conditions
NUMERIC_OPS = frozenset(o.name for o in _OPS if o.in_files and o.kind == NUMERIC)
STRING_OPS = frozenset(o.name for o in _OPS if o.in_files and o.kind == STRING)
LIST_OPS = frozenset(o.name for o in _OPS if o.in_files and o.kind == LIST)
EQUALITY_OPS = frozenset(o.name for o in _OPS if o.in_files and o.kind == EQUALITY)


def negated(name: str) -> Operator | None:
    """The operator meaning not-``name``, or None."""
    neg = OPS[name].negation
    return OPS[neg] if neg else None
