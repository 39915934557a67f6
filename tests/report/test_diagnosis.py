"""The diagnosis between the engine and the renderers is declared types (issue 59, item 1): the verdict with
a reason code, the limiter, the rules not evaluated, the next steps (their need and why Notes), the ranked
findings; the JSON contract is written from it alone."""
import json

import pytest

from conftest import FIXTURES, diagnosed
from nsys_expert import report
from nsys_expert.engine.missing import NotEvaluated
from nsys_expert.engine.model import Finding
from nsys_expert.notes import Note
from nsys_expert.report.diagnosis import Diagnosis, Limiter, Ranked, Verdict, json_doc
from nsys_expert.scenarios.next_steps import NextStep


@pytest.mark.parametrize("case", ["sync_bound", "launch_bound_summaries"])
def test_the_renderers_are_handed_declared_types(case):
    d = diagnosed(FIXTURES / case / "input")
    assert isinstance(d, Diagnosis) and isinstance(d.verdict, Verdict)
    assert all(isinstance(x, Ranked) and isinstance(x.finding, Finding) for x in d.findings)
    assert [x.rank for x in d.findings] == list(range(1, len(d.findings) + 1))
    assert all(isinstance(n, NotEvaluated) for n in d.not_evaluated)
    assert all(isinstance(s, NextStep) and isinstance(s.need, Note) and isinstance(s.why, Note) for s in d.next_steps)
    # the JSON contract comes from the Diagnosis alone, and its mapping view is that document
    doc = json.loads(report.to_json(d))
    assert doc == json.loads(json.dumps(json_doc(d), default=str))
    assert doc["verdict"]["state"] == d["verdict"]["state"] == d.verdict.state
    assert [s["need"] for s in doc["next_steps"]] == [str(s.need) for s in d.next_steps]


def test_the_limiter_is_a_declared_part_of_the_verdict():
    d = diagnosed(FIXTURES / "sync_bound" / "input")
    assert isinstance(d.verdict.limiter, Limiter) and d.verdict.limiter.side == "host"
    assert d.next_steps[-1].limiter and d.next_steps[-1].need.code == "step.need_host_profile"
    assert d["verdict"]["limiter"]["critical_path_host_pct"] == d.verdict.limiter.critical_path_host_pct


def test_a_next_step_says_its_need_and_why_in_the_report_language():
    d = diagnosed(FIXTURES / "launch_bound_summaries" / "input")
    zh = report.localized(d, "zh")["next_steps"]
    assert zh and all(s["need"] and s["why"] != str(st.why) for s, st in zip(zh, d.next_steps))
