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

    def boom(req, *progress):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(pipeline, "diagnose", boom)
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
