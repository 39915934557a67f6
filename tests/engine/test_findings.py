"""Over every golden fixture (issue 17's "done when", issue 16 item 3): one finding per subject and cause;
gains within their subject's share and a total within 100 %; no "nothing to fix" finding with a gain;
no severity above what the gain allows; no advice the facts contradict (ncu given, copies pinned,
NCCL's own copies, library kernels)."""
import json

import pytest

from conftest import expected_doc, fixture_cases, FIXTURES
from nsys_expert import engine
from nsys_expert.engine import resolve
from nsys_expert.engine.rules import SEVERITIES

PACKS = engine.load_packs(installed=False)
RULES = {r.id: r for p in PACKS for r in p.rules}
PARAMS = PACKS[0].params


def _load(case):
    doc = expected_doc(case)
    md = (FIXTURES / case / "expected.md").read_text(encoding="utf-8")
    return doc, md


def _advice(md: str) -> str:
    return md.split("Optimization advice by priority", 1)[1].split("\n## ", 1)[0] if "Optimization advice" in md else ""


@pytest.mark.parametrize("case", fixture_cases())
def test_findings_add_up(case):
    doc, md = _load(case)
    fs = doc["findings"]
    keys = [(f["subject"], f["cause"]) for f in fs]
    assert len(keys) == len(set(keys)), (case, keys)
    for f in fs:
        g, share = f["estimated_gain_pct"], f["subject_share_pct"]
        rule = RULES[f["rule"]]
        if not rule.actionable:
            assert g is None, (case, f["rule"], "says nothing to fix but claims a gain")
        if g is not None:
            assert g <= share + 0.05, (case, f["rule"], g, share)
            allowed = resolve.allowed_severity(g, PARAMS)
            assert SEVERITIES.index(f["severity"]) <= SEVERITIES.index(allowed), (case, f["rule"], f["severity"], g)
        if doc["too_little_work"]:
            assert SEVERITIES.index(f["severity"]) <= SEVERITIES.index("low"), (case, f["rule"])
    rec = doc["recoverable"]
    gains = [f["estimated_gain_pct"] for f in fs if f["estimated_gain_pct"] is not None]
    assert rec["total_pct"] <= 100.0
    if gains:
        assert max(gains) - 0.1 <= rec["total_pct"] <= sum(gains) + 0.1, (case, rec, gains)
        assert "Total recoverable time" in md or rec["total_pct"] == 0, case   # nothing to win: no total line
    for s in rec["subjects"]:
        assert s["gain_pct"] <= s["share_pct"] + 0.05, (case, s)
    # every kernel finding keeps its subject: each kernel counted once
    kernels = [f["scope"].get("kernel") for f in fs if f["scope"].get("kernel")]
    assert len(kernels) == len(set(kernels)) or len({f["rule"] for f in fs if f["scope"].get("kernel")}) > 1


@pytest.mark.parametrize("case", fixture_cases())
def test_no_advice_the_facts_contradict(case):
    doc, md = _load(case)
    facts, advice = doc["facts"], _advice(md)
    held = {report for _path, report, _v, _rows in doc["inputs"]}
    if "ncu details page" in held:
        assert "Confirm with Nsight Compute" not in advice and "**Nsight Compute metrics**" not in md, case
    pageable = facts.get("memcpy_pageable_share_pct")
    if pageable is not None and pageable < 10:
        assert "Allocate host buffers pinned" not in advice and "Pin the host buffers" not in advice, case
    if (facts.get("nccl_api_calls") or 0) >= 1 and facts.get("nccl_kernel_count") == 0:
        assert ".clone()" not in advice, case
    cond = PACKS[0].conditions["library-kernel"]
    kernel_findings = [f for f in doc["findings"] if f["scope"].get("kernel")] + \
        [s for f in doc["findings"] for s in f["supporting"] if s["scope"].get("kernel")]
    if kernel_findings and all(engine.conditions.holds(cond, {"name": f["scope"]["kernel"]}) for f in kernel_findings):
        for user_only in ("__launch_bounds__", "-maxrregcount", "Pad shared-memory arrays", "index by threadIdx.x"):
            assert user_only not in advice, (case, user_only)


def test_the_shared_cases_fold_into_one_finding_per_cause():
    """The three cases of issue 17, with their Nsight Compute data: what repeated before is one finding now."""
    doc, md = _load("memory_bound_ncu")
    # the measured kernel finding leads: the three kernels, ncu's own suggestions and the name-based system finding fold in
    assert [f["rule"] for f in doc["findings"]] == ["kernel-memory-bound", "slow-first-iteration"]
    support = [(s["rule"], s["relation"]) for s in doc["findings"][0]["supporting"]]
    assert support.count(("kernel-memory-bound", "also")) == 2 and support.count(("ncu-guided-analysis", "folded")) == 3
    assert ("memory-bound", "folded") in support
    assert doc["recoverable"]["total_pct"] == doc["findings"][0]["estimated_gain_pct"] == 74.4   # each step's 4-pass run fused into its longest pass (docs/gains.md; the fix measured 74.8 %)
    assert "and 2 more kernel(s)" in md
    doc, md = _load("sync_bound_ncu")
    rules = [f["rule"] for f in doc["findings"]]
    assert rules == ["sync-bound", "tensor-cores-unused", "slow-first-iteration"]
    support = {s["rule"]: s["relation"] for s in doc["findings"][1]["supporting"]}
    assert support == {"fp32-gemm-without-tensor-cores": "folded", "kernel-compute-bound": "refuted", "bank-conflicts": "folded",
                       "ncu-guided-analysis": "folded"}
    # replayed: with the syncs and the host's 2 ms left, the faster GEMM gives 9.3 % (medium)
    assert doc["findings"][1]["severity"] == "medium" and doc["findings"][1]["estimated_gain_pct"] == 9.3
    assert "nothing to fix" not in md.lower().split("## 8.")[1]
    assert md.split("## 8.")[1].count("Allow TF32") == 1          # one TF32 advice, not one per rule
    doc, md = _load("nccl_single")
    assert "dtod-copies" not in [f["rule"] for f in doc["findings"]]
    first = doc["findings"][0]
    assert first["rule"] == "nccl-single-rank" and first["estimated_gain_pct"] is None
    assert [(s["rule"], s["relation"]) for s in first["supporting"]] == [("dtod-copies", "refuted")]
    assert "NCCL's own" in md


def test_too_little_work_is_said_and_caps_severity():
    doc, md = _load("cupy_nsys2020_sqlite")
    assert doc["too_little_work"]["gpu_busy_ms"] < 0.1
    assert all(f["severity"] in ("info", "low") for f in doc["findings"])
    assert md.splitlines()[2].startswith("**Verdict (undetermined):** Too little GPU work in the window to judge")
    assert doc["verdict"]["state"] == "undetermined"
