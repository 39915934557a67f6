"""Every rule's fixture cases (facts in -> fires / stays quiet), and the rule base itself."""
import pytest

from nsys_expert.engine import load_packs
from nsys_expert.engine.cases import load_cases, run_case

RULES = [r for p in load_packs() for r in p.rules]
CASES = [(r, c) for r in RULES for c in load_cases(r)]


@pytest.mark.parametrize("rule,case", CASES, ids=[f"{r.id}:{c.get('name')}" for r, c in CASES])
def test_rule_case(rule, case):
    res = run_case(rule, case)
    assert res.ok, res.detail


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_has_a_firing_and_a_quiet_case(rule):
    kinds = {c["expect"] for c in load_cases(rule)}
    assert kinds == {"fire", "quiet"}


def test_builtin_categories_cover_the_playbook():
    cats = {r.category for r in RULES}
    assert {"compute-bound", "memory-bound", "launch-bound", "data-io-bound", "comm-bound", "sync-bound",
            "memcpy-bound"} <= cats


def test_every_rule_has_advice_and_chinese_text():
    for r in RULES:
        assert r.advice.get("en"), r.id
        assert r.message.get("zh") and r.title.get("zh") and r.advice.get("zh"), r.id
