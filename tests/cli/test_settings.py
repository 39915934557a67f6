"""Issue 36 items 2 and 3: the settings are resolved once at the entry and passed down (no layer
parses a parameter again), and a multi-rank job runs the engine once and builds one report."""
from types import SimpleNamespace

import pytest

from conftest import FIXTURES, diagnosed

from nsys_expert import config, pipeline
from nsys_expert.engine import RuleSet, evaluate, load_packs, model
from nsys_expert.engine.rules import Rule
from nsys_expert.errors import RuleError
from nsys_expert.facts import FactSet, registry

SYNC = FIXTURES / "sync_bound" / "input"
RANKS = FIXTURES / "ddp_derived_4rank" / "input"


def _count(monkeypatch, owner, name):
    calls = []
    real = getattr(owner, name)

    def counted(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_the_command_line_wins_and_lists_merge(tmp_path):
    (tmp_path / "nsys-expert.toml").write_text(
        'lang = "zh"\nselect = ["sync-bound"]\nskip-iterations = 3\nfail-on = "high"\n'
        '[set]\n"sync-bound.min_idle_pct" = 5\n"gpu-starved.min_idle_pct" = 30\n')
    cfg = config.load(str(tmp_path / "nsys-expert.toml"))
    s = config.resolve(SimpleNamespace(overrides=("sync-bound.min_idle_pct=9",), lang="en"), cfg)
    assert s.lang == "en" and s.select == ("sync-bound",) and s.skip_iterations == 3 and s.fail_on == "high"
    # one value per key: the command line's; the file's other keys stay, before it
    assert s.overrides == ("gpu-starved.min_idle_pct=30", "sync-bound.min_idle_pct=9")
    assert s.file.endswith("nsys-expert.toml")
    bare = config.resolve(None, {})
    assert bare == config.Settings() and bare.lang == "en"
    with pytest.raises(Exception):      # frozen: nothing below the entry changes a setting
        bare.lang = "zh"


def test_each_rules_parameters_are_worked_out_once(monkeypatch):
    """Before, the compiler, evaluate and the resolution each merged a rule's defaults with the
    overrides again (three times for a rule with a finding)."""
    calls = _count(monkeypatch, model.Rule, "param_values")
    res = pipeline.run(pipeline.Request([str(SYNC)], config.Settings(overrides=("sync-bound.min_idle_pct=1",))))
    ids = [c[0].id for c in calls]
    assert len(ids) == len(set(ids)) == len(load_packs()[0].rules)     # each built-in rule once
    sync = next(f for f in res.doc["findings"] if f["rule"] == "sync-bound")
    assert any(e["threshold"] == 1 for e in sync["evidence"])     # the override reached the evidence


def test_a_bad_override_is_a_rule_error():
    with pytest.raises(RuleError, match="no param 'min_sync'"):
        pipeline.run(pipeline.Request([str(SYNC)], config.Settings(overrides=("sync-bound.min_sync=1",))))


def test_a_multi_rank_job_runs_the_engine_once_and_builds_one_report(monkeypatch):
    from nsys_expert import report
    from nsys_expert.engine import durable_adapter

    runs = _count(monkeypatch, durable_adapter.Engine, "run")
    builds = _count(monkeypatch, report, "build")
    doc = pipeline.diagnose(pipeline.Request([str(RANKS)], config.Settings(jobs=1)))
    assert len(runs) == 1 and len(builds) == 1           # before: 5 and 5 (each of 4 ranks, then the job)
    assert [r["rank"] for r in doc["ranks"]] == ["rank0", "rank1", "rank2", "rank3"]
    assert all(r["verdict"]["state"] for r in doc["ranks"]) and all(r["findings"] for r in doc["ranks"])


def _kernel_rule():
    return Rule(id="hot", title={"en": "hot {{ name }}"}, category="compute-bound", severity="high", scope="kernel",
                when={"fact": "time_share_pct", "op": "gt", "value": 50}, message={"en": "m"}, advice={"en": ["do x"]},
                path="hot.yaml")


def _run_rule():
    return Rule(id="idle", title={"en": "idle"}, category="gpu-idle", severity="medium", scope="run",
                when={"fact": "gpu_active_pct", "op": "lt", "value": 60}, message={"en": "m"}, advice={"en": []},
                path="idle.yaml")


def test_ranks_are_evaluated_apart_in_one_run():
    """Each rank's firings stay its own: its run facts, its kernels (found by position among every
    group's facts), its not-evaluated rules; only the job gets advice."""
    rs = RuleSet.of([_kernel_rule(), _run_rule()])
    job = FactSet(run={"gpu_active_pct": 90}, kernels=[{"name": "a", "time_share_pct": 10}])
    r0 = FactSet(run={"gpu_active_pct": 40}, kernels=[{"name": "a", "time_share_pct": 10},
                                                      {"name": "b", "time_share_pct": 70}])
    r1 = FactSet(run={"gpu_active_pct": 95}, kernels=[{"name": "c", "time_share_pct": 80}])
    r2 = FactSet(run={}, kernels=[])                   # nothing to test: both rules not evaluated here
    ins = set(registry.INPUTS)
    ev = evaluate(rs, job, ins, ranks=[("r0", r0, ins), ("r1", r1, ins), ("r2", r2, ins)])
    assert ev.findings == [] and ev.not_evaluated == []
    got = {label: sorted((f["rule"], f["scope"].get("kernel")) for f in e.findings) for label, e in ev.ranks}
    assert got == {"r0": [("hot", "b"), ("idle", None)], "r1": [("hot", "c")], "r2": []}
    r2ev = dict(ev.ranks)["r2"]
    assert {n["rule"] for n in r2ev.not_evaluated} == {"hot", "idle"}
    assert all(f["advice"] is None for _, e in ev.ranks for f in e.findings)
    # the same as evaluating each alone
    for label, fs in (("r0", r0), ("r1", r1)):
        alone = evaluate(rs, fs, ins)
        assert [(f["rule"], f["title"]) for f in alone.findings] == [(f["rule"], f["title"]) for f in dict(ev.ranks)[label].findings]


def test_the_report_says_what_was_changed_from_the_defaults():
    from nsys_expert import report

    plain = diagnosed(SYNC)
    assert plain["settings"] == {"file": None, "packs": [], "select": [], "ignore": [], "parameters": []}
    assert "Settings" not in report.render_markdown(plain)
    doc = pipeline.diagnose(pipeline.Request([str(SYNC)], config.Settings(overrides=("sync-bound.min_idle_pct=1",),
                                                                          ignore=("launch-bound",))))
    assert doc["settings"]["parameters"] == [{"param": "sync-bound.min_idle_pct", "value": 1, "default": 15}]
    assert doc["settings"]["ignore"] == ["launch-bound"]
    md = report.render_markdown(doc)
    assert ("- Settings: left out `launch-bound`; parameters changed `sync-bound.min_idle_pct` = 1 (default 15)\n"
            in md)
    zh = report.render_markdown(pipeline.diagnose(pipeline.Request(
        [str(SYNC)], config.Settings(overrides=("sync-bound.min_idle_pct=1",), lang="zh"))), "zh")
    assert "- 设置：修改过的参数 `sync-bound.min_idle_pct` = 1（默认 15）\n" in zh
