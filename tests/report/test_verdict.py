"""The verdict is honest: three states, never "no bottleneck" about a GPU it could not judge.

Walks every golden fixture (expected.json / expected.md, checked by hand) and tests the verdict
logic on made-up findings."""
import json

import pytest

from conftest import expected_doc, fixture_cases, FIXTURES
from nsys_expert.engine.missing import NotEvaluated
from nsys_expert.engine.model import Finding
from nsys_expert.notes import Note
from nsys_expert.report import LABELS, verdict
from nsys_expert.scenarios.next_steps import NextStep

NONE_FOUND = LABELS["en"]["none_found"]


@pytest.mark.parametrize("case", fixture_cases())
def test_golden_verdicts_are_honest(case):
    doc = expected_doc(case)
    md = (FIXTURES / case / "expected.md").read_text(encoding="utf-8")
    v = doc["verdict"]
    assert v["state"] in ("diagnosed", "likely", "undetermined")
    active = doc["facts"].get("gpu_active_pct", doc["facts"].get("gpu_active_est_pct"))
    says_healthy = v["rule"] is None and v["state"] == "diagnosed"
    if says_healthy:
        # no system-level rule left out, GPU activity measured and high
        assert not v["system_rules_not_evaluated"], case
        assert "gpu_active_pct" in doc["facts"] and doc["facts"]["gpu_active_pct"] >= verdict.MIN_ACTIVE_PCT, case
        assert NONE_FOUND in md or LABELS["en"]["compute_ok"] in md   # at the compute roof: said so (issue 35)
    else:
        assert NONE_FOUND not in md.split("## 1.")[0], case
    if active is not None and active < verdict.MIN_ACTIVE_PCT:
        assert not says_healthy, case
    if v["rule"]:
        top = next(f for f in doc["findings"] if f["rule"] == v["rule"])
        # a verdict resting on the summary tier says so
        assert (v["state"] == "likely") == (top["confidence"] == "likely"), case
    if v["state"] != "diagnosed" and "## Next steps" in md and "```" in md.split("## Next steps")[1].split("\n## ")[0]:
        # (an AMD trace's steps are words only: no NVIDIA tool's command applies)
        assert v["next_command"], case       # the export that would decide it, printed
        assert v["next_command"] in md
    elif v["state"] != "diagnosed":          # nothing to collect (e.g. a window with no kernels): no command, and says why
        assert v["next_command"] is None and (v["system_rules_not_evaluated"] or doc["too_little_work"]), case


def _f(rule, cat, sev, conf="measured"):
    return Finding(rule, cat, sev, rule, "", [], None, None, conf, {}, "builtin", [])


def _ne(rule, cat, scope):
    return NotEvaluated(rule, cat, scope, "medium")


def test_states():
    steps = [NextStep(Note("step.need_reports", {"reports": ("cuda_api_trace",)}), Note("step.why_export"), ["host-bound"],
                      ["nsys stats --report cuda_api_trace --format csv --output p p.nsys-rep"])]
    busy = {"gpu_active_pct": 99.0}
    assert verdict.decide([], [], busy, steps).state == "diagnosed"
    # a system rule not evaluated: the busy GPU is only "likely" healthy, and the export is named
    v = verdict.decide([], [_ne("host-bound", "host-bound", "run")], busy, steps)
    assert (v.state, v.reason) == ("likely", "no_finding_partial") and v.next_command.startswith("nsys stats")
    # a kernel rule not evaluated does not count against the system-level verdict
    assert verdict.decide([], [_ne("tail-effect", "launch-config", "kernel")], busy, steps).state == "diagnosed"
    # idle GPU and no finding: undetermined, never healthy
    assert verdict.decide([], [], {"gpu_active_pct": 4.4}, steps).reason == "idle_unexplained"
    assert verdict.decide([], [], {"gpu_active_est_pct": 100.0}, steps).state == "likely"
    assert verdict.decide([], [], {}, steps).reason == "utilization_unknown"
    # a finding on summaries: likely; measured: diagnosed; low severity is not a verdict
    assert verdict.decide([_f("sync-bound", "sync-bound", "high", "likely")], [], {}, steps).state == "likely"
    assert verdict.decide([_f("sync-bound", "sync-bound", "high")], [], busy, steps).state == "diagnosed"
    assert verdict.decide([_f("sync-bound", "sync-bound", "low", "likely")], [], {}, steps).state == "undetermined"
    # without the GPU utilization a precision finding is no verdict; with it, it is
    prec = [_f("fp32-gemm-without-tensor-cores", "precision", "medium", "likely")]
    assert verdict.decide(prec, [], {}, steps).state == "undetermined"
    assert verdict.decide(prec, [], busy, steps).rule == "fp32-gemm-without-tensor-cores"


def test_an_idle_gpu_whose_gaps_have_causes_is_not_unexplained():
    """cpu_side_math: the GPU idles 91.5 % after syncs while the host computes; removing the syncs wins
    2.8 % (the host's wait), so no finding is strong, but the idle time is not 'unexplained'."""
    doc = expected_doc("cpu_side_math")
    v = doc["verdict"]
    # issue 46: the cause is named now: a 64 MB read-back every step for CPU math (step-readback)
    assert (v["state"], v["rule"]) == ("diagnosed", "step-readback")
    assert doc["facts"]["gpu_active_pct"] < 10
    md = (FIXTURES / "cpu_side_math" / "expected.md").read_text(encoding="utf-8")
    assert "no rule names a cause" not in md


def test_a_title_many_findings_share_is_said_once_with_the_count():
    """Issue 56, item 11: an undetermined verdict listed "Latency-bound kernel ..." twelve times (one per kernel)."""
    from types import SimpleNamespace as NS

    from nsys_expert.report.diagnosis import Verdict
    lat = [NS(rule="latency-bound", title="Latency-bound kernel", severity="medium", category="latency") for _ in range(12)]
    d = NS(verdict=Verdict(state="undetermined", reason="utilization_unknown"), too_little_work=None,
           findings=lat + [NS(rule="x", title="Other", severity="low", category="c")])
    text = verdict.words(d, LABELS["en"], lambda s: s)["text"]
    assert text.count("Latency-bound kernel") == 1 and "Latency-bound kernel (medium) × 12; Other (low)." in text
