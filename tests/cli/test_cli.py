"""The CLI package: every subcommand is in the table, loads only when asked for, and shares the one
error handling (one line on stderr: exit 2 for the user's errors, 3 for a bug)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from nsys_expert import cli
from nsys_expert.cli import main


def test_help_lists_every_subcommand_of_the_table():
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0
    listed = [ln.split()[0] for ln in r.output.split("Commands:")[1].splitlines() if ln.strip()]
    assert listed == sorted(cli.COMMANDS)
    for name in cli.COMMANDS:   # each resolves to a click command of that name, wrapped by the guard
        cmd = main.get_command(None, name)
        assert cmd.name == name and hasattr(cmd.callback, "__wrapped__"), name


def test_diagnose_loads_no_other_subcommand(tmp_path):
    """Start-up: ``diagnose`` imports its own module and the shared options, not the others."""
    code = ("import json, sys\nfrom nsys_expert.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('nsys_expert.cli'))))\n")
    r = subprocess.run([sys.executable, "-c", code, "diagnose", str(FIXTURES / "healthy" / "input"),
                        "-o", str(tmp_path / "r.md")], capture_output=True, text=True, check=True)
    assert json.loads(r.stdout.splitlines()[-1]) == ["nsys_expert.cli", "nsys_expert.cli.diagnose",
                                                     "nsys_expert.cli.options"]
    assert (tmp_path / "r.md").read_text(encoding="utf-8").startswith("#")


def test_unknown_subcommand_is_a_usage_error():
    r = CliRunner().invoke(main, ["nosuch"])
    assert r.exit_code == 2 and "No such command 'nosuch'" in r.output


@pytest.mark.parametrize("args", [["diagnose", str(FIXTURES / "healthy" / "input")],
                                  ["diff", str(FIXTURES / "healthy" / "input"), str(FIXTURES / "sync_bound" / "input")]])
def test_a_bug_is_one_line_and_exit_3(monkeypatch, args):
    from nsys_expert import pipeline

    def boom(req, *progress, **settings):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(pipeline, "run", boom)   # diagnose and diff both reach it
    monkeypatch.delenv("NSX_DEBUG", raising=False)
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 3
    assert r.stderr == ("nsys-expert: error: internal error: RuntimeError: boom "
                        "(a bug in nsys-expert; NSX_DEBUG=1 shows where)\n")


def test_a_user_error_is_one_line_and_exit_2(tmp_path):
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "healthy" / "input"), "-o",
                                  str(tmp_path / "no" / "such" / "dir" / "r.md")])
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("nsys-expert: error: ")
    assert "cannot write the report" in r.stderr


# --- the conventions every subcommand shares (issue 22) --------------------------------------------

def test_fail_on_says_on_stderr_which_finding_tripped_it():
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "launch_bound" / "input"), "--fail-on", "high",
                                  "--format", "json"])
    assert r.exit_code == 1
    assert r.stderr == "nsys-expert: exit 1: --fail-on high tripped by launch-bound (high)\n"
    r = CliRunner().invoke(main, ["diagnose", str(FIXTURES / "healthy" / "input"), "--fail-on", "high",
                                  "--format", "json"])
    assert r.exit_code == 0 and r.stderr == ""


def test_regression_gate_says_on_stderr_what_got_worse(tmp_path):
    import json

    r = CliRunner().invoke(main, ["diff", str(FIXTURES / "healthy" / "input"), str(FIXTURES / "launch_bound" / "input"),
                                  "--fail-on-regression", "5"])
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert line.count("\n") == 0 and line.startswith("nsys-expert: exit 1: --fail-on-regression 5 tripped by ")
    # launch_bound's steps are shorter than healthy's: its GPU-active share that fell is said, not gated (issue 56,
    # item 1); its new high finding trips the gate
    assert "new high finding: launch-bound" in line and "gpu_active_pct" not in line
    assert "not gated (a share of a shorter step, each step faster): gpu_active_pct: " in r.stdout
    assert " pp |" in r.stdout       # a share's change is in percentage points in the table too
    # the same step, a share 7 points worse: it trips the gate, in points
    base = json.loads(CliRunner().invoke(main, ["diagnose", str(FIXTURES / "healthy" / "input"), "--format", "json"]).stdout)
    worse = dict(base, facts=dict(base["facts"], gpu_active_pct=base["facts"]["gpu_active_pct"] - 7.0))
    (tmp_path / "a.json").write_text(json.dumps(base))
    (tmp_path / "b.json").write_text(json.dumps(worse))
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on-regression", "5"])
    assert r.exit_code == 1 and "gpu_active_pct" in r.stderr and " pp > 5" in r.stderr


@pytest.mark.parametrize("args", [["rules"], ["rules", "--format", "md"], ["facts"], ["facts", "--format", "json"],
                                  ["explain", "launch-bound"], ["command", "quick"], ["command"],
                                  ["check-rules", "examples/team-pack"],
                                  ["diagnose", str(FIXTURES / "healthy" / "input"), "--format", "md"]])
def test_o_means_the_output_file_in_every_subcommand(tmp_path, args):
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    args = [str(root / a) if a.startswith("examples/") else a for a in args]
    printed = CliRunner().invoke(main, args)
    out = tmp_path / "out.txt"
    r = CliRunner().invoke(main, args + ["-o", str(out)])
    assert printed.exit_code == r.exit_code == 0, r.output
    assert r.stdout == "" and r.stderr.endswith(f"nsys-expert: wrote {out}\n")
    assert out.read_text(encoding="utf-8") == printed.stdout


@pytest.mark.parametrize("args, hint", [
    (["command", "quik"], "did you mean 'quick'?"),
    (["diagnose", "x", "--format", "jsno"], "did you mean 'json'?"),
    (["diagnose", "x", "--lang", "zn"], "did you mean 'zh'?"),
    (["diagnose", "x", "--lang", "cn"], "did you mean 'zh'?"),      # issue 56, item 12: was 'en', the closest spelling
    (["diagnose", "x", "--format", "markdown"], "did you mean 'md'?"),
    (["rules", "--format", "jsn"], "did you mean 'json'?"),
    (["diagnos", "x"], "did you mean 'diagnose'?"),
    (["explain", "lunch-bound"], "did you mean 'launch-bound'?"),
    (["diagnose", str(FIXTURES / "healthy" / "input"), "--select", "sync-bond"], "did you mean 'sync-bound'?"),
    (["diagnose", str(FIXTURES / "healthy" / "input"), "--set", "sync-bound.min_idle=3"], "did you mean 'min_idle_pct'?"),
])
def test_every_choice_suggests_the_closest(args, hint):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and hint in r.output + r.stderr


def test_diagnose_help_names_torch_profiler_traces_and_every_exit_code():
    """Issue 56, item 13 / 12: the help left out torch.profiler traces, and exit 130 on Ctrl-C."""
    out = " ".join(CliRunner().invoke(main, ["diagnose", "--help"]).output.split())
    assert "torch.profiler (Kineto) Chrome traces" in out and "130 interrupted (Ctrl-C)" in out


def test_explain_takes_a_category_and_reads_like_prose():
    r = CliRunner().invoke(main, ["explain", "launch-config"])
    assert r.exit_code == 0 and "## `tail-effect`" in r.stdout
    r = CliRunner().invoke(main, ["explain", "launch-bound"])
    assert "{{" not in r.stdout and "{%" not in r.stdout
    assert "one launch replaces <kernels_per_iter> per iteration" in r.stdout
    refs = r.stdout.split("References:")[1]
    assert "docs/rules.md#launch-bound" in refs and ".md section" not in refs and "peers.md" not in refs
    assert "from cuda_gpu_trace" in r.stdout      # the nsys report a user exports, not an internal table id
    r = CliRunner().invoke(main, ["explain", "slow-startup"])
    assert "`nsys-expert command long-run`" in r.stdout


def test_facts_names_the_nsys_reports():
    r = CliRunner().invoke(main, ["facts"])
    assert "cuda_gpu_trace" in r.stdout and "nvtx_pushpop_trace" in r.stdout
    assert " gpu_trace " not in r.stdout and "| nvtx_trace" not in r.stdout


def test_check_rules_lists_every_failure_and_exits_1(tmp_path):
    import pathlib
    import shutil

    pack = tmp_path / "pack"
    shutil.copytree(pathlib.Path(__file__).resolve().parents[2] / "examples" / "team-pack", pack)
    cases = sorted(pack.rglob("*.cases.yaml"))
    for c in cases:   # every case expects the opposite of what it expected
        c.write_text(c.read_text().replace("expect: fire", "expect: XX").replace("expect: quiet", "expect: fire")
                     .replace("expect: XX", "expect: quiet"))
    r = CliRunner().invoke(main, ["check-rules", str(pack)])
    assert r.exit_code == 1
    fails = [ln for ln in r.stdout.splitlines() if ln.startswith("FAIL")]
    assert len(fails) >= 2 and {ln.split()[1] for ln in fails} >= {c.name.split(".")[0] + ":" for c in cases}
    assert r.stderr.startswith(f"nsys-expert: exit 1: {len(fails)} check(s) failed: ")
    (pack / "pack.yaml").write_text("name: [unclosed\n")
    assert CliRunner().invoke(main, ["check-rules", str(pack)]).exit_code == 2


def test_diagnose_help_names_every_input_kind():
    text = " ".join(CliRunner().invoke(main, ["diagnose", "--help"]).output.split())
    for kind in ("nsys stats", "sqlite", ".nsys-rep", "console text", "Nsight Compute", "gzipped", "ranks"):
        assert kind in text, kind
