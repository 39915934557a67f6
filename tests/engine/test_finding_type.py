"""Findings are typed (issue 49, item 1): the engine makes ``engine.model.Finding``, resolve completes
its declared fields and adds none, and the report turns it into the JSON contract's dict in one place.
Its parts are declared too (``Evidence``, ``Support``, ``IdlePhase``): every key of a finding in the
JSON report is a declared field, and nothing after the conversion adds one."""
import dataclasses
import os

import pytest

from conftest import FIXTURES
from nsys_expert import engine, pipeline, report
from nsys_expert.engine import Finding, RuleSet, evaluate
from nsys_expert.engine.model import Evidence, IdlePhase, PathCap, Recoverable, SubjectGain, Support, TooLittleWork
from nsys_expert.engine.rules import Rule
from nsys_expert.facts import FactSet, registry

# the JSON report's finding keys, in order (report.finding_json); * only when set
CONTRACT = ["rule", "category", "severity", "rank", "title", "message", "evidence", "advice", "estimated_gain_pct",
            "gain_basis*", "gain_capped_by*", "estimated_gain_range_pct*", "confidence", "scope", "pack", "references",
            "subject", "subject_share_pct", "cause", "supporting", "phase*", "locations*"]
PARTS = {"evidence": Evidence, "supporting": Support}


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
    rows = report.findings.ordered(ev.findings)                 # noqa: SLF001
    assert [r["rule"] for r in rows] == ["a", "b"] and [r["rank"] for r in rows] == [1, 2]
    assert [dataclasses.asdict(f) for f in ev.findings] == before      # ordering wrote nothing into them
    want = [k.rstrip("*") for k in CONTRACT if not k.endswith("*") or k == "gain_basis*"]
    assert list(rows[0]) == want
    # every field but the rule's own level (the rule cases read it; the report shows the capped one) is in the contract
    assert set(k.rstrip("*") for k in CONTRACT) - {"rank"} == {f.name for f in dataclasses.fields(Finding)} - {"rule_severity"}


def _names(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_the_parts_of_a_finding_are_declared_types():
    rules = [_rule("sys", supersedes=[{"rule": "idle", "when": None, "because": None}], evidence=["gpu_active_pct", "gpu_idle_pct"]), _rule()]
    [f] = _evaluate(rules, {"gpu_active_pct": 40.0, "gpu_idle_pct": 60.0}).findings
    assert [type(e) for e in f.evidence] == [Evidence, Evidence]
    assert (f.evidence[0].fact, f.evidence[0].value, f.evidence[0].threshold, f.evidence[0].op) == ("gpu_active_pct", 40.0, 60, "lt")
    assert f.evidence[1].threshold is None and f.evidence[1].op is None      # named as evidence, not tested
    [s] = f.supporting
    assert isinstance(s, Support) and (s.rule, s.relation) == ("idle", "folded") and isinstance(s.evidence[0], Evidence)
    for part in (f.evidence[0], s):
        with pytest.raises(AttributeError):
            part.rank = 1                   # slots: no attribute the type does not declare
        with pytest.raises(TypeError):
            part["fact"] = "x"              # the mapping view reads only
    assert s["rule"] == "idle" and s.get("because", "-") == "-" and "because" not in s   # read as the report's dict
    row = report.finding_json(f, 1)
    assert list(row["evidence"][0]) == _names(Evidence) and list(row["supporting"][0]) == _names(Support)
    assert row["supporting"][0]["evidence"] == [report.evidence_json(e) for e in s.evidence]


def test_the_idle_phase_is_set_by_resolve():
    run = {"gpu_active_pct": 40.0, "gpu_idle_pct": 60.0, "idle_top_phase": "optimizer",
           "idle_top_phase_names": "Optimizer.step", "idle_top_phase_share_pct": 64.25}
    [f] = _evaluate([_rule(subject="idle")], run).findings
    assert f.phase == IdlePhase("optimizer", "Optimizer.step", 64.2)           # before any report is made
    assert report.finding_json(f, 1)["phase"] == {"phase": "optimizer", "names": "Optimizer.step", "share_pct": 64.2}
    [g] = _evaluate([_rule(subject="kernels")], run).findings
    assert g.phase is None and "phase" not in report.finding_json(g, 1)


def _declared(row: dict) -> None:
    """Every key of a finding's JSON dict, and of its parts, is a declared field, in the declared order."""
    allowed = [k.rstrip("*") for k in CONTRACT]
    assert [k for k in allowed if k in row] == list(row), f"{row['rule']}: keys {list(row)}"
    for key, cls in PARTS.items():
        assert all(list(x) == _names(cls) for x in row[key]), (row["rule"], key)
    for s in row["supporting"]:
        assert all(list(e) == _names(Evidence) for e in s["evidence"])
    if "phase" in row:
        assert list(row["phase"]) == _names(IdlePhase)


@pytest.mark.parametrize("case", ["kineto_dataloader_bound", "checkpoint_spikes_sqlite", "recompile_shapes_sqlite"])
def test_no_stage_adds_a_key_after_the_engine(case, monkeypatch):
    """The whole diagnosis of a real profile: the report's findings are exactly ``finding_json`` of the
    engine's findings (a stage that added a key after the conversion, as the idle phase once was, fails
    here), building the report wrote nothing into the findings, and every key is declared."""
    seen = []
    real = engine.evaluate

    def spy(*a, **kw):
        ev = real(*a, **kw)
        seen.append(ev)
        return ev
    monkeypatch.setattr(engine, "evaluate", spy)
    here = os.getcwd()
    os.chdir(FIXTURES / case)
    try:
        doc = pipeline.diagnose(pipeline.Request(["input"]))
    finally:
        os.chdir(here)
    [ev] = seen
    after = [dataclasses.asdict(f) for f in ev.findings]
    assert doc["findings"] == report.findings.ordered(ev.findings)                  # noqa: SLF001
    assert doc["recoverable"] == report.recoverable_json(ev.recoverable) and doc["recoverable"]["subjects"]
    assert [dataclasses.asdict(f) for f in ev.findings] == after             # converting again changed nothing
    for row in doc["findings"]:
        _declared(row)
    # the cases cover the parts: supporting findings, and (kineto_dataloader_bound) the idle time's phase
    assert any(row["supporting"] for row in doc["findings"]) or any("phase" in row for row in doc["findings"])
    if case == "kineto_dataloader_bound":
        assert [row["rule"] for row in doc["findings"] if "phase" in row] == ["data-io-bound"]


def test_what_the_findings_win_together_is_declared_too():
    """``recoverable`` and ``too_little_work`` cross from the engine as types; the report writes the
    contract's keys in its order, the optional ones only when set."""
    cap = PathCap(15.0, "critical_path_host_pct", 85.0)
    full = Recoverable(15.0, [SubjectGain("idle", 60.0, 19.3, 2)], "replayed", ["sync"], cap)
    assert list(report.recoverable_json(full)) == ["total_pct", "subjects", "basis", "replayed", "critical_path"]
    assert report.recoverable_json(full)["critical_path"] == {"cap_pct": 15.0, "fact": "critical_path_host_pct", "value": 85.0}
    assert report.recoverable_json(full)["subjects"] == [{"subject": "idle", "share_pct": 60.0, "gain_pct": 19.3, "findings": 2}]
    assert list(report.recoverable_json(Recoverable(0.0, []))) == ["total_pct", "subjects"]
    assert report.recoverable_json(None) == {}                  # no rule could run: nothing resolved
    assert report.too_little_work_json(TooLittleWork(0.5, 1.0)) == {"gpu_busy_ms": 0.5, "min_gpu_busy_ms": 1.0}
    ev = _evaluate([_rule()], {"gpu_active_pct": 1.0, "gpu_idle_pct": 99.0, "window_ms": 10.0})
    assert isinstance(ev.recoverable, Recoverable) and ev.too_little_work is None   # no min_gpu_busy_ms in this pack
    with pytest.raises(AttributeError):
        ev.recoverable.total = 1.0
