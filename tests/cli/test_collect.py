"""`nsys-expert collect` end to end with a fake `nsys` (CI has no GPU and no nsys), and the two real
profiles `collect` made on an H200."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, produced
from nsys_expert import scenarios as sc
from nsys_expert.cli import main

ALL_REPORTS = ("cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace,cuda_gpu_kern_sum,cuda_api_sum,"
               "cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,osrt_sum,cuda_kern_exec_sum")


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


# ------------------------------------------------------------------------------- collect
FAKE_NSYS = textwrap.dedent('''\
    #!{python}
    """A stand-in for nsys: profile writes the report, export the SQLite, stats copies a fixture's CSVs."""
    import os, shutil, sys
    args = sys.argv[1:]
    def opt(name):
        for i, a in enumerate(args):
            if a.startswith(name + "="):
                return a.split("=", 1)[1]
            if a == name:
                return args[i + 1]
    open(os.environ["FAKE_NSYS_LOG"], "a").write(" ".join(args) + "\\n")
    verb = args[0]
    if os.environ.get("FAKE_NSYS_FAIL") == verb:
        print("Collecting data...", file=sys.stderr)
        print("Error: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", file=sys.stderr)
        print("Try running as root or set NVreg_RestrictProfilingToAdminUsers=0", file=sys.stderr)
        sys.exit(1)
    if verb == "profile":
        print("app output on stdout")
        open(opt("--output") + ".nsys-rep", "w").write("fake report")
    elif verb == "export":
        open(opt("--output"), "w").write("fake sqlite")
    elif verb == "stats":
        src = os.environ["FAKE_NSYS_FIXTURE"]
        for r in opt("--report").split(","):
            for f in os.listdir(src):
                if f.endswith("_" + r + ".csv"):
                    shutil.copy(os.path.join(src, f), opt("--output") + "_" + r + ".csv")
''')


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(FAKE_NSYS.format(python=sys.executable))
    nsys.chmod(0o755)
    log = tmp_path / "nsys_calls.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_FIXTURE", str(FIXTURES / "launch_bound" / "input"))
    return log


def test_collect_end_to_end(tmp_path, fake_nsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("collect", "--out", "out", "-q", "--nsys-arg=--sample=none", "--", "python", "train.py", "--steps", "200")
    assert r.exit_code == 0, r.output
    assert fake_nsys.read_text().splitlines() == [
        "profile --trace=cuda,nvtx,osrt --cuda-memory-usage=true --sample=none --output=out/profile "
        "--force-overwrite=true python train.py --steps 200",
        "export --type=sqlite --force-overwrite=true --output=out/profile.sqlite out/profile.nsys-rep",
        f"stats --report {ALL_REPORTS} --format csv --output out/profile_csv/profile out/profile.sqlite"]
    csvs = sorted(os.listdir("out/profile_csv"))
    assert len(csvs) == 10 and "profile_cuda_api_trace.csv" in csvs and "profile_nvtx_pushpop_trace.csv" in csvs
    doc = json.loads(open("out/profile.diagnosis.json").read())
    assert doc["verdict"]["category"] == "launch-bound"
    assert open("out/profile.diagnosis.md").read().startswith("#")
    for where in ("report     out/profile.nsys-rep", "sqlite     out/profile.sqlite", "csv        out/profile_csv/",
                  "diagnosis  out/profile.diagnosis.md, out/profile.diagnosis.json", "verdict: launch-bound"):
        assert where in r.output
    assert "app output on stdout" in open("out/profile.log").read()


def test_collect_honours_the_settings_file(tmp_path, fake_nsys, monkeypatch):
    """collect diagnoses with the settings diagnose would use: the nearest settings file's (its rules
    left out, its language), the command line over it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nsys-expert.toml").write_text('lang = "zh"\nignore = ["launch-bound"]\n')
    r = invoke("collect", "--out", "out", "-q", "--", "python", "train.py")
    assert r.exit_code == 0, r.output
    doc = json.loads(open("out/profile.diagnosis.json").read())
    assert doc["settings"]["ignore"] == ["launch-bound"] and doc["settings"]["file"] == "nsys-expert.toml"
    assert "launch-bound" not in [f["rule"] for f in doc["findings"]]
    assert "判定" in open("out/profile.diagnosis.md").read()
    r = invoke("collect", "--out", "out", "-q", "--lang", "en", "--", "python", "train.py")
    assert r.exit_code == 0, r.output
    assert "判定" not in open("out/profile.diagnosis.md").read()       # the command line wins


def test_collect_scenarios_and_no_diagnose(tmp_path, fake_nsys):
    out = tmp_path / "o"
    r = invoke("collect", "--scenario", "nvtx-range", "--range", "train", "--out", str(out), "--name", "run1",
               "--no-diagnose", "-q", "--", "python", "t.py")
    assert r.exit_code == 0, r.output
    first = fake_nsys.read_text().splitlines()[0]
    assert first.startswith("profile --capture-range=nvtx --nvtx-capture=train --capture-range-end=stop ")
    assert f"--output={out}/run1 --force-overwrite=true python t.py" in first
    assert not (out / "run1.diagnosis.json").exists() and f"nsys-expert diagnose {out}/run1_csv" in r.output
    r = invoke("collect", "--scenario", "long-run", "--delay", "5", "--duration", "10", "--out", str(out),
               "--no-diagnose", "-q", "--", "python", "t.py")
    last_profile = [ln for ln in fake_nsys.read_text().splitlines() if ln.startswith("profile")][-1]
    # collect always overwrites its own report, long-run included
    assert "--delay=5 --duration=10 --kill=none --output=" in last_profile and "--force-overwrite=true" in last_profile


def test_collect_without_nsys(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    r = CliRunner().invoke(main, ["collect", "--out", str(tmp_path / "o"), "--", "python", "train.py"])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("nsys-expert: error: nsys (Nsight Systems) is not on PATH (install Nsight Systems")
    assert "developer.nvidia.com/nsight-systems" in lines[0]


def test_collect_without_nsys_in_a_subprocess(tmp_path):
    """The installed entry point, with a PATH that has python but no nsys."""
    empty = tmp_path / "bin"
    empty.mkdir()
    r = subprocess.run([sys.executable, "-m", "nsys_expert", "collect", "--", "python", "train.py"], cwd=tmp_path,
                       env=dict(os.environ, PATH=str(empty)), capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nsys (Nsight Systems) is not on PATH" in r.stderr


@pytest.mark.parametrize("verb,msg", [
    ("profile", "nsys profile failed (exit 1) and wrote no report: Collecting data... | Error: "
                "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES | Try running as root or set NVreg_RestrictProfilingToAdminUsers=0"),
    ("export", "nsys export failed (exit 1): Collecting data... | Error: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"),
    ("stats", "nsys stats failed (exit 1) and wrote no CSV: Collecting data..."),
])
def test_collect_when_nsys_fails(tmp_path, fake_nsys, monkeypatch, verb, msg):
    monkeypatch.setenv("FAKE_NSYS_FAIL", verb)
    r = CliRunner().invoke(main, ["collect", "-q", "--out", str(tmp_path / "o"), "--", "python", "train.py"])
    assert r.exit_code == 2
    out = r.output.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("nsys-expert: error: ")
    assert msg in out[0]


def test_collect_rejects_multi_process_scenarios(tmp_path, fake_nsys):
    r = CliRunner().invoke(main, ["collect", "--scenario", "torchrun", "--", "python", "t.py"])
    assert r.exit_code == 2        # click: not a collectable scenario
    with pytest.raises(ValueError, match="nsys-expert command torchrun"):
        sc.profile_command("torchrun", sc.Options())


# ------------------------------------------------- the two real profiles `collect` made on an H200
def _gpu_active_pct(case, start, end):
    """Union of the cuda_gpu_trace intervals inside [start, end), with the csv module (not Polars)."""
    import csv
    iv = []
    with open(FIXTURES / case / "input" / f"{case}_cuda_gpu_trace.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            s = int(r["Start (ns)"])
            e = s + int(r["Duration (ns)"])
            s, e = max(s, start), min(e, end)
            if e > s:
                iv.append((s, e))
    iv.sort()
    busy, cur = 0, None
    for s, e in iv:
        if cur is None or s > cur[1]:
            busy += (cur[1] - cur[0]) if cur else 0
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    busy += cur[1] - cur[0]
    return 100.0 * busy / (end - start)


def test_real_dataloader_bound_profile():
    doc = produced("dataloader_bound")[0]
    top = doc["findings"][0]
    assert (top["rule"], top["severity"]) == ("data-io-bound", "high")
    f = doc["facts"]
    assert f["gpu_idle_data_pct"] > 80 and f["memcpy_pageable_share_pct"] == 100.0
    assert doc["window"]["source"] == "nvtx:step" and doc["window"]["iterations"] == 149
    w = doc["window"]
    assert abs(_gpu_active_pct("dataloader_bound", w["start_ns"], w["end_ns"]) - f["gpu_active_pct"]) < 0.01
    assert "host-bound" not in [x["rule"] for x in doc["findings"]]


def test_real_host_bound_profile():
    doc = produced("host_bound")[0]
    top = doc["findings"][0]
    assert (top["rule"], top["severity"]) == ("host-bound", "high")
    f = doc["facts"]
    assert f["gpu_idle_host_pct"] > 80 and f.get("gpu_idle_data_pct", 0) < 1
    w = doc["window"]
    assert abs(_gpu_active_pct("host_bound", w["start_ns"], w["end_ns"]) - f["gpu_active_pct"]) < 0.01
    assert "data-io-bound" not in [x["rule"] for x in doc["findings"]]
