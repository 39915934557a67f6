"""Findings are typed (issue 49, item 1): the engine makes ``engine.model.Finding``, resolve completes
its declared fields and adds none, and the report turns it into the JSON contract's dict in one place."""
import dataclasses

import pytest

from nsys_expert import report
from nsys_expert.engine import Finding, RuleSet, evaluate
from nsys_expert.engine.rules import Rule
from nsys_expert.facts import FactSet, registry

# the JSON report's finding keys, in order (report.finding_json); * only when set
CONTRACT = ["rule", "category", "severity", "rank", "title", "message", "evidence", "advice", "estimated_gain_pct",
            "gain_basis*", "gain_capped_by*", "estimated_gain_range_pct*", "confidence", "scope", "pack", "references",
            "subject", "subject_share_pct", "cause", "supporting"]


def _rule(rid="idle", scope="run", **kw):
    return Rule(id=rid, title={"en": "t"}, category="gpu-idle", severity="high", scope=scope,
                when={"fact": "gpu_active_pct", "op": "lt", "value": 60}, message={"en": "m {{ gpu_active_pct }}"},
                advice={"en": ["do it"]}, path=f"{rid}.yaml", estimate={"expr": "gpu_idle_pct * 0.5"}, **kw)


def _evaluate(rules, run):
    return evaluate(RuleSet.of(rules), FactSet(run=run), set(registry.INPUTS))


def test_the_engine_makes_findings_resolve_completes():
    ev = _evaluate([_rule()], {"gpu_active_pct": 40.0, "gpu_idle_pct": 60.0})
    [f] = ev.findings
    assert isinstance(f, Finding) and f.rule == "idle" and f.advice == ["do it"]
    # resolve's fields are set, through the same type
    assert (f.subject, f.rule_severity, f.subject_share_pct, f.supporting) == ("run", "high", 100.0, [])
    assert f.estimated_gain_pct == 30.0 and f.gain_basis == "estimated"


def test_no_key_is_added_outside_the_type():
    [f] = _evaluate([_rule()], {"gpu_active_pct": 40.0, "gpu_idle_pct": 60.0}).findings
    with pytest.raises(AttributeError):
        f["rank"] = 1                      # the report's rank is not a finding's field: it orders, never writes
    with pytest.raises(AttributeError):
        f.new_field = 1
    assert f.get("gain_capped_by", "none") == "none" and "gain_capped_by" not in f and "subject" in f
    f["severity"] = "low"                  # a declared field: the mapping view writes it
    assert f.severity == "low"


def test_the_report_makes_the_contract_dict_in_one_place():
    ev = _evaluate([_rule("b"), _rule("a")], {"gpu_active_pct": 40.0, "gpu_idle_pct": 60.0})
    before = [dataclasses.asdict(f) for f in ev.findings]
    rows = report._ordered(ev.findings)                 # noqa: SLF001
    assert [r["rule"] for r in rows] == ["a", "b"] and [r["rank"] for r in rows] == [1, 2]
    assert [dataclasses.asdict(f) for f in ev.findings] == before      # ordering wrote nothing into them
    want = [k.rstrip("*") for k in CONTRACT if not k.endswith("*") or k == "gain_basis*"]
    assert list(rows[0]) == want
    # every field but the rule's own level (the rule cases read it; the report shows the capped one) is in the contract
    assert set(k.rstrip("*") for k in CONTRACT) - {"rank"} == {f.name for f in dataclasses.fields(Finding)} - {"rule_severity"}
