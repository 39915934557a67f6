"""The condition language of the rule packs, parsed once (issue 49, item 5).

A rule's ``when``, its escalations' ``when``, its advice items' and relations' ``when`` and the pack's
named conditions (pack.yaml ``conditions:``) are YAML trees of ``all`` / ``any`` / ``not`` over leaves
``{fact, op, value}``; advice and relation conditions also have ``{input: NAME}`` and ``{condition: NAME}``
leaves. :func:`parse` makes such a tree into the frozen nodes below when a rule is made (``Rule``'s
``__post_init__``); everything after reads the nodes, never the dicts: the durable-rules compiler
(compiler.py), the Python evaluator (evaluate.py), the walkers (which facts a rule needs, its
thresholds) and the words (describe.py). What an operator means is declared once, in operators.py.

A value is a literal (:class:`Lit`), a rule parameter (:class:`Param`, ``$name``), another fact
(:class:`FactRef`, ``{fact, times, plus}``) or a list of those (:class:`Items`, for ``in`` / ``not_in``).
:meth:`raw` gives a node's YAML form back (the pack cache keeps that, as JSON).
"""
from __future__ import annotations

import json
from dataclasses import dataclass


class ConditionError(ValueError):
    """A tree that is no condition (the rule loader says where: file, line, rule)."""


# values ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Lit:
    value: object

    def raw(self):
        return self.value


@dataclass(frozen=True, slots=True)
class Param:
    name: str

    def raw(self):
        return "$" + self.name


@dataclass(frozen=True, slots=True)
class FactRef:
    """Another fact of the same scope, ``fact * times + plus`` (times and plus: a Lit or a Param, or None)."""
    fact: str
    times: Lit | Param | None = None
    plus: Lit | Param | None = None

    def raw(self):
        out: dict = {"fact": self.fact}
        if self.times is not None:
            out["times"] = self.times.raw()
        if self.plus is not None:
            out["plus"] = self.plus.raw()
        return out


@dataclass(frozen=True, slots=True)
class Items:
    items: tuple

    def raw(self):
        return [x.raw() for x in self.items]


# conditions -----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Leaf:
    """``{fact, op, value}``: ``op`` is the operator's name (operators.OPS; the loader checks it is one),
    ``value`` None when the file gives none (``exists`` needs none)."""
    fact: str
    op: str
    value: Lit | Param | FactRef | Items | None = None

    def raw(self):
        out: dict = {"fact": self.fact, "op": self.op}
        if self.value is not None:
            out["value"] = self.value.raw()
        return out


@dataclass(frozen=True, slots=True)
class Input:
    """``{input: NAME}``: the run's input holds that table (advice and relation conditions only)."""
    name: str

    def raw(self):
        return {"input": self.name}


@dataclass(frozen=True, slots=True)
class Named:
    """``{condition: NAME}``: a named condition of the pack (advice and relation conditions only)."""
    name: str

    def raw(self):
        return {"condition": self.name}


@dataclass(frozen=True, slots=True)
class All:
    parts: tuple

    def raw(self):
        return {"all": [c.raw() for c in self.parts]}


@dataclass(frozen=True, slots=True)
class Any:
    parts: tuple

    def raw(self):
        return {"any": [c.raw() for c in self.parts]}


@dataclass(frozen=True, slots=True)
class Not:
    part: object

    def raw(self):
        return {"not": self.part.raw()}


NODES = (Leaf, Input, Named, All, Any, Not)
Cond = Leaf | Input | Named | All | Any | Not


def _bad(raw) -> ConditionError:
    try:
        shown = json.dumps(raw)[:120]
    except (TypeError, ValueError):
        shown = repr(raw)[:120]
    return ConditionError("a condition is {fact: NAME, op: OP, value: V} or {all: [...]}, {any: [...]}, {not: ...}; "
                          f"this one is not: {shown}")


def parse_value(raw):
    """A leaf's ``value`` (or an item of its list) as a value node."""
    if isinstance(raw, str) and raw.startswith("$"):
        return Param(raw[1:])
    if isinstance(raw, dict):
        if not isinstance(raw.get("fact"), str):
            raise _bad(raw)
        return FactRef(raw["fact"], *(None if raw.get(k) is None else parse_value(raw[k]) for k in ("times", "plus")))
    if isinstance(raw, list):
        return Items(tuple(parse_value(x) for x in raw))
    return Lit(raw)


def parse(raw) -> Cond | None:
    """The condition ``raw`` (its YAML form; None stays None; a node, or a dict holding nodes, is taken
    as it is) as nodes. Raises ConditionError on a tree that is no condition."""
    if raw is None or isinstance(raw, NODES):
        return raw
    if not isinstance(raw, dict):
        raise _bad(raw)
    for key, node in (("all", All), ("any", Any)):
        if key in raw:
            parts = raw[key]
            if not isinstance(parts, list) or not parts:
                raise _bad(raw)
            return node(tuple(_part(c, raw) for c in parts))
    if "not" in raw:
        return Not(_part(raw["not"], raw))
    if "input" in raw or "condition" in raw:
        name = raw.get("input", raw.get("condition"))
        if not isinstance(name, str):
            raise _bad(raw)
        return Input(name) if "input" in raw else Named(name)
    if not isinstance(raw.get("fact"), str) or not isinstance(raw.get("op"), str):
        raise _bad(raw)
    return Leaf(raw["fact"], raw["op"], parse_value(raw["value"]) if "value" in raw else None)


def _part(c, whole):
    if c is None:
        raise _bad(whole)
    return parse(c)


def raw(cond):
    """The YAML form of a condition (None stays None)."""
    return None if cond is None else cond.raw()


# walks ----------------------------------------------------------------------------------------------

def leaves(cond):
    """Every leaf of a condition (Leaf, Input and Named nodes), in order; named conditions are not opened."""
    if cond is None:
        return
    t = type(cond)
    if t is All or t is Any:
        for c in cond.parts:
            yield from leaves(c)
    elif t is Not:
        yield from leaves(cond.part)
    else:
        yield cond


def fact_leaves(cond):
    """Every ``{fact, op, value}`` leaf of a condition."""
    return (c for c in leaves(cond) if type(c) is Leaf)


def facts_read(cond) -> list[str]:
    """Every fact a condition reads, left-hand and right-hand sides, in order, once each."""
    out: dict[str, None] = {}
    for c in fact_leaves(cond):
        out[c.fact] = None
        if type(c.value) is FactRef:
            out[c.value.fact] = None
    return list(out)


def missing(cond, have) -> set[str]:
    """Facts a condition needs but ``have`` lacks (an ``exists`` test never needs its fact; of an ``any``,
    the branch nearest to running: what the user would export to make the rule evaluable)."""
    t = type(cond)
    if t is Leaf:
        return set() if cond.fact in have or cond.op == "exists" else {cond.fact}
    if t is All:
        return set().union(*(missing(c, have) for c in cond.parts))
    if t is Any:
        parts = [missing(c, have) for c in cond.parts]
        return min(parts, key=lambda p: (len(p), sorted(p))) if parts else set()
    if t is Not:
        return missing(cond.part, have)
    return set()


def rhs_facts(cond) -> set[str]:
    """The facts a condition compares against (right-hand sides)."""
    return {c.value.fact for c in fact_leaves(cond) if type(c.value) is FactRef}


def positive_facts(cond) -> set[str]:
    """Facts a condition tests for a value (not under ``not``, not mere ``exists`` checks)."""
    t = type(cond)
    if t is Leaf:
        out = set() if cond.op == "exists" else {cond.fact}
        if type(cond.value) is FactRef:
            out.add(cond.value.fact)
        return out
    if t is All or t is Any:
        return set().union(*(positive_facts(c) for c in cond.parts))
    return set()


def branches(cond) -> list:
    """The branches of a top-level ``any`` (one durable rule each), else the condition alone."""
    return list(cond.parts) if type(cond) is Any else [cond]
