"""`nsys-expert command` / `collect`: exact command strings, wrapper files, --explain, next steps,
and collect end to end with a fake `nsys` (CI has no GPU and no nsys)."""
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from nsys_expert import scenarios as sc
from nsys_expert.cli import main

ALL_REPORTS = ("cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace,cuda_gpu_kern_sum,cuda_api_sum,"
               "cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum,osrt_sum,cuda_kern_exec_sum")

# ------------------------------------------------------------------- every scenario, default options
EXPECTED = {
    "quick": ["nsys profile --trace=cuda,nvtx,osrt --cuda-memory-usage=true --output=report_output "
              "--force-overwrite=true python train.py"],
    "pytorch": ["nsys profile --trace=cuda,cudnn,cublas,osrt,nvtx --pytorch=autograd-nvtx --cudabacktrace=all "
                "--python-backtrace=cuda --python-sampling=true --cuda-memory-usage=true --output=dl_profile "
                "--force-overwrite=true python train.py"],
    "torchrun": ["torchrun --nnodes=1 --nproc-per-node=8 run_nsys.py train.py"],
    "deepspeed": ["deepspeed --no_python ./nsys_profile.sh train.py"],
    "nvtx-range": ["nsys profile --capture-range=nvtx --nvtx-capture=profile_region --capture-range-end=stop "
                   "--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0 --trace=cuda,nvtx --output=nvtx_range_profile "
                   "--force-overwrite=true python train.py"],
    "cuda-profiler-range": ["nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop --trace=cuda,nvtx "
                            "--output=cuda_profiler_range_profile --force-overwrite=true python train.py"],
    "long-run": ["nsys profile --trace=cuda,nvtx,osrt --delay=120 --duration=30 --kill=none "
                 "--output=long_run_profile python train.py"],
    "stats": ["nsys export --type=sqlite --force-overwrite=true --output=report.sqlite report.nsys-rep",
              "mkdir -p report_csv",
              f"nsys stats --report {ALL_REPORTS} --format csv --output report_csv/report report.sqlite",
              "nsys-expert diagnose report.sqlite"],
    "mpi": ["mpirun -np 8 ./nsys_mpi.sh python train.py"],
    "ncu-kernel": ['ncu --set full --target-processes all --launch-count 5 '
                   "-o ncu_kernel -f python train.py",
                   "ncu -i ncu_kernel.ncu-rep --csv --page details > ncu_kernel_details.csv",
                   "ncu -i ncu_kernel.ncu-rep --csv --page raw > ncu_kernel_raw.csv"],
    "ncu-roofline": ['ncu --set roofline --launch-count 3 -o roofline_report -f '
                     "python train.py",
                     "ncu -i roofline_report.ncu-rep --csv --page details > roofline_report_details.csv",
                     "ncu -i roofline_report.ncu-rep --csv --page raw > roofline_report_raw.csv"],
    "ncu-training-step": ["ncu --set full --target-processes all --launch-skip 1000 --launch-count 50 "
                          "-o training_kernels -f python train.py",
                          "ncu -i training_kernels.ncu-rep --csv --page details > training_kernels_details.csv",
                          "ncu -i training_kernels.ncu-rep --csv --page raw > training_kernels_raw.csv"],
    "ncu-compare": ["ncu --set full -o before -f python train_v0.py",
                    "ncu --set full -o after -f python train_v1.py",
                    "ncu -i before.ncu-rep --csv --page details > before_details.csv",
                    "ncu -i before.ncu-rep --csv --page raw > before_raw.csv",
                    "ncu -i after.ncu-rep --csv --page details > after_details.csv",
                    "ncu -i after.ncu-rep --csv --page raw > after_raw.csv"],
}


def test_every_scenario_is_pinned():
    assert set(EXPECTED) == set(sc.SCENARIOS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_default_commands(name):
    assert sc.build(name).lines() == EXPECTED[name]


# ------------------------------------------------------------------------------- options
def lines(name, **kw):
    return sc.build(name, sc.Options(**kw)).lines()


def test_playbook_spellings():
    """The options the issue names, spelled exactly as nsys 2024-2025 / ncu 2025 take them."""
    assert "--pytorch=functions-trace,autograd-nvtx" in lines("pytorch", pytorch=("functions-trace", "autograd-nvtx"))[0]
    assert "--pytorch=autograd-shapes-nvtx" in lines("pytorch", pytorch=("autograd-shapes-nvtx",))[0]
    assert "--capture-range=nvtx --nvtx-capture=train_steps --capture-range-end=stop" in \
        lines("nvtx-range", range_name="train_steps")[0]
    assert "--delay=300 --duration=60 --kill=none" in lines("long-run", delay=300, duration=60)[0]
    assert "--cuda-graph-trace=node" in lines("quick", cuda_graph_trace="node")[0]
    k = lines("ncu-kernel", kernel=".*gemm.*", launch_count=3)[0]
    assert k.startswith('ncu --set full --target-processes all --kernel-name "regex:.*gemm.*" --launch-count 3 ')
    assert lines("ncu-training-step", launch_skip=200, launch_count=20)[0] == \
        "ncu --set full --target-processes all --launch-skip 200 --launch-count 20 -o training_kernels -f python train.py"


def test_app_and_output():
    assert lines("quick", app=("python", "train.py", "--lr", "3e-4", "--name", "my run"), output="exp1") == [
        'nsys profile --trace=cuda,nvtx,osrt --cuda-memory-usage=true --output=exp1 --force-overwrite=true '
        'python train.py --lr 3e-4 --name "my run"']
    assert lines("quick", trace="cuda,nvtx")[0].startswith("nsys profile --trace=cuda,nvtx --cuda-memory-usage")
    assert lines("stats", input="runs/exp1.nsys-rep") == [
        "nsys export --type=sqlite --force-overwrite=true --output=runs/exp1.sqlite runs/exp1.nsys-rep",
        "mkdir -p runs/exp1_csv",
        f"nsys stats --report {ALL_REPORTS} --format csv --output runs/exp1_csv/exp1 runs/exp1.sqlite",
        "nsys-expert diagnose runs/exp1.sqlite"]
    assert lines("ncu-compare", before=("python", "a.py"), after=("python", "b.py"))[:2] == [
        "ncu --set full -o before -f python a.py", "ncu --set full -o after -f python b.py"]
    assert lines("deepspeed", nproc_per_node=4) == ["deepspeed --no_python --num_gpus=4 ./nsys_profile.sh train.py"]
    assert lines("mpi", nproc_per_node=4, nnodes=2) == ["mpirun -np 8 ./nsys_mpi.sh python train.py"]
    assert lines("torchrun", wrapper_dir="prof") == ["torchrun --nnodes=1 --nproc-per-node=8 prof/run_nsys.py train.py"]


@pytest.mark.parametrize("name,kw,msg", [
    ("pytorch", {"pytorch": ("autograd",)}, "not one of"),
    ("pytorch", {"pytorch": ("none", "autograd-nvtx")}, "cannot be combined"),
    ("torchrun", {"ranks": (8,)}, "ranks run from 0 to 7"),
    ("quick", {"trace": "cuda,nvtxx"}, "unknown value"),
    ("quick", {"trace": "cuda,nccl"}, "not an nsys --trace value"),
    ("quick", {"app": ()}, "no application"),
    ("long-run", {"duration": 0}, "--duration"),
])
def test_bad_options(name, kw, msg):
    with pytest.raises(ValueError, match=msg):
        sc.build(name, sc.Options(**kw))


def test_multiline_layout():
    text = sc.build("quick").shell()
    assert text == ("nsys profile \\\n  --trace=cuda,nvtx,osrt \\\n  --cuda-memory-usage=true \\\n"
                    "  --output=report_output \\\n  --force-overwrite=true \\\n  python train.py")
    assert sc.build("quick").shell(multiline=False) == EXPECTED["quick"][0]


# ------------------------------------------------------------------------------- wrapper files
TORCHRUN_WRAPPER = '''#!/usr/bin/env python3
"""torchrun starts this instead of the training script: the chosen ranks run under nsys, the others plainly.

Written by: nsys-expert command torchrun --ranks 0,3 --nproc-per-node 4
Launch:     torchrun --nnodes=1 --nproc-per-node=4 run_nsys.py train.py --epochs 1
"""
import os
import subprocess
import sys

PROFILE_RANKS = {0, 3}
NSYS = ["nsys", "profile", "-t", "cuda,nvtx,osrt,cudnn"]

rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))
app = [sys.executable] + sys.argv[1:]
if rank in PROFILE_RANKS:
    # one report per rank: ranks never overwrite each other, also on a shared file system
    command = NSYS + ["-o", f"rank{rank}_profile", "-f", "true"] + app
else:
    command = app
sys.exit(subprocess.run(command).returncode)
'''

DEEPSPEED_WRAPPER = '''#!/bin/bash
# DeepSpeed runs this script in place of python (deepspeed --no_python): every process is profiled,
# and %p (the PID) gives each process its own report.
# Written by: nsys-expert command deepspeed
# Launch:     deepspeed --no_python ./nsys_profile.sh train.py
exec nsys profile \\
  -t cuda,mpi,nvtx,osrt,cudnn \\
  -o deepspeed_profile.%p \\
  python "$@"
'''

MPI_WRAPPER = '''#!/bin/bash
# mpirun / srun run this in place of the application: every rank is profiled, and the GPU and NIC
# metrics (sampled per device, for the whole node) are collected by each node's local rank 0 only.
# Written by: nsys-expert command mpi
# Launch:     mpirun -np 8 ./nsys_mpi.sh python train.py
LOCAL_RANK=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-${MPI_LOCALRANKID:-0}}}
if [ "$LOCAL_RANK" -eq 0 ]; then
    exec nsys profile --trace=cuda,nvtx,osrt,mpi --output=mpi_profile.%h.%p --force-overwrite=true --nic-metrics=true --gpu-metrics-devices=all "$@"
else
    exec nsys profile --trace=cuda,nvtx,osrt,mpi --output=mpi_profile.%h.%p --force-overwrite=true "$@"
fi
'''


def test_wrapper_contents():
    p = sc.build("torchrun", sc.Options(app=("python", "train.py", "--epochs", "1"), ranks=(0, 3), nproc_per_node=4))
    assert [(f.name, f.executable) for f in p.files] == [("run_nsys.py", True)]
    assert p.files[0].content == TORCHRUN_WRAPPER
    assert p.outputs == ["rank0_profile.nsys-rep", "rank3_profile.nsys-rep"]
    assert sc.build("deepspeed").files[0].content == DEEPSPEED_WRAPPER
    assert sc.build("mpi").files[0].content == MPI_WRAPPER
    d = sc.build("deepspeed", sc.Options(cuda_graph_trace="node")).files[0].content
    assert "  -t cuda,mpi,nvtx,osrt,cudnn \\\n  --cuda-graph-trace=node \\\n  -o deepspeed_profile.%p \\\n" in d


@pytest.fixture
def argv_recorder(tmp_path):
    """A fake `nsys` that records its argv (one JSON line per call)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    fake = bin_dir / "nsys"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def calls():
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return env, calls


def test_torchrun_wrapper_runs(tmp_path, argv_recorder):
    env, calls = argv_recorder
    p = sc.build("torchrun", sc.Options(app=("python", "train.py", "--epochs", "1"), ranks=(0, 3), nproc_per_node=4))
    wrapper = tmp_path / "run_nsys.py"
    wrapper.write_text(p.files[0].content)
    (tmp_path / "train.py").write_text("import sys; open('ran_' + sys.argv[2], 'w').write('x')\n")
    for rank in ("0", "1", "3"):
        r = subprocess.run([sys.executable, str(wrapper), "train.py", "--epochs", rank], cwd=tmp_path,
                           env=dict(env, RANK=rank, LOCAL_RANK=rank), capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    assert calls() == [["profile", "-t", "cuda,nvtx,osrt,cudnn", "-o", "rank0_profile", "-f", "true", sys.executable,
                        "train.py", "--epochs", "0"],
                       ["profile", "-t", "cuda,nvtx,osrt,cudnn", "-o", "rank3_profile", "-f", "true", sys.executable,
                        "train.py", "--epochs", "3"]]
    assert (tmp_path / "ran_1").exists()     # rank 1 ran without nsys


def test_shell_wrappers_run(tmp_path, argv_recorder):
    env, calls = argv_recorder
    for f in (sc.build("deepspeed").files[0], sc.build("mpi").files[0]):
        (tmp_path / f.name).write_text(f.content)
        (tmp_path / f.name).chmod(0o755)
    subprocess.run(["bash", "nsys_profile.sh", "train.py", "--deepspeed"], cwd=tmp_path, env=env, check=True)
    subprocess.run(["bash", "nsys_mpi.sh", "python", "train.py"], cwd=tmp_path,
                   env=dict(env, OMPI_COMM_WORLD_LOCAL_RANK="0"), check=True)
    subprocess.run(["bash", "nsys_mpi.sh", "python", "train.py"], cwd=tmp_path,
                   env=dict(env, OMPI_COMM_WORLD_LOCAL_RANK="1"), check=True)
    subprocess.run(["bash", "nsys_mpi.sh", "python", "train.py"], cwd=tmp_path, env=dict(env, SLURM_LOCALID="2"),
                   check=True)
    common = ["profile", "--trace=cuda,nvtx,osrt,mpi", "--output=mpi_profile.%h.%p", "--force-overwrite=true"]
    assert calls() == [
        ["profile", "-t", "cuda,mpi,nvtx,osrt,cudnn", "-o", "deepspeed_profile.%p", "python", "train.py", "--deepspeed"],
        common + ["--nic-metrics=true", "--gpu-metrics-devices=all", "python", "train.py"],
        common + ["python", "train.py"],
        common + ["python", "train.py"]]


# ------------------------------------------------------------------------------- the CLI
def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_command_prints_a_shell_script(tmp_path):
    r = invoke("command", "quick", "--one-line", "--", "python", "train.py", "--lr", "3e-4")
    assert r.exit_code == 0
    body = [ln for ln in r.output.splitlines() if not ln.startswith("#")]
    assert body == ["nsys profile --trace=cuda,nvtx,osrt --cuda-memory-usage=true --output=report_output "
                    "--force-overwrite=true python train.py --lr 3e-4"]
    # printed wrapper files come as heredocs: the whole output runs in bash
    r = invoke("command", "torchrun", "--nproc-per-node", "2")
    assert "cat > run_nsys.py <<'EOF'\n#!/usr/bin/env python3\n" in r.output and "\nchmod +x run_nsys.py\n" in r.output
    script = tmp_path / "out.sh"
    script.write_text(r.output.replace("\ntorchrun --nnodes", "\ntrue torchrun --nnodes"))
    subprocess.run(["bash", str(script)], cwd=tmp_path, check=True)
    assert (tmp_path / "run_nsys.py").read_text() == sc.build("torchrun", sc.Options(nproc_per_node=2)).files[0].content


def test_command_out_dir_writes_executables(tmp_path):
    out = tmp_path / "prof"
    r = invoke("command", "torchrun", "--ranks", "0,1", "--nproc-per-node", "2", "--out-dir", str(out), "--",
               "python", "train.py")
    assert r.exit_code == 0, r.output
    f = out / "run_nsys.py"
    assert f.read_text().startswith("#!/usr/bin/env python3") and "PROFILE_RANKS = {0, 1}" in f.read_text()
    assert f.stat().st_mode & stat.S_IXUSR
    assert f"# wrote {f} (executable)" in r.output
    assert f"torchrun --nnodes=1 --nproc-per-node=2 {out}/run_nsys.py train.py" in r.output
    r = invoke("command", "deepspeed", "--out-dir", str(out))
    assert (out / "nsys_profile.sh").stat().st_mode & stat.S_IXUSR
    r = invoke("command", "quick", "--container", "k8s", "--out-dir", str(out))
    k8s = (out / "nsys-security-context.yaml")
    assert 'add: ["SYS_ADMIN", "SYS_PTRACE"]' in k8s.read_text() and not k8s.stat().st_mode & stat.S_IXUSR


def test_explain():
    r = invoke("command", "long-run", "--explain", "--delay", "60")
    assert r.exit_code == 0
    out = r.output
    assert "#   --delay=60\n#       seconds to wait after launch before collecting (skip start-up and warm-up)" in out
    assert "#   --kill=none\n#       signal sent to the app when collection ends: sigterm (default) or none" in out
    assert "osrt = OS runtime (pthread, file I/O): DataLoader / I/O bottlenecks" in out
    zh = invoke("command", "long-run", "--explain", "--lang", "zh").output
    assert "启动后等待若干秒再开始采集（跳过 warmup）" in zh and "采集结束后是否终止应用" in zh
    # every option of every scenario has a reason (none falls back to "passed through")
    for name in sc.SCENARIOS:
        for flag, why in sc.build(name).explain:
            assert why and "passed through" not in why, (name, flag)
    nv = dict(sc.build("nvtx-range").explain)
    assert "unregistered" in nv["--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0"]
    ex = dict(sc.build("stats").explain)
    assert ex["--output report_csv/report"].startswith("prefix of the CSV files")


def test_container_flags():
    r = invoke("command", "quick", "--container", "docker")
    assert "#   docker run --gpus all --cap-add=SYS_ADMIN --cap-add=SYS_PTRACE ... IMAGE" in r.output
    p = sc.build("ncu-kernel", sc.Options(container="k8s"))
    assert p.container == ['securityContext:\n  capabilities:\n    add: ["SYS_ADMIN", "SYS_PTRACE"]']


def test_command_json_and_list():
    r = invoke("command", "nvtx-range", "--range", "train", "--format", "json")
    doc = json.loads(r.output)
    assert doc["commands"][0].startswith("nsys profile --capture-range=nvtx --nvtx-capture=train ")
    assert {"option", "why"} <= set(doc["explain"][0])
    listing = invoke("command").output
    for name in sc.SCENARIOS:
        assert name in listing


def test_command_bad_option_is_one_line():
    r = CliRunner().invoke(main, ["command", "pytorch", "--pytorch", "shapes"])
    assert r.exit_code == 2
    assert r.output.strip().startswith("nsys-expert: error: --pytorch shapes: not one of")


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


# ------------------------------------------------------------------------------- next steps
def test_next_steps_for_summaries_only():
    ne = [{"rule": "host-bound", "missing": ["needs the cuda_api_trace report (nsys stats -r cuda_api_trace) (gpu_idle_host_pct)"],
           "facts": ["gpu_idle_host_pct"]},
          {"rule": "iteration-jitter", "missing": ["needs NVTX ranges with timestamps (nsys stats -r nvtx_pushpop_trace; profile "
                                                   "with --trace=nvtx and mark each step with an NVTX range) (iter_count)"],
           "facts": ["iter_count"]},
          {"rule": "slow-startup", "missing": ["needs the cuda_gpu_trace report (nsys stats -r cuda_gpu_trace) or NVTX ranges "
                                               "with timestamps (nsys stats -r nvtx_pushpop_trace; profile with --trace=nvtx "
                                               "and mark each step with an NVTX range) (startup_s)"], "facts": ["startup_s"]}]
    steps = sc.next_steps(ne, {}, report="prof.nsys-rep")
    # one order of the reports (GPU, API, NVTX trace), whichever rules lack them
    assert steps[0]["commands"] == ["nsys stats --report cuda_gpu_trace,cuda_api_trace,nvtx_pushpop_trace --format csv "
                                    "--output prof prof.nsys-rep"]
    assert sc.next_steps(ne[::-1], {}, report="prof.nsys-rep")[0]["commands"] == steps[0]["commands"]
    assert steps[0]["rules"] == ["host-bound", "iteration-jitter", "slow-startup"]
    assert steps[1]["need"] == "NVTX step ranges" and steps[1]["commands"][0].startswith("nsys profile --trace=cuda,nvtx,osrt")


def test_next_steps_graphs_and_ncu():
    """A CSV folder holding the GPU trace of a graph-launching run: re-profile with node tracing (no export);
    the hot kernels by exact name from the facts' ncu hint (alternation kept, anchored)."""
    ne = [{"rule": "launch-bound", "missing": ["CUDA graph work is not in the GPU trace"], "facts": ["gpu_idle_launch_pct"]},
          {"rule": "low-occupancy", "missing": ["needs an Nsight Compute CSV of the hot kernels"],
           "facts": ["achieved_occupancy_pct"]}]
    inputs = [{"kind": "nsys-csv", "table": t, "version": "2023+", "path": f"x_{t}.csv"} for t in ("gpu_trace", "api_trace")]
    hint = ('ncu --set full --target-processes all --kernel-name regex:"nvjet_tst|stencil" --launch-skip 7 '
            "--launch-count 10 -o hot <your command>")
    steps = sc.next_steps(ne, {"graph_launch_count": 199}, inputs=inputs, app=("python", "bench.py"), ncu_hint=hint)
    assert [s["need"] for s in steps] == ["CUDA graph kernels in the GPU trace", "Nsight Compute metrics"]
    assert "--cuda-graph-trace=node" in steps[0]["commands"][0] and steps[0]["commands"][0].endswith("python bench.py")
    assert steps[1]["commands"][0] == ("ncu --set full --target-processes all --kernel-name 'regex:^(nvjet_tst|stencil)$' "
                                       "--launch-skip 7 --launch-count 10 -o ncu_kernel -f python bench.py")
    assert steps[1]["commands"][1] == "ncu -i ncu_kernel.ncu-rep --csv --page details > ncu_kernel_details.csv"


def test_next_steps_on_a_real_diagnosis():
    from golden import produce

    doc = produce("launch_bound_summaries")[0]
    steps = sc.next_steps(doc["not_evaluated"], doc["facts"])
    export = steps[0]
    assert export["commands"][0].startswith("nsys stats --report ")
    for rep in ("cuda_gpu_trace", "cuda_api_trace", "nvtx_pushpop_trace"):
        assert rep in export["commands"][0]
    assert "host-bound" in export["rules"]
    assert sc.next_steps([], {}) == []


# ------------------------------------------------------------------ option names vs the real tools
HELP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "tool_help")


def _help(name):
    with open(os.path.join(HELP, f"{name}_2025.3.1.txt"), encoding="utf-8") as fh:
        return fh.read()


def _known(text, flag):
    import re
    return re.search(r"(^|[\s\[,])" + re.escape(flag) + r"([=\s,\]]|$)", text, re.M) is not None


def _all_plans():
    variants = [{}, {"cuda_graph_trace": "node"}, {"pytorch": ("functions-trace", "autograd-shapes-nvtx")},
                {"kernel": "gemm", "launch_skip": 10, "launch_count": 2}]
    for name in sc.SCENARIOS:
        for kw in variants:
            yield name, sc.build(name, sc.Options(**kw))


def test_every_option_exists_in_nsys_and_ncu_2025_help():
    """`nsys profile|stats|export --help` and `ncu --help` of 2025.3.1, captured on the H200 machine."""
    helps = {("nsys", "profile"): _help("nsys_profile"), ("nsys", "stats"): _help("nsys_stats"),
             ("nsys", "export"): _help("nsys_export"), ("ncu",): _help("ncu")}
    checked = 0
    for name, plan in _all_plans():
        for c in plan.commands:
            text = helps.get(tuple(c.head[:2])) or helps.get(tuple(c.head[:1])) if c.head[0] in ("nsys", "ncu") else None
            if text is None:
                continue
            for o in c.opts:
                flag = o.words[0].split("=", 1)[0]
                assert _known(text, flag), (name, c.line(), flag)
                checked += 1
        for f in plan.files:      # options of the nsys commands inside the wrapper scripts
            import re
            body = re.sub(r"\\\n", " ", f.content)
            for line in body.splitlines():
                if line.lstrip().startswith("#") or "nsys" not in line or "profile" not in line:
                    continue
                for flag in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", line.split("profile", 1)[1]):
                    assert _known(helps[("nsys", "profile")], flag), (name, f.name, flag)
                    checked += 1
    assert checked > 100
    # the values the playbook names, as the tools list them
    prof = helps[("nsys", "profile")]
    for value in ("'autograd-nvtx', 'autograd-shapes-nvtx', 'functions-trace' or 'none'",
                  "'none', 'stop', 'stop-shutdown', 'repeat[:N]'", "'none', 'sigkill', 'sigterm'",
                  "'process-tree', 'system-wide' or 'none'", "'graph' or 'node'"):
        assert value in prof
    for t in ("cuda", "nvtx", "osrt", "cudnn", "cublas", "mpi", "opengl", "vulkan"):
        assert f"'{t}'" in prof and t in sc.TRACE_VALUES
    assert "'nccl'" not in prof


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
    from golden import produce

    doc = produce("dataloader_bound")[0]
    top = doc["findings"][0]
    assert (top["rule"], top["severity"]) == ("data-io-bound", "high")
    f = doc["facts"]
    assert f["gpu_idle_data_pct"] > 80 and f["memcpy_pageable_share_pct"] == 100.0
    assert doc["window"]["source"] == "nvtx:step" and doc["window"]["iterations"] == 149
    w = doc["window"]
    assert abs(_gpu_active_pct("dataloader_bound", w["start_ns"], w["end_ns"]) - f["gpu_active_pct"]) < 0.01
    assert "host-bound" not in [x["rule"] for x in doc["findings"]]


def test_real_host_bound_profile():
    from golden import produce

    doc = produce("host_bound")[0]
    top = doc["findings"][0]
    assert (top["rule"], top["severity"]) == ("host-bound", "high")
    f = doc["facts"]
    assert f["gpu_idle_host_pct"] > 80 and f.get("gpu_idle_data_pct", 0) < 1
    w = doc["window"]
    assert abs(_gpu_active_pct("host_bound", w["start_ns"], w["end_ns"]) - f["gpu_active_pct"]) < 0.01
    assert "data-io-bound" not in [x["rule"] for x in doc["findings"]]


def test_next_steps_ask_for_the_os_runtime_trace_only_where_the_host_idles():
    """host-sleep / gil-contention lack the per-thread OS runtime trace: from CSVs, diagnose the SQLite export
    of the same report; from an SQLite export without OSRT_API, profile again with --trace=osrt; and only
    when the GPU idles while the host is outside CUDA."""
    ne = [{"rule": r, "missing": ["needs the per-thread OS runtime trace"], "facts": [f]}
          for r, f in (("host-sleep", "gpu_idle_sleep_pct"), ("gil-contention", "gpu_idle_gil_pct"))]
    csvs = [{"kind": "nsys-csv", "table": t, "version": "2023+", "path": f"x_{t}.csv"}
            for t in ("gpu_trace", "api_trace", "osrt_sum")]
    steps = sc.next_steps(ne, {"gpu_idle_host_pct": 40.0}, inputs=csvs, report="run.nsys-rep")
    assert [s["need"] for s in steps] == ["the per-thread OS runtime trace"]
    assert steps[0]["rules"] == ["gil-contention", "host-sleep"]
    assert steps[0]["commands"] == ["nsys export --type=sqlite --force-overwrite=true --output=run.sqlite run.nsys-rep",
                                    "nsys-expert diagnose run.sqlite"]
    sq = [{"kind": "nsys-sqlite", "table": t, "version": "2025.3", "path": "run.sqlite"} for t in ("gpu_trace", "api_trace")]
    steps = sc.next_steps(ne, {"gpu_idle_host_pct": 40.0}, inputs=sq, report="run.nsys-rep")
    assert "--trace=cuda,nvtx,osrt" in steps[0]["commands"][0] and steps[0]["commands"][-1] == "nsys-expert diagnose run.sqlite"
    assert sc.next_steps(ne, {"gpu_idle_host_pct": 1.0}, inputs=csvs, report="run.nsys-rep") == []
    assert sc.next_steps(ne, {}, inputs=csvs, report="run.nsys-rep") == []

