"""nsys-expert diff: resolved / new / persisting findings, key facts, the regression gate."""
import json
import re
import subprocess
import sys

import pytest

from conftest import expected_doc, FIXTURES, SHARED

try:
    import nsys_expert.load.sqlite  # noqa: F401
    HAVE_SQLITE = (SHARED / "cases").is_dir()
except ImportError:
    HAVE_SQLITE = False
needs_sqlite = pytest.mark.skipif(not HAVE_SQLITE, reason="needs ../shared/cases and the SQLite loader")

NSX = [sys.executable, "-m", "nsys_expert"]


def run(*args):
    return subprocess.run(NSX + [str(a) for a in args], capture_output=True, text=True)


@pytest.mark.slow
@needs_sqlite
def test_graphs_resolve_launch_bound():
    """The shared cases hold the SQLite export, whose graph trace shows the graph work."""
    p = run("diff", SHARED / "cases" / "launch_bound", SHARED / "cases" / "launch_bound_graphed", "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {"resolved", "new", "persisting", "facts"} <= set(d)
    assert "launch-bound" in [f["rule"] for f in d["resolved"]]
    assert d["new"] == [] and d["verdict"] == "improved"


@pytest.mark.slow
@needs_sqlite
def test_reverse_trips_the_gate():
    p = run("diff", SHARED / "cases" / "launch_bound_graphed", SHARED / "cases" / "launch_bound",
            "--fail-on-regression", "5", "--format", "json")
    assert p.returncode == 1
    d = json.loads(p.stdout)
    assert "launch-bound" in [f["rule"] for f in d["new"]] and d["gate"]["tripped"]
    assert "new high finding: launch-bound" in d["regressions"]


def test_graph_work_unseen_is_not_comparable_not_resolved():
    """CSVs only: the graph kernels are not in cuda_gpu_trace, so launch-bound cannot be judged after."""
    p = run("diff", FIXTURES / "launch_bound" / "input", FIXTURES / "launch_bound_graphed" / "input", "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["resolved"] == [] and "launch-bound" in [f["rule"] for f in d["not_comparable"]]
    assert any("GPU utilization is known before but not after" in n for n in d["comparability"])


@pytest.mark.slow
def test_same_run_is_unchanged_and_passes_the_gate(tmp_path):
    report = tmp_path / "base.json"
    p = run("diagnose", FIXTURES / "sync_bound" / "input", "--format", "json", "-o", report)
    assert p.returncode == 0
    p = run("diff", report, FIXTURES / "sync_bound" / "input", "--fail-on-regression", "1", "--format", "json")
    assert p.returncode == 0, p.stdout
    d = json.loads(p.stdout)
    assert d["verdict"] == "unchanged" and not d["resolved"] and not d["new"]
    assert all(r["change"] in (0, None) for r in d["facts"])
    assert all(f["severity_change"] == 0 for f in d["persisting"])


@pytest.mark.slow
def test_key_fact_regression_in_points(tmp_path):
    base = json.loads(run("diagnose", FIXTURES / "healthy" / "input", "--format", "json").stdout)
    worse = json.loads(json.dumps(base))
    worse["facts"]["gpu_active_pct"] = base["facts"]["gpu_active_pct"] - 7.0
    (tmp_path / "a.json").write_text(json.dumps(base))
    (tmp_path / "b.json").write_text(json.dumps(worse))
    assert run("diff", tmp_path / "a.json", tmp_path / "b.json", "--fail-on-regression", "5").returncode == 1
    assert run("diff", tmp_path / "a.json", tmp_path / "b.json", "--fail-on-regression", "10").returncode == 0
    md = run("diff", tmp_path / "a.json", tmp_path / "b.json").stdout
    assert "| `gpu_active_pct` |" in md and "worse" in md


def test_not_a_report_is_exit_2(tmp_path):
    (tmp_path / "x.json").write_text("{\"hello\": 1}")
    p = run("diff", tmp_path / "x.json", FIXTURES / "sync_bound" / "input")
    assert p.returncode == 2 and "not an nsys-expert JSON report" in p.stderr


def _pairs():
    """Every measured before / after pair among the fixtures (pair_X and pair_X_fixed, CSV or SQLite) whose fix
    was measured to gain (a pair whose README measured no gain, pair_cudnn_bench: -0.4 %, is a quiet case)."""
    out = []
    for d in sorted(FIXTURES.glob("pair_*")):
        name = d.name
        fixed = name[:-len("_sqlite")] + "_fixed_sqlite" if name.endswith("_sqlite") else name + "_fixed"
        readme = (d / "README.md").read_text() if (d / "README.md").is_file() else ""
        gained = re.search(r"the fix gained (-?[\d.]+) %", readme)
        if gained and float(gained.group(1)) < 5:
            continue
        if "_fixed" not in name and (FIXTURES / fixed / "expected.json").is_file():
            out.append((name, fixed))
    return out


def _golden(case):
    """A fixture's golden as diff reads a report (the golden keeps the not-evaluated rules' names
    and the inputs' rows only)."""
    doc = expected_doc(case)
    return dict(doc, not_evaluated=[{"rule": r} for r in doc["not_evaluated"]],
                inputs=[{"path": i[0]} for i in doc["inputs"]])


@pytest.mark.parametrize("before,after", _pairs())
def test_a_faster_step_is_improved_and_a_slower_one_regressed(before, after):
    """Issue 56, item 1: ResNet-50 60.1 -> 34.3 ms a step and the fp32 GEMM 11.1 -> 1.5 ms were headed
    "regressed" (the faster step left the GPU idle a larger share); swapped, "improved" beside a tripped gate.
    The headline follows the time per step, the gate agrees with it."""
    from nsys_expert import diff
    b, a = _golden(before), _golden(after)
    d = diff.compare(b, a, fail_pct=5)
    assert d["verdict"] == "improved" and d["verdict_basis"]["by"] == "step_time", d["verdict_basis"]
    assert d["verdict_basis"]["change_pct"] <= -diff.STEP_NOISE_PCT
    r = diff.compare(a, b, fail_pct=5)
    assert r["verdict"] == "regressed" and r["gate"]["tripped"], r["verdict_basis"]
    assert len(_pairs()) >= 20
    # a share of the window that fell while each step got faster does not trip the gate (pair_conv_nchw: 47.1 %
    # faster, gpu_active_pct 96.0 -> 82.8 tripped it); it is said as not gated
    assert not [x for x in d["regressions"] if re.match(r"\w+_pct: ", x)], d["regressions"]
    assert all(re.match(r"\w+_pct: ", x) for x in d["gate"].get("not_gated", []))


def test_a_share_that_fell_on_a_faster_step_is_said_not_gated():
    from nsys_expert import diff
    from nsys_expert.diff import render
    d = diff.compare(_golden("pair_conv_nchw_sqlite"), _golden("pair_conv_nchw_fixed_sqlite"), fail_pct=5)
    assert d["verdict"] == "improved" and not d["gate"]["tripped"], d["regressions"]
    assert [x.split(":")[0] for x in d["gate"]["not_gated"]] == ["gpu_active_pct", "kernel_active_pct", "gpu_idle_pct"]
    assert "not gated (a share of a shorter step, each step faster): gpu_active_pct: 95.9621 -> 82.84" in \
        render.render_markdown(d)


def test_a_finding_folded_into_another_before_is_not_new():
    """Issue 56, item 1: the fused optimizer's run (48.7 -> 28.0 ms a step) was "improved" with the gate tripped
    by a "new high finding: launch-bound", which the unfused run had, folded into optimizer-unfused."""
    from nsys_expert import diff
    from nsys_expert.diff import render
    b, a = _golden("kineto_optimizer"), _golden("kineto_optimizer_fixed")
    d = diff.compare(b, a, fail_pct=5)
    assert d["verdict"] == "improved" and d["new"] == [] and not d["gate"]["tripped"], d["regressions"]
    assert [f["rule"] for f in d["resolved"]] == ["optimizer-unfused"]
    assert [(f["rule"], f["inside_before"]) for f in d["persisting"]] == [("launch-bound", "optimizer-unfused")]
    assert "`launch-bound` (launch-bound, high; before, part of `optimizer-unfused`)" in render.render_markdown(d)
    r = diff.compare(a, b, fail_pct=5)     # swapped: launch-bound is now inside optimizer-unfused, not resolved
    assert r["resolved"] == [] and [(f["rule"], f["inside_after"]) for f in r["persisting"]] == \
        [("launch-bound", "optimizer-unfused")]
    assert not any(x["applied"] for x in r["promises"]["rows"]), r["promises"]["rows"]
    assert r["regressions"][-1] == "new high finding: optimizer-unfused"


def test_without_a_time_per_step_the_verdict_counts_what_moved():
    from nsys_expert import diff
    b = {"facts": {"gpu_active_pct": 50.0}, "findings": []}
    a = {"facts": {"gpu_active_pct": 60.0}, "findings": []}
    d = diff.compare(b, a)
    assert d["verdict"] == "improved" and d["verdict_basis"] == {"by": "counts", "better": 1, "worse": 0}
    assert diff.compare(a, b)["verdict"] == "regressed"


def test_a_step_within_the_noise_is_unchanged_and_a_slower_one_trips_the_gate():
    from nsys_expert import diff
    from nsys_expert.diff import render
    b = {"facts": {"window_ms": 100.0, "iter_count": 10, "gpu_active_pct": 80.0}, "findings": []}
    same = {"facts": {"window_ms": 101.0, "iter_count": 10, "gpu_active_pct": 90.0}, "findings": []}
    assert diff.compare(b, same)["verdict"] == "unchanged"
    slow = {"facts": {"window_ms": 150.0, "iter_count": 10, "gpu_active_pct": 90.0}, "findings": []}
    d = diff.compare(b, slow, fail_pct=20)
    assert d["verdict"] == "regressed" and d["gate"]["tripped"]
    assert d["regressions"][0] == "time per step: 10 -> 15 ms (50.0 % > 20)"
    assert "**Verdict:** regressed (time per step 10 → 15 ms, 50.0 % slower" in render.render_markdown(d)


@pytest.mark.parametrize("before,after,main", [("pair_dataloader_bound", "pair_dataloader_bound_fixed", "host-bound"),
                                               ("pair_loader_between_sqlite", "pair_loader_between_fixed_sqlite",
                                                "loader-between-steps")])
def test_one_change_that_fixes_two_findings_credits_both(before, after, main):
    """Issue 56, item 2: DataLoader workers with pinned buffers end the host / between-steps idle and the
    pageable copies; the 1.6 % pageable-copy finding took the credit ("did not come true: 49 points off")
    because its evidence fell 100 % and the 53 % finding's 99.8 %."""
    from nsys_expert import diff
    from nsys_expert.diff import render
    p = diff.promises(_golden(before), _golden(after))
    applied = {r["rule"]: r for r in p["rows"] if r["applied"]}
    assert set(applied) == {main, "pageable-memcpy"} and all(r["came_true"] for r in applied.values())
    assert abs(p["applied_promised_pct"] - p["measured_gain_pct"]) <= diff.CAME_TRUE_POINTS
    assert p["applied_promised_pct"] < applied[main]["promised_pct"] + applied["pageable-memcpy"]["promised_pct"]
    text = " ".join(render._promise_lines(p))
    assert "not the change made" not in text and "promised together" in text and "did not come true" not in text
