"""Prescriptions that name the change in the user's code (issue 46), on real profiles: the checkpoint
pauses, the per-step read-back, the optimizer phase, the steady state without NVTX, and `diff` putting
what a finding promised beside what the change measured. The numbers were checked by hand against the
fixtures' READMEs (checkpoint_spikes: every 10th step copies 1 GiB; cpu_side_math: 64 MB read back each
step for CPU math; kineto_hta_ddp_v100: HTA's DDP trace, SGD over ResNet parameters)."""
import json

import polars as pl
import pytest

from conftest import expected_doc, FIXTURES, diagnosed
from nsys_expert import diff
from nsys_expert.diff import render
from nsys_expert.facts import period


def _doc(case):
    return expected_doc(case)


def _finding(doc, rule):
    return next(f for f in doc["findings"] if f["rule"] == rule)


@pytest.mark.parametrize("case", ["checkpoint_spikes_sqlite"])
def test_periodic_weight_copies_are_a_checkpoint(case):
    doc = _doc(case)
    top = doc["findings"][0]
    f = doc["facts"]
    assert top["rule"] == "checkpoint-pauses" and top["severity"] == "high"
    assert f["pause_every_iters"] == 10 and f["pause_count"] == 6
    assert f["pause_d2h_mb"] == pytest.approx(1073.7, abs=1)          # the 8 bf16 8192^2 weights, 1 GiB
    folded = {s["rule"] for s in top["supporting"]}
    assert {"memcpy-bound", "iteration-jitter"} <= folded              # one story: the checkpoint
    assert "checkpoint" in top["message"] and "Every 10 steps" in top["message"]


@pytest.mark.parametrize("case", ["cpu_side_math", "cpu_side_math_sqlite"])
def test_a_per_step_read_back_for_host_math_is_named(case):
    doc = _doc(case)
    top = doc["findings"][0]
    assert top["rule"] == "step-readback"
    assert doc["facts"]["step_d2h_mb_per_iter"] == pytest.approx(67.1, abs=0.1)   # the 4096^2 fp32 result
    assert top["estimated_gain_pct"] > 80                                         # the GPU waits ~91 % of the window


@pytest.mark.parametrize("case", ["memcpy_bound", "memcpy_bound_sqlite"])
def test_copies_that_are_the_cost_stay_memcpy_bound(case):
    """memcpy_bound reads 256 MB back each step, but the copy itself is the time (pinned copies measured
    -95.5 %): no second finding promising the same time under another name."""
    doc = _doc(case)
    assert doc["findings"][0]["rule"] == "memcpy-bound"
    assert "step-readback" not in {f["rule"] for f in doc["findings"]}
    assert doc["facts"]["step_d2h_copy_share_of_exposed_pct"] > 60


def test_an_unfused_optimizer_is_named_with_its_own_gain():
    doc = _doc("kineto_hta_ddp_v100")
    f = _finding(doc, "optimizer-unfused")
    assert "Optimizer.step#SGD.step" in f["message"]
    assert doc["facts"]["optimizer_phase_kernels_per_iter"] == 808
    assert f["estimated_gain_pct"] == pytest.approx(doc["facts"]["optimizer_fused_gain_pct"], abs=0.1)
    # the fused optimizer of the CNN trace: nothing promised
    assert "optimizer-unfused" not in {x["rule"] for x in _doc("kineto_hta_cnn_1rank")["findings"]}
    assert _doc("kineto_hta_cnn_1rank")["facts"]["optimizer_phase_fused_kernel_share_pct"] == 100


def test_optimizer_advice_names_fused_true():
    doc = diagnosed(FIXTURES / "kineto_hta_ddp_v100" / "input")
    f = _finding(doc, "optimizer-unfused")
    text = json.dumps(f, ensure_ascii=False)
    assert "fused=True" in text


def test_channels_last_run_has_no_layout_finding():
    doc = _doc("conv_pdl_sqlite")
    assert doc["facts"]["layout_convert_share_of_kernel_pct"] < 3
    assert "layout-conversion" not in {f["rule"] for f in doc["findings"]}


@pytest.mark.parametrize("case", ["busy_no_nvtx", "busy_no_nvtx_sqlite"])
def test_steady_state_without_nvtx_from_the_kernel_period(case):
    w = _doc(case)["window"]
    assert "repeat every" in w["reason"] and w["source"] == "trace"


def test_period_detection_leaves_out_start_up():
    """A synthetic trace: 20 start-up kernels of other names, then 30 iterations of the same 5 kernels;
    the window starts at the second iteration."""
    names = [f"warm{i}" for i in range(20)] + ["a", "b", "c", "d", "e"] * 30
    n = len(names)
    gpu = pl.DataFrame({"start_ns": [i * 1000 for i in range(n)], "end_ns": [i * 1000 + 500 for i in range(n)],
                        "name": names, "kind": ["kernel"] * n})
    start, why, d = period.periodic_start(gpu)
    assert d == 5 and start == (20 + 5) * 1000 and "every 5 kernels" in str(why)
    assert period.periodic_start(gpu.head(30)) is None      # too few kernels to tell


def test_diff_puts_the_promise_beside_the_measured_gain():
    before, after = _doc("pair_sync_bound_sqlite"), _doc("pair_sync_bound_fixed_sqlite")
    p = diff.promises(before, after)
    rows = {r["rule"]: r for r in p["rows"]}
    assert rows["sync-bound"]["applied"] and rows["sync-bound"]["came_true"]
    assert not rows["fp32-gemm-without-tensor-cores"]["applied"]
    assert 5 < p["measured_gain_pct"] < 20
    assert "came true" in " ".join(render._promise_lines(p))


def test_an_idle_finding_names_the_phase_that_holds_the_idle_time():
    from conftest import finding
    from nsys_expert import report
    from nsys_expert.engine import resolve
    findings = [finding(rule="launch-bound", subject="idle"), finding(rule="memory-bound", subject="kernels")]
    run = {"idle_top_phase": "optimizer", "idle_top_phase_names": "optimizer", "idle_top_phase_share_pct": 64.2}
    resolve.place_idle(findings, run)          # resolve's last step: a declared field, before the report
    assert report.finding_json(findings[0], 1)["phase"] == {"phase": "optimizer", "names": "optimizer", "share_pct": 64.2}
    assert findings[1].phase is None and "phase" not in report.finding_json(findings[1], 2)
    quiet = [finding(rule="launch-bound", subject="idle")]
    resolve.place_idle(quiet, dict(run, idle_top_phase_share_pct=11.5))   # HTA DDP V100: no phase holds most
    assert quiet[0].phase is None
    doc = _doc("kineto_hta_ddp_v100")
    assert doc["facts"]["idle_top_phase"] == "optimizer"


@pytest.mark.parametrize("case,rule", [("hf_llama", "eager-compile"), ("optimizer", "optimizer-unfused"),
                                       ("checkpoint", "checkpoint-pauses"), ("resnet_layout", "layout-conversion")])
def test_diff_names_the_change_made_on_the_measured_pairs(case, rule):
    p = diff.promises(_doc(f"pair_{case}_sqlite"), _doc(f"pair_{case}_fixed_sqlite"))
    applied = [r for r in p["rows"] if r["applied"]]
    assert [r["rule"] for r in applied] == [rule] and applied[0]["came_true"], p


def test_a_folded_unexplained_idle_finding_lends_no_severity():
    """conv_pdl's CSVs (no API trace): 51 % of the window idle and unexplained (gpu-starved, high) is folded
    into launch-bound, which keeps its own level, medium, as from the same run's SQLite (launch gaps 38 %)."""
    csv, sqlite = _doc("conv_pdl"), _doc("conv_pdl_sqlite")
    top = csv["findings"][0]
    assert (top["rule"], top["severity"]) == ("launch-bound", "medium") == \
        (sqlite["findings"][0]["rule"], sqlite["findings"][0]["severity"])
    assert "gpu-starved" in {s["rule"] for s in top["supporting"]}
