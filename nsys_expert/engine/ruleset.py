"""The rules one diagnosis runs, with every parameter's value, resolved once (issue 36).

``RuleSet.build`` is the one place where the packs' rules are selected (``--select`` / ``--ignore``)
and the ``--set RULE.param=VALUE`` overrides parsed and checked; each rule's parameters are worked
out there once (its defaults, then the overrides) and only read from then on: by the compiler (the
thresholds the durable rules test), by ``evaluate`` (the texts) and by the resolution (the relation
conditions). ``nsys_expert.settings`` builds it at the entry from the command line, the settings
file and the packs.
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

from ..errors import RuleError
from .model import Rule
from .categories import builtin_categories, builtin_categories_raw, categories_of
from .rules import Pack


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    params: Mapping[str, Mapping]      # rule id -> its parameter values (read only)
    lang: str = "en"                   # the language the findings' texts are rendered in
    # the packs' categories, name -> model.Category (pack.yaml ``categories:``; the built-in pack's by default)
    categories: Mapping = field(default_factory=builtin_categories)

    @classmethod
    def of(cls, rules: Iterable[Rule], overrides: Mapping[str, Mapping] | None = None, lang: str = "en",
           categories: Mapping | None = None) -> RuleSet:
        """These rules with their defaults, then ``overrides`` ({rule id: {param: value}}, already
        checked: see :func:`parse_overrides`)."""
        rules = tuple(rules)
        over = overrides or {}
        return cls(rules, MappingProxyType({r.id: MappingProxyType(r.param_values(over.get(r.id))) for r in rules}),
                   lang or "en", MappingProxyType(dict(categories)) if categories is not None else builtin_categories())

    @classmethod
    def build(cls, packs: list[Pack], select: list[str] | None = None, ignore: list[str] | None = None,
              overrides: list[str] | None = None, lang: str = "en") -> RuleSet:
        """The packs' rules picked by ``select`` / ``ignore``, with ``overrides`` (``RULE.param=VALUE``
        strings, checked against every rule of the packs: a rule left out by ``--ignore`` may still be
        named)."""
        every = [r for p in packs for r in p.rules]
        return cls.of(select_rules(packs, select, ignore), parse_overrides(overrides or [], every), lang,
                      categories_of(packs, builtin_categories_raw()))

    def __len__(self) -> int:
        return len(self.rules)

    def changed(self) -> list[dict]:
        """The parameters whose value is not their rule's default (what ``--set`` or the settings file
        changed), ``[{"param": "RULE.param", "value", "default"}]`` in rule order."""
        return [{"param": f"{r.id}.{k}", "value": v, "default": r.params[k]["default"]}
                for r in self.rules for k, v in self.params[r.id].items()
                if k in r.params and v != r.params[k]["default"]]


def _did_you_mean(name: str, names) -> str:
    hint = difflib.get_close_matches(name, sorted(names), 1, 0.5)
    return f" (did you mean '{hint[0]}'?)" if hint else ""


def select_rules(packs: list[Pack], select: list[str] | None = None, ignore: list[str] | None = None) -> list[Rule]:
    rules = [r for p in packs for r in p.rules]
    known = {r.id for r in rules} | {r.category for r in rules}
    for s in (select or []) + (ignore or []):
        if s not in known:
            raise RuleError(f"--select/--ignore: no rule or category named '{s}'{_did_you_mean(s, known)}", None,
                            "see nsys-expert rules for the list")
    if select:
        rules = [r for r in rules if r.id in select or r.category in select]
    if ignore:
        rules = [r for r in rules if r.id not in ignore and r.category not in ignore]
    return rules


def parse_overrides(items: list[str], rules: list[Rule]) -> dict[str, dict]:
    """``--set RULE.param=VALUE`` -> {rule id: {param: value}} (validated: rule, param, type, range)."""
    by_id = {r.id: r for r in rules}
    out: dict[str, dict] = {}
    for item in items or []:
        key, eq, raw = item.partition("=")
        rid, dot, param = key.partition(".")
        if not eq or not dot:
            raise RuleError(f"--set {item}: expected RULE.param=VALUE", None)
        if rid not in by_id:
            raise RuleError(f"--set {item}: no rule '{rid}'{_did_you_mean(rid, by_id)}", None, "see nsys-expert rules")
        rule = by_id[rid]
        if param not in rule.params:
            raise RuleError(f"--set {item}: rule {rid} has no param '{param}'{_did_you_mean(param, rule.params)}", None,
                            f"its params: {', '.join(rule.params) or 'none'}")
        spec = rule.params[param]
        default = spec["default"]
        try:
            if isinstance(default, bool):
                value = raw.lower() in ("1", "true", "yes", "on")
            elif isinstance(default, (int, float)):
                value = float(raw)
                if value.is_integer() and isinstance(default, int):
                    value = int(value)
            else:
                value = raw
        except ValueError as e:
            raise RuleError(f"--set {item}: '{raw}' is not a number", None) from e
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise RuleError(f"--set {item}: the value must be finite", None)
            if "min" in spec and value < spec["min"] or "max" in spec and value > spec["max"]:
                raise RuleError(f"--set {item}: {value} is outside [{spec.get('min', '-inf')}, {spec.get('max', 'inf')}]", None)
        out.setdefault(rid, {})[param] = value
    return out
