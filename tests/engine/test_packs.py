"""Custom rule packs: the user's first rule, validation errors (one line, exit 2), commands, settings."""
import json
import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, ROOT

NSX = [sys.executable, "-m", "nsys_expert"]
TEAM = ROOT / "examples" / "team-pack"
GOOD_RULE = (TEAM / "rules" / "team-min-gpu-util.yaml").read_text()


def nsx(*args, cwd=None):
    return subprocess.run(NSX + [str(a) for a in args], capture_output=True, text=True, cwd=cwd)


def make_pack(tmp_path, text, name="r.yaml", pack_yaml="name: bad\nversion: '1'\n"):
    pack = tmp_path / "pack"
    (pack / "rules").mkdir(parents=True)
    (pack / "pack.yaml").write_text(pack_yaml)
    (pack / "rules" / name).write_text(text)
    return pack


@pytest.mark.slow
def test_first_rule_fires_and_is_silenced():
    case = FIXTURES / "launch_bound" / "input"
    p = nsx("diagnose", case, "--rules", TEAM, "--format", "json")
    assert p.returncode == 0, p.stderr
    f = [x for x in json.loads(p.stdout)["findings"] if x["rule"] == "team-min-gpu-util"]
    assert f and f[0]["severity"] == "high" and f[0]["message"] == "GPU active 4.7 % is below the team floor of 90 %."
    p = nsx("diagnose", case, "--rules", TEAM, "--format", "json", "--set", "team-min-gpu-util.floor=1")
    assert "team-min-gpu-util" not in [x["rule"] for x in json.loads(p.stdout)["findings"]]


@pytest.mark.parametrize("text,expect", [
    (GOOD_RULE.replace("gpu_active_pct, op", "gpu_activ_pct, op"), "unknown fact 'gpu_activ_pct'"),
    # (the slow ones: a process each, 0.5-0.6 s, issue 56, item 14)
    pytest.param(GOOD_RULE.replace("op: lt", "op: less"), "unknown operator 'less'", marks=pytest.mark.slow),
    pytest.param(GOOD_RULE.replace("value: $floor", "value: $flor"), "'$flor' is not a declared param", marks=pytest.mark.slow),
    pytest.param(GOOD_RULE.replace("severity: high", "severity: urgent"), "severity", marks=pytest.mark.slow),
    (GOOD_RULE + "\nwhen: [oops\n", "not valid YAML"),
    (GOOD_RULE.replace("message: \"GPU active", "message: \"{{ gpu_active_pct | round(1) }\" #"), "template error"),
    ("!!python/object/apply:os.system ['touch /tmp/nsx-pwned']\n", "not valid YAML"),
    (GOOD_RULE.replace("title: GPU busy", "titel: GPU busy"), "unknown key 'titel'"),
    # the rules engine refuses a list, a table or null to compare with: said at load, not "error code 102"
    (GOOD_RULE.replace("op: lt, value: $floor", "op: eq, value: []"), "operator 'eq' needs a number, a string"),
    pytest.param(GOOD_RULE.replace("op: lt, value: $floor", "op: eq, value: {}"), "r.yaml", marks=pytest.mark.slow),
])
def test_bad_rules_exit_2_with_one_line(tmp_path, text, expect):
    pack = make_pack(tmp_path, text)
    p = nsx("check-rules", pack)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert expect in lines[0] and "r.yaml" in lines[0]
    assert not os.path.exists("/tmp/nsx-pwned")


def test_duplicate_id_across_packs(tmp_path):
    text = (ROOT / "rules" / "system" / "sync-bound.yaml").read_text()
    pack = make_pack(tmp_path, text, "sync-bound.yaml")
    p = nsx("diagnose", FIXTURES / "sync_bound" / "input", "--rules", pack)
    assert p.returncode == 2 and "duplicate id" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_yaml_error_names_the_line(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE.replace("severity: high", "severity: [high"))
    p = nsx("check-rules", pack)
    assert p.returncode == 2 and "r.yaml:" in p.stderr


@pytest.mark.slow
def test_check_rules_passes_on_example_and_builtin_packs():
    for pack in (TEAM, ROOT / "rules"):
        p = nsx("check-rules", "--strict", pack)   # every built-in rule has its cases
        assert p.returncode == 0, p.stdout + p.stderr
        assert "checks passed" in p.stdout and "FAIL" not in p.stdout and "WARN" not in p.stdout


@pytest.mark.slow
def test_check_rules_warns_on_a_rule_without_cases(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE, "team-min-gpu-util.yaml")
    assert not list((pack / "rules").glob("*.cases.yaml"))
    p = nsx("check-rules", pack)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "WARN team-min-gpu-util" in p.stdout and "untested (no .cases.yaml): team-min-gpu-util" in p.stdout
    assert "warning: 1 rule(s) have no fixture cases: team-min-gpu-util" in p.stderr
    p = nsx("check-rules", "--strict", pack)
    assert p.returncode == 1 and "FAIL team-min-gpu-util" in p.stdout


def test_check_rules_fails_on_a_wrong_case(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE, "team-min-gpu-util.yaml")
    (pack / "rules" / "team-min-gpu-util.cases.yaml").write_text(
        "- {name: wrong, facts: {gpu_active_pct: 99}, expect: fire}\n- {name: q, facts: {gpu_active_pct: 99}, expect: quiet}\n")
    p = nsx("check-rules", pack)
    assert p.returncode == 1 and "FAIL team-min-gpu-util: wrong" in p.stdout


@pytest.mark.slow
def test_rules_explain_facts_commands():
    rules = json.loads(nsx("rules", "--format", "json").stdout)
    assert {r["id"] for r in rules} >= {"launch-bound", "sync-bound", "memcpy-bound"}
    assert all({"category", "severity", "pack", "params"} <= set(r) for r in rules)
    out = nsx("explain", "launch-bound").stdout
    assert "Fires when" in out and "min_idle_pct" in out and "Advice" in out
    p = nsx("explain", "lunch-bound")
    assert p.returncode == 2 and "did you mean 'launch-bound'" in p.stderr
    facts = json.loads(nsx("facts", "--format", "json").stdout)
    assert any(f["name"] == "gpu_active_pct" and "cuda_gpu_trace" in f["needs"] for f in facts)


def test_rule_reference_in_docs_is_generated_from_the_rules():
    p = nsx("rules", "--format", "md")
    assert p.returncode == 0
    assert (ROOT / "docs" / "rules.md").read_text() == p.stdout, "regenerate: nsys-expert rules --format md > docs/rules.md"


@pytest.mark.slow
def test_select_ignore_and_show_facts():
    case = FIXTURES / "sync_bound" / "input"
    d = json.loads(nsx("diagnose", case, "--format", "json", "--select", "sync-bound").stdout)
    assert [f["rule"] for f in d["findings"]] == ["sync-bound"]
    d = json.loads(nsx("diagnose", case, "--format", "json", "--ignore", "sync-bound", "--ignore", "startup").stdout)
    assert "sync-bound" not in [f["rule"] for f in d["findings"]] and "startup" not in [f["category"] for f in d["findings"]]
    p = nsx("diagnose", case, "--select", "no-such-rule")
    assert p.returncode == 2 and "no rule or category named 'no-such-rule'" in p.stderr
    out = nsx("diagnose", case, "--show-facts").stdout
    assert "## Facts" in out and "`gpu_idle_sync_pct`" in out


@pytest.mark.slow
@pytest.mark.parametrize("bad", ["sync-bound.nope=1", "sync-bound.min_idle_pct=abc", "sync-bound.min_idle_pct=500", "x"])
def test_bad_set_is_a_usage_error(bad):
    p = nsx("diagnose", FIXTURES / "sync_bound" / "input", "--set", bad)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_settings_from_pyproject_and_cli_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.nsys-expert]\n'
        f'rules = ["{TEAM}"]\nignore = ["startup"]\nset = {{"team-min-gpu-util.floor" = 3}}\n')
    case = FIXTURES / "launch_bound" / "input"
    d = json.loads(nsx("diagnose", case, "--format", "json", cwd=tmp_path).stdout)
    rules = [f["rule"] for f in d["findings"]]
    # the settings apply: the team pack is loaded, startup notes are ignored, and a floor of 3 % stays quiet
    assert "team-min-gpu-util" not in rules and "slow-first-iteration" not in rules and "launch-bound" in rules
    d = json.loads(nsx("diagnose", case, "--format", "json", "--set", "team-min-gpu-util.floor=50", cwd=tmp_path).stdout)
    assert "floor of 50" in [f for f in d["findings"] if f["rule"] == "team-min-gpu-util"][0]["message"]


def test_rules_and_explain_read_the_settings_files_packs(tmp_path, monkeypatch):
    """The rules diagnose uses are the rules `rules` lists and `explain` explains: the settings file's
    packs too (and its language), resolved once as for diagnose."""
    from click.testing import CliRunner

    from nsys_expert.cli import main

    (tmp_path / "nsys-expert.toml").write_text(f'rules = ["{TEAM}"]\nlang = "zh"\n')
    monkeypatch.chdir(tmp_path)
    listed = CliRunner().invoke(main, ["rules"])
    assert listed.exit_code == 0 and "team-min-gpu-util" in listed.output
    said = CliRunner().invoke(main, ["explain", "team-min-gpu-util"])
    assert said.exit_code == 0, said.output
    en = CliRunner().invoke(main, ["explain", "team-min-gpu-util", "--lang", "en"])
    assert en.exit_code == 0 and said.output != en.output           # the file's language, the command line wins
    (tmp_path / "nsys-expert.toml").unlink()
    assert "team-min-gpu-util" not in CliRunner().invoke(main, ["rules"]).output


def test_installed_pack_through_an_entry_point(monkeypatch):
    """A pack shipped as a Python package: its entry point names the package that holds pack.yaml."""
    import importlib.metadata as md
    import types

    from nsys_expert.engine import rules as rules_mod

    fake_pkg = types.ModuleType("team_pack")
    fake_pkg.__file__ = str(TEAM / "__init__.py")
    ep = md.EntryPoint(name="team", value="team_pack", group=rules_mod.ENTRY_POINT_GROUP)
    monkeypatch.setattr(md.EntryPoint, "load", lambda self: fake_pkg)
    monkeypatch.setattr(md, "entry_points", lambda group=None: [ep] if group == rules_mod.ENTRY_POINT_GROUP else [])
    packs = rules_mod.load_packs()
    assert [p.name for p in packs] == ["builtin", "team"]
    assert "team-min-gpu-util" in [r.id for r in packs[1].rules]


TWIN = """id: team-sync-stalls
title: Host syncs stall the GPU
category: sync-bound
severity: medium
subject: idle
when:
  all:
    - {fact: gpu_idle_sync_pct, op: gte, value: 5}
estimate:
  expr: "{{ gpu_idle_sync_pct * 0.5 }}"
message: "The GPU waits after syncs {{ gpu_idle_sync_pct | round(1) }} % of the window."
"""


def test_a_team_rule_for_a_builtin_cause_is_warned_of_and_a_wrapped_expr_loads(tmp_path):
    """Issue 56, item 13: a team rule for the built-in sync-bound cause counted its gain again in the total
    recoverable time and check-rules said nothing; its "{{ ... }}" estimate (the guide calls it a Jinja2
    expression) failed to load."""
    from click.testing import CliRunner

    from nsys_expert.cli import main
    from nsys_expert.engine.rules import load_pack
    (tmp_path / "pack.yaml").write_text("name: t\nversion: '1'\ndescription: d\n", encoding="utf-8")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "team-sync-stalls.yaml").write_text(TWIN, encoding="utf-8")
    assert load_pack(str(tmp_path)).rules[0].estimate["expr"] == "gpu_idle_sync_pct * 0.5"
    r = CliRunner().invoke(main, ["check-rules", str(tmp_path)])
    assert "rule team-sync-stalls estimates a gain on the subject and category of sync-bound" in r.stderr
    (tmp_path / "rules" / "team-sync-stalls.yaml").write_text(
        TWIN + "cause: sync-bound\nsupersedes: [sync-bound]\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["check-rules", str(tmp_path)])
    assert "estimates a gain on the subject" not in r.stderr
