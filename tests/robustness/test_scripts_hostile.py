"""What the generated scripts run (issue 50, item 1): ``nsys-expert command`` with hostile ``--name`` /
``--range`` / application words prints a shell script and writes wrapper files; both are run here, with
stub ``nsys`` / ``torchrun`` / ``deepspeed`` / ``mpirun`` on PATH that only record their argv, and
nothing a user passed as a value may run (each payload would create a file named PWNED_*)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_outputs_hostile import run  # noqa: E402

PAYLOADS = {
    "pyquote": 'a"+__import__("os").system("touch PWNED_py")+"',
    "pysingle": "a'+__import__('os').system('touch PWNED_py1')+'",
    "newline_eof": "x\nEOF\ntouch PWNED_eof\ncat <<'EOF'\n",
    "subst": "$(touch PWNED_subst)",
    "backtick": "`touch PWNED_tick`",
    "semicolon": "r; touch PWNED_semi #",
    "braces": "{rank}{0}{__import__('os').system('touch PWNED_brace')}",
    "docstring": 'q"""+__import__("os").system("touch PWNED_doc")#\\N{',
}

STUBS = {
    # record argv; run nothing
    "nsys": "import json, os, sys\nopen(os.environ['CALLS'], 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n",
    # torchrun / deepspeed / mpirun: drop their own options, start the script as rank 0
    "torchrun": "import os, subprocess, sys\na = [x for x in sys.argv[1:] if not x.startswith('--')]\n"
                "sys.exit(subprocess.run([sys.executable, *a], env=dict(os.environ, RANK='0')).returncode)\n",
    "deepspeed": "import subprocess, sys\na = [x for x in sys.argv[1:] if not x.startswith('--')]\n"
                 "sys.exit(subprocess.run(['bash', *a]).returncode)\n",
    "mpirun": "import subprocess, sys\na = sys.argv[3:]\nsys.exit(subprocess.run(['bash', *a]).returncode)\n",
}


@pytest.fixture
def sandbox(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text(f"#!{sys.executable}\n{body}")
        (bin_dir / name).chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text("print('trained')\n")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", CALLS=str(tmp_path / "calls.jsonl"))

    def calls():
        log = tmp_path / "calls.jsonl"
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return work, env, calls


def planted(work) -> list[str]:
    return sorted(p.name for p in work.rglob("PWNED*")) + sorted(p.name for p in work.parent.glob("PWNED*"))


def script(*args) -> str:
    r = run("command", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("key", sorted(PAYLOADS))
@pytest.mark.parametrize("scenario", ["torchrun", pytest.param("deepspeed", marks=pytest.mark.slow),   # the fast set: every
                                      pytest.param("mpi", marks=pytest.mark.slow)])   # name under one launcher (issue 56, item 14)
def test_printed_script_runs_no_name(sandbox, scenario, key):
    """The printed script (heredoc + chmod + launch line) run by bash: the stubs are called, no payload runs,
    and nsys gets the name back as one word."""
    work, env, calls = sandbox
    name = PAYLOADS[key]
    text = script(scenario, "--name", name, "--nproc-per-node", "1", "--", "python", "train.py")
    r = subprocess.run(["bash", "-c", text], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert planted(work) == [], (r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    got = calls()
    assert len(got) == 1, (got, r.stderr)
    argv = got[0]
    if scenario == "mpi":
        assert f"--output={name}" in argv
    else:
        expect = (name.replace("{rank}", "0") + ("" if "{rank}" in name else "_rank0") if scenario == "torchrun"
                  else name + ".%p")
        assert argv[argv.index("-o") + 1] == expect   # the name reached nsys as one word


@pytest.mark.parametrize("key", ["pyquote", "braces", "newline_eof"])
def test_torchrun_wrapper_gets_name_verbatim(sandbox, key):
    """run_nsys.py written with --out-dir: nsys's -o is the name, {rank} filled, every other brace kept."""
    work, env, calls = sandbox
    name = PAYLOADS[key]
    script("torchrun", "--name", name, "--nproc-per-node", "1", "--out-dir", str(work / "w"), "--", "python",
           "train.py")
    r = subprocess.run([sys.executable, str(work / "w" / "run_nsys.py"), "train.py"], cwd=work,
                       env=dict(env, RANK="0"), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert planted(work) == []
    argv = calls()[0]
    expect = name.replace("{rank}", "0") + ("" if "{rank}" in name else "_rank0")
    assert argv[argv.index("-o") + 1] == expect


@pytest.mark.parametrize("key", sorted(PAYLOADS))
def test_app_words_and_range_stay_words(sandbox, key):
    """Hostile application words (they land in the wrappers' docstring / comments) and an NVTX range name
    (it lands in the title comment and an option)."""
    work, env, calls = sandbox
    word = PAYLOADS[key]
    text = script("torchrun", "--nproc-per-node", "1", "--", "python", "train.py", word)
    subprocess.run(["bash", "-c", text], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert planted(work) == []
    assert calls() and calls()[0][-1] == word
    text = script("nvtx-range", "--range", word, "--", "python", "train.py")
    subprocess.run(["bash", "-c", text], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert planted(work) == []
    assert any(f"--nvtx-capture={word}" in c for c in calls()), calls()


def test_heredoc_terminator_never_a_line():
    from nsys_expert.scenarios.commands import heredoc_tag, py_fstring

    assert heredoc_tag("a\nb") == "EOF"
    assert heredoc_tag("a\nEOF\nEOF_1\n") == "EOF_2"
    ns = {"rank": 3}
    assert eval(py_fstring('x"{rank}{y}\\\n', "rank"), ns) == 'x"3{y}\\\n'
