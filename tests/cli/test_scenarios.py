"""`nsys-expert command`: exact command strings, wrapper files, --explain, and every option against the
real tools' help (`collect` and the next steps: test_collect.py, test_next_steps.py)."""
import json
import os
import stat
import subprocess
import sys

import pytest
from click.testing import CliRunner

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
            assert why and "passed through" not in str(why), (name, flag)
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
