"""Rule packs: load YAML safely, validate shape (JSON Schema) and meaning (facts, params, templates).

A pack is a folder with ``pack.yaml`` (name, version, description) and one rule per ``*.yaml`` file
(in ``rules/`` below it if that folder exists, else anywhere below the pack folder). A rule's
fixture cases live beside it as ``<rule-id>.cases.yaml``. Every error is one line: file, line when
known, rule id, what is wrong.
"""
from __future__ import annotations

import difflib
import json
import numbers
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2
import yaml

from ..errors import RuleError
from ..facts import registry
from . import pack_cache, relations, safe_yaml, sandbox
from .conditions import ConditionError
from .model import (ALL_OPS, NUMERIC_OPS, PACK_PARAMS, SEVERITIES, STRING_OPS, SUBJECTS,  # noqa: F401
                    Pack, Rule, walk_conditions)
from .validate import MAX_PATTERN, check_operand, fail, check_leaf, regex_hazard  # noqa: F401

ENV = sandbox.LimitedSandbox(undefined=jinja2.ChainableUndefined, autoescape=False)


def _num(v) -> str:
    return f"{v:,.1f}" if isinstance(v, (int, float)) and abs(v) < 1e15 else str(v)


ENV.filters["num"] = _num


def _is_number(v) -> bool:
    """Jinja2's ``is number`` (an instance of numbers.Number) without the ABC check for the common types
    (at 100,000 kernel facts the ABC's instance check was 870,000 calls)."""
    t = type(v)
    return True if t is float or t is int else isinstance(v, numbers.Number)


ENV.tests["number"] = _is_number


def _command(scenario: str, **options) -> str:
    """``{{ command('quick', extra=['--python-sampling=true']) }}`` in a rule's text: the playbook command from
    the one builder (scenarios), so advice never spells a command by hand."""
    from .. import scenarios

    return scenarios.command_line(scenario, **options)


ENV.globals["command"] = _command


def pack_phases(meta: dict, meta_path: str) -> list:
    """pack.yaml ``phases``: a list of ``{phase, re, cause, doc}`` (facts/phases.yaml's entries): a name
    pattern (case-insensitive regex), the phase it names and the cause its time points to (or null)."""
    import re

    items = meta.get("phases") or []
    if not isinstance(items, list):
        raise RuleError("pack.yaml phases: a list of {phase, re, cause}", meta_path)
    out = []
    for i, p in enumerate(items, 1):
        if not isinstance(p, dict) or not isinstance(p.get("phase"), str) or not isinstance(p.get("re"), str):
            raise RuleError(f"pack.yaml phases: entry {i} needs 'phase' and 're' (text)", meta_path)
        try:
            re.compile(p["re"])
        except re.error as e:
            raise RuleError(f"pack.yaml phases: entry {i} ({p['phase']}): 're' is not a regular expression ({e})", meta_path) from e
        why = regex_hazard(p["re"])     # matched against every NVTX range name: checked as `matches` patterns are
        if why:
            raise RuleError(f"pack.yaml phases: entry {i} ({p['phase']}): 're' {p['re'][:80]!r} {why}", meta_path)
        cause = p.get("cause")
        if cause is not None and not isinstance(cause, str):
            raise RuleError(f"pack.yaml phases: entry {i} ({p['phase']}): 'cause' is a rule category or null", meta_path)
        out.append({"phase": p["phase"], "re": p["re"], "cause": cause, "doc": str(p.get("doc", ""))})
    return out


# pack.yaml ``params``: what the engine reads from a pack (engine/resolve.py), each {default, doc, min, max}
def _text(v) -> dict:
    if v is None:
        return {}
    if isinstance(v, str):
        return {"en": v}
    return dict(v)


def _textlist(v) -> tuple[dict, list]:
    """Advice as {lang: [text]} plus one condition (or None) per item. Items are strings, or
    ``{en, <lang>..., when}`` (the form that carries a condition)."""
    if v is None:
        return {"en": []}, []
    if isinstance(v, dict):
        return {k: list(x) for k, x in v.items()}, [None] * len(v.get("en", []))
    en = [x if isinstance(x, str) else x["en"] for x in v]
    out = {"en": en}
    langs = dict.fromkeys(k for x in v if isinstance(x, dict) for k in x if k not in ("en", "when"))
    for lang in langs:   # an item without words of its own in that language keeps its English
        out[lang] = [x.get(lang, x["en"]) if isinstance(x, dict) else x for x in v]
    return out, [x.get("when") if isinstance(x, dict) else None for x in v]


def _relations(items) -> list[dict]:
    return [{"rule": x, "when": None, "because": None} if isinstance(x, str)
            else {"rule": x["rule"], "when": x.get("when"), "because": _text(x.get("because")) or None}
            for x in items or []]


_SCHEMA = None
_VALIDATOR = None


def schema() -> dict:
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = json.loads(resources.files("nsys_expert.engine").joinpath("rule_schema.json").read_text())
    return _SCHEMA


def validator():
    """The JSON Schema validator (imported on first use: a cached pack never needs it)."""
    global _VALIDATOR
    if _VALIDATOR is None:
        import jsonschema

        _VALIDATOR = jsonschema.Draft202012Validator(schema())
    return _VALIDATOR


def _lines(text: str) -> dict:
    """Line number (1-based) of each top-level key of a YAML mapping."""
    out = {}
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return out
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            out[str(k.value)] = k.start_mark.line + 1
    return out


class _LazyLines(dict):
    """Line numbers of the top-level keys, parsed only when an error needs one."""

    def __init__(self, text: str):
        super().__init__()
        self._text = text
        self._done = False

    def get(self, key, default=None):
        if not self._done:
            self.update(_lines(self._text))
            self._done = True
        return super().get(key, default)


def _non_string_key(node, depth: int = 0):
    """The first mapping key that is not text (YAML reads `1: 2` or `true: x` as a number or a boolean),
    or None; the schema's messages assume text keys."""
    if depth > 64:
        return None
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str):
                return k
            found = _non_string_key(v, depth + 1)
            if found is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            found = _non_string_key(v, depth + 1)
            if found is not None:
                return found
    return None


def load_rule_file(path: str, pack: str) -> Rule:
    text = safe_yaml.read_text(path)
    try:
        data = safe_yaml.loads(text, path)  # safe loader, bounded size, aliases and depth
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise fail(path, mark.line + 1 if mark else None, None,
                    f"not valid YAML ({getattr(e, 'problem', None) or e})") from e
    lines = _LazyLines(text)
    rid = data.get("id") if isinstance(data, dict) else None
    if not isinstance(data, dict):
        raise fail(path, None, None, "a rule file must hold one YAML mapping (id, title, category, ...)")
    bad = _non_string_key(data)
    if bad is not None:
        raise fail(path, None, rid if isinstance(rid, str) else None,
                    f"every key must be text; {bad!r} is not (quote it, or remove it)")
    # the most telling error first: an unknown key (often a typo of a required one), then the shallowest
    errors = sorted(validator().iter_errors(data), key=lambda e: (e.validator != "additionalProperties",
                                                                  len(list(e.absolute_path)), str(list(e.absolute_path))))
    if errors:
        e = errors[0]
        top = str(e.absolute_path[0]) if e.absolute_path else None
        loc = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        msg = e.message
        if e.validator == "additionalProperties" and not e.absolute_path:
            bad = sorted(set(data) - set(schema()["properties"]))
            hint = difflib.get_close_matches(bad[0], list(schema()["properties"]), 1) if bad else []
            msg = f"unknown key '{bad[0]}'" + (f" (did you mean '{hint[0]}'?)" if hint else "") if bad else msg
        elif e.validator == "oneOf" and top == "when":
            msg = ("a condition is {fact: NAME, op: OP, value: V} or {all: [...]}, {any: [...]}, {not: ...}; "
                   f"this one is not: {json.dumps(e.instance)[:120]}")
        raise fail(path, lines.get(top), rid, f"{loc}: {msg}")
    try:
        rule = _rule(data, path, pack)
    except ConditionError as e:       # the schema lets no such tree through: a last guard, said as the others
        raise fail(path, lines.get("when"), rid, str(e)) from e
    stem = os.path.splitext(os.path.basename(path))[0]
    for name in dict.fromkeys((rule.id, stem)):
        cases = os.path.join(os.path.dirname(path), f"{name}.cases.yaml")
        if os.path.exists(cases):
            rule.cases_path = cases
            break
    _check_semantics(rule, lines)
    return rule


def _estimate(est):
    """``estimate`` with its ``expr`` bare: a Jinja2 expression, taken also as a template prints one
    (``"{{ x * 0.5 }}"``, as the texts write them: issue 56, item 13, where that failed to load)."""
    if isinstance(est, dict) and isinstance(est.get("expr"), str):
        e = est["expr"].strip()
        if e.startswith("{{") and e.endswith("}}") and "{{" not in e[2:-2] and "}}" not in e[2:-2]:
            return dict(est, expr=e[2:-2].strip())
    return est


def _rule(data: dict, path: str, pack: str) -> Rule:
    """The rule of a file's (validated) data; its conditions are parsed here (Rule.__post_init__)."""
    advice, advice_when = _textlist(data.get("advice"))
    scope = data.get("scope", "run")
    return Rule(
        id=data["id"], title=_text(data["title"]), category=data["category"], severity=data["severity"],
        scope=scope, when=data["when"], message=_text(data["message"]),
        advice=advice, advice_when=advice_when, params=data.get("params", {}) or {},
        subject=data.get("subject", "kernel" if scope == "kernel" else "run"), cause=data.get("cause", data["id"]),
        supersedes=_relations(data.get("supersedes")), refutes=_relations(data.get("refutes")), refines=data.get("refines"),
        actionable=data.get("actionable", True), locate=data.get("locate"), lends_severity=data.get("lends_severity", True), combine=data.get("combine"),
        requires=list(data.get("requires", [])), escalate=list(data.get("escalate", [])),
        evidence=list(data.get("evidence", [])), estimate=_estimate(data.get("estimate")),
        references=list(data.get("references", [])), why=_text(data.get("why")) or None, pack=pack, path=path)


def _check_semantics(rule: Rule, lines: dict) -> None:
    path, rid = rule.path, rule.id
    known = registry.all_names(rule.scope)
    line = lambda: lines.get("when")  # noqa: E731 - looked up only when there is an error to report
    for c in list(walk_conditions(rule.when)) + [c for e in rule.escalate for c in walk_conditions(e["when"])]:
        check_leaf(rule, c, "", line)
    for name, p in rule.params.items():
        if "min" in p and isinstance(p["default"], (int, float)) and p["default"] < p["min"]:
            raise fail(path, lines.get("params"), rid, f"param {name}: default {p['default']} is below min {p['min']}")
        if "max" in p and isinstance(p["default"], (int, float)) and p["default"] > p["max"]:
            raise fail(path, lines.get("params"), rid, f"param {name}: default {p['default']} is above max {p['max']}")
    for fact in rule.evidence:
        if registry.lookup(rule.scope, fact) is None:
            hint = difflib.get_close_matches(fact, known, 1)
            raise fail(path, lines.get("evidence"), rid, f"evidence names unknown fact '{fact}'"
                        + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    for req in rule.requires:
        if req not in registry.INPUTS:
            raise fail(path, lines.get("requires"), rid, f"requires unknown input '{req}'; inputs: "
                        + ", ".join(sorted(registry.INPUTS)))
    for key, texts in (("title", [rule.title]), ("message", [rule.message]), ("why", [rule.why or {}]),
                       ("advice", [{k: "\n".join(v) for k, v in rule.advice.items()}])):
        for t in texts:
            for lang, s in t.items():
                try:
                    tree = ENV.parse(s)
                except jinja2.TemplateSyntaxError as e:
                    raise fail(path, (lines.get(key) or 0) + (e.lineno or 1) - 1 if lines.get(key) else None, rid,
                                f"{key} ({lang}): template error: {e.message}") from e
                why = sandbox.check(tree)
                if why:
                    raise fail(path, lines.get(key), rid, f"{key} ({lang}): {why}")
    if rule.estimate:
        try:
            ENV.compile_expression(rule.estimate["expr"])
            why = sandbox.check(ENV.parse("{{ " + rule.estimate["expr"] + " }}"))
        except jinja2.TemplateSyntaxError as e:
            raise fail(path, lines.get("estimate"), rid, f"estimate.expr: {e.message}") from e
        if why:
            raise fail(path, lines.get("estimate"), rid, f"estimate.expr: {why}")

    relations.check_rule(rule, lines)


def load_pack(folder: str) -> Pack:
    folder = str(folder)
    if not os.path.isdir(folder):
        raise RuleError("no such rule pack folder", folder)
    meta_path = os.path.join(folder, "pack.yaml")
    meta = {}
    if os.path.exists(meta_path):
        try:
            meta = safe_yaml.load_file(meta_path) or {}
        except yaml.YAMLError as e:
            raise RuleError(f"pack.yaml is not valid YAML ({e})", meta_path) from e
        if not isinstance(meta, dict) or "name" not in meta:
            raise RuleError("pack.yaml needs at least 'name' (and 'version')", meta_path)
    else:
        raise RuleError("a rule pack folder needs a pack.yaml (name, version, description)", folder)
    name = str(meta["name"])

    params, conditions = relations.pack_meta(meta, meta_path)
    categories = relations.pack_categories(meta, meta_path)
    root = os.path.join(folder, "rules") if os.path.isdir(os.path.join(folder, "rules")) else folder
    paths = []
    for dirpath, dirnames, files in os.walk(root):
        dirnames.sort()
        paths += [os.path.join(dirpath, f) for f in sorted(files)
                  if f.endswith((".yaml", ".yml")) and not f.endswith((".cases.yaml", ".cases.yml")) and f != "pack.yaml"]

    cached = pack_cache.get(folder, meta_path, paths)
    if cached is not None:
        return cached
    rules, seen = [], {}
    for path in paths:
        r = load_rule_file(path, name)
        if r.id in seen:
            raise RuleError(f"rule {r.id}: duplicate id (also in {seen[r.id]})", r.path)
        seen[r.id] = r.path
        rules.append(r)
    if not rules:
        raise RuleError("the pack has no rule files (*.yaml)", folder)
    pack = Pack(name, str(meta.get("version", "0")), str(meta.get("description", "")), folder, rules, params, conditions,
                pack_phases(meta, meta_path), categories)
    base_params, base_conditions, base_categories = ({}, {}, {}) \
        if os.path.abspath(folder) == os.path.abspath(builtin_pack_dir()) else builtin_meta()
    for r in rules:          # a pack alone (check-rules) already knows its params; load_packs may widen the names
        r.pack_params = params or base_params
        r.pack_conditions = {**base_conditions, **conditions}
    relations.check_categories(rules, {**base_categories, **categories})
    pack_cache.put(folder, meta_path, paths, pack)
    return pack


def builtin_meta() -> tuple[dict, dict, dict]:
    """The built-in pack's params, named conditions and categories (what a pack without its own falls back to)."""

    path = os.path.join(builtin_pack_dir(), "pack.yaml")
    try:
        meta = safe_yaml.load_file(path) or {}
    except (RuleError, yaml.YAMLError):
        return {}, {}, {}
    return (*relations.pack_meta(meta, path), relations.pack_categories(meta, path))


def builtin_pack_dir() -> str:
    """The built-in pack: ``rules/`` at the repository root (installed as ``nsys_expert.builtin_rules``)."""
    here = Path(__file__).resolve().parents[2] / "rules"
    if (here / "pack.yaml").exists():
        return str(here)
    return str(resources.files("nsys_expert.builtin_rules"))


ENTRY_POINT_GROUP = "nsys_expert.rule_packs"


def installed_pack_dirs() -> list[str]:
    """Rule packs installed as Python packages: an entry point in the ``nsys_expert.rule_packs`` group
    names a package whose folder holds pack.yaml (or a callable returning that folder)."""
    from importlib.metadata import entry_points

    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as e:  # noqa: BLE001 - a broken plugin is the user's to fix, named
            raise RuleError(f"installed rule pack '{ep.name}' ({ep.value}) cannot be imported: {e}", None) from e
        if callable(obj):
            obj = obj()
        if hasattr(obj, "__file__") and obj.__file__:
            obj = os.path.dirname(obj.__file__)
        out.append(str(obj))
    return out


def load_packs(extra: list[str] | None = None, builtin: bool = True, installed: bool = True) -> list[Pack]:
    packs = [load_pack(builtin_pack_dir())] if builtin else []
    for p in (installed_pack_dirs() if installed else []) + list(extra or []):
        if any(os.path.abspath(p) == os.path.abspath(q.path) for q in packs):
            continue
        packs.append(load_pack(p))
    ids: dict[str, str] = {}
    for pk in packs:
        for r in pk.rules:
            if r.id in ids:
                raise RuleError(f"rule {r.id}: duplicate id across packs ({ids[r.id]} and {pk.name})", r.path)
            ids[r.id] = pk.name

    relations.check_packs(packs)
    return packs
