"""Run a rule's fixture cases (``<rule-id>.cases.yaml``): facts in, fires or stays quiet."""
from __future__ import annotations

from dataclasses import dataclass

import yaml

from ..errors import RuleError
from ..facts import FactSet, registry
from . import safe_yaml
from .compiler import RESERVED
from .rules import Rule
from .validate import case_fact_problem, text_problems


@dataclass
class CaseResult:
    rule: str
    name: str
    ok: bool
    detail: str
    warning: bool = False     # an untested rule: a warning, an error only with --strict


def load_cases(rule: Rule) -> list[dict]:
    if not rule.cases_path:
        return []
    try:
        data = safe_yaml.load_file(rule.cases_path) or []
    except yaml.YAMLError as e:
        raise RuleError(f"cases file is not valid YAML ({e})", rule.cases_path) from e
    except UnicodeDecodeError as e:
        raise RuleError(f"cases file is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
                        f"save it as UTF-8", rule.cases_path) from None
    except OSError as e:   # a folder named like a cases file, an unreadable file
        raise RuleError(f"cases file cannot be read ({e.strerror})", rule.cases_path) from None
    if not isinstance(data, list) or not all(isinstance(c, dict) and c.get("expect") in ("fire", "quiet") for c in data):
        raise RuleError("a cases file is a list of {name, facts, [kernels], expect: fire|quiet, [severity]}",
                        rule.cases_path)
    for c in data:
        sets = [c.get("facts") or {}] + list(c.get("kernels") or [])
        if not all(isinstance(s, dict) for s in sets):
            raise RuleError(f"rule {rule.id}: case '{c.get('name', '?')}': facts and each kernel are mappings "
                            "of fact name to value", rule.cases_path)
        bad = sorted({k for s in sets for k in s if str(k) in RESERVED})
        if bad:
            raise RuleError(f"rule {rule.id}: case '{c.get('name', '?')}': '{bad[0]}' is reserved by the rules engine "
                            f"(reserved: {', '.join(sorted(RESERVED))}); no fact has that name", rule.cases_path)
    return data


def run_case(rule: Rule, case: dict, overrides: dict | None = None) -> CaseResult:
    from . import evaluate  # late import: engine/__init__ imports this module's siblings
    from .ruleset import RuleSet

    why = case_fact_problem(rule, case)
    if why:
        return CaseResult(rule.id, case.get("name", "?"), False, why)
    fs = FactSet(run=dict(case.get("facts") or {}), kernels=[dict(k) for k in case.get("kernels") or []])
    for i, k in enumerate(fs.kernels):
        k.setdefault("name", f"kernel{i}")
    ev = evaluate(RuleSet.of([rule], {rule.id: case.get("params", {}), **(overrides or {})}), fs, set(registry.INPUTS))
    hits = [f for f in ev.findings if f.rule == rule.id]
    name = case.get("name", "?")
    if ev.not_evaluated:
        return CaseResult(rule.id, name, False, "not evaluated: " + "; ".join(str(m) for m in ev.not_evaluated[0]["missing"]))
    if case["expect"] == "quiet":
        return CaseResult(rule.id, name, not hits, "stayed quiet" if not hits else f"fired ({hits[0].severity})")
    if not hits:
        return CaseResult(rule.id, name, False, "expected to fire, stayed quiet")
    want = case.get("severity")
    sev = hits[0].rule_severity or hits[0].severity   # the rule's level; the cap by gain is resolve's
    if want and want != sev:
        return CaseResult(rule.id, name, False, f"fired with severity {sev}, expected {want}")
    return CaseResult(rule.id, name, True, f"fired ({sev})")


def run_all(rules: list[Rule], strict: bool = True) -> list[CaseResult]:
    """Every rule's cases. A rule without a cases file is untested: with ``strict`` that fails, else it
    is a warning (the rule is valid; a team pack may add its cases later)."""
    out = []
    for r in rules:
        cases = load_cases(r)
        if not cases:
            out.append(CaseResult(r.id, "(none)", not strict, f"no fixture cases: add {r.id}.cases.yaml beside the rule",
                                  warning=not strict))
            continue
        out += [CaseResult(r.id, "(texts)", False, why) for why in text_problems(r)]
        kinds = {c["expect"] for c in cases}
        for c in cases:
            out.append(run_case(r, c))
        for need in ("fire", "quiet"):
            if need not in kinds:
                out.append(CaseResult(r.id, f"(no {need} case)", False, f"every rule needs at least one '{need}' case"))
    return out
