"""nsys-expert diff: resolved / new / persisting findings, key facts, the regression gate."""
import json
import subprocess
import sys

import pytest

from conftest import FIXTURES, SHARED

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
