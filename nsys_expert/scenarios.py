"""From the situation to the right profile: the playbook's command templates as pure functions.

``build(scenario, Options(...))`` returns a :class:`Plan`: the exact command lines (nsys 2024-2025 /
Nsight Compute 2025 option spelling), the wrapper files some scenarios need, and why each option is
there (``Plan.explain``). ``next_steps(not_evaluated, facts)`` turns the rules a diagnosis could not
evaluate into the commands that collect what they lack. Nothing here runs a process or touches the
file system; ``cli_profiling`` does that.

Scenarios (playbook ``../shared/playbook.zh.txt``, templates A-G and the ncu templates):

=====================  =====  ==========================================================
quick                  A      single GPU, first look: CUDA + NVTX + OS runtime
pytorch                B      full PyTorch analysis (``--pytorch`` modes, Python backtraces)
torchrun               C      multi-GPU torchrun: a wrapper that profiles only chosen ranks
deepspeed              D      DeepSpeed: a ``%p`` wrapper script launched with ``--no_python``
nvtx-range             E1     capture only an NVTX-marked region
cuda-profiler-range    E2     capture between cudaProfilerStart / cudaProfilerStop
long-run               F      skip warm-up, sample a while, let the job go on
stats                  G      export every report nsys-expert's rules read (+ SQLite)
mpi                    --     mpirun / srun wrapper: GPU and NIC metrics on local rank 0 only
ncu-kernel             ncu A  one hot kernel, full metric set
ncu-roofline           ncu B  roofline: compute- vs memory-bound
ncu-training-step      ncu C  the kernels of one training step (launch skip / count)
ncu-compare            ncu D  before / after reports of two versions
=====================  =====  ==========================================================
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace

# The reports nsys-expert reads (facts/registry.py INPUTS): traces first, then summaries.
STATS_REPORTS = (
    "cuda_gpu_trace", "cuda_api_trace", "nvtx_pushpop_trace",
    "cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum",
    "nvtx_sum", "osrt_sum", "cuda_kern_exec_sum",
)
PYTORCH_MODES = ("autograd-nvtx", "autograd-shapes-nvtx", "functions-trace", "none")
# `nsys profile --trace` values of Nsight Systems 2025.3 (its --help); the playbook's `nccl` is not one:
# NCCL shows up as NVTX ranges (--trace=nvtx) and as kernels.
TRACE_VALUES = ("cuda", "cuda-hw", "nvtx", "cublas", "cublas-verbose", "cusolver", "cusolver-verbose", "cusparse",
                "cusparse-verbose", "mpi", "oshmem", "ucx", "osrt", "cudnn", "opengl", "opengl-annotations",
                "openacc", "openmp", "nvvideo", "vulkan", "vulkan-annotations", "python-gil", "gds", "cudla",
                "tegra-accelerators", "none")
DEFAULT_APP = ("python", "train.py")
NSYS_HELP = "Nsight Systems (https://developer.nvidia.com/nsight-systems; the CLI is also bundled " \
            "with Nsight Compute under host/target-linux-x64)"
NCU_HELP = "Nsight Compute (https://developer.nvidia.com/nsight-compute)"


# --------------------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Opt:
    """One option as it is printed: ``("--trace=cuda,nvtx",)`` or ``("--launch-count", "5")``."""
    words: tuple[str, ...]

    @property
    def key(self) -> str:
        w = self.words[0]
        return w.split("=", 1)[0] if w.startswith("--") else w


@dataclass(frozen=True)
class Command:
    """``head`` (tool + verb), options (one group per printed line), the application, an optional
    ``> stdout`` redirect (ncu CSV exports)."""
    head: tuple[str, ...]
    opts: tuple[Opt, ...] = ()
    app: tuple[str, ...] = ()
    stdout: str | None = None

    @property
    def argv(self) -> list[str]:
        return [*self.head, *(w for o in self.opts for w in o.words), *self.app]

    def line(self) -> str:
        """One shell line (what the tests pin down)."""
        s = " ".join(quote(a) for a in self.argv)
        return s + (f" > {quote(self.stdout)}" if self.stdout else "")

    def multiline(self, indent: str = "  ") -> str:
        """The playbook's layout: one option per line, the application last (long commands only)."""
        if len(self.opts) < 3 or len(self.line()) <= 100:
            return self.line()
        parts = [" ".join(quote(a) for a in self.head)]
        parts += [indent + " ".join(quote(a) for a in o.words) for o in self.opts]
        tail = " ".join(quote(a) for a in self.app)
        if self.stdout:
            tail = (tail + " " if tail else "") + f"> {quote(self.stdout)}"
        if tail:
            parts.append(indent + tail)
        return " \\\n".join(parts)


@dataclass(frozen=True)
class WrapperFile:
    name: str
    content: str
    executable: bool = True


@dataclass
class Plan:
    scenario: str
    title: str
    commands: list[Command]
    files: list[WrapperFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    container: list[str] = field(default_factory=list)   # lines to run / paste before the commands
    explain: list[tuple[str, str]] = field(default_factory=list)  # (option as printed, why)
    outputs: list[str] = field(default_factory=list)      # what the commands write

    def lines(self) -> list[str]:
        return [c.line() for c in self.commands]

    def shell(self, multiline: bool = True) -> str:
        return "\n".join(c.multiline() if multiline else c.line() for c in self.commands)


@dataclass(frozen=True)
class Options:
    app: tuple[str, ...] = DEFAULT_APP
    output: str | None = None            # report name (no extension)
    trace: str | None = None             # overrides the scenario's --trace list
    pytorch: tuple[str, ...] = ("autograd-nvtx",)
    ranks: tuple[int, ...] = (0,)
    nproc_per_node: int = 8
    nnodes: int = 1
    range_name: str = "profile_region"
    delay: int = 120
    duration: int = 30
    kernel: str | None = None            # ncu kernel-name regex (without the regex: prefix)
    launch_skip: int | None = None
    launch_count: int | None = None
    input: str | None = None             # stats: the .nsys-rep to export
    before: tuple[str, ...] | None = None
    after: tuple[str, ...] | None = None
    cuda_graph_trace: str | None = None  # graph | node
    container: str | None = None         # docker | k8s
    extra: tuple[str, ...] = ()          # more nsys / ncu options, passed through as given
    wrapper_dir: str | None = None       # where the wrapper files are written (for the launch command)
    lang: str = "en"


# ------------------------------------------------------------------------------------ quoting
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def quote(arg: str) -> str:
    """Shell quoting in the playbook's style: bare when safe, "double quotes" when that is enough."""
    if arg and _SAFE.match(arg):
        return arg
    if not re.search(r'["\\$`!]', arg):
        return f'"{arg}"'
    return shlex.quote(arg)


# ------------------------------------------------------------------------- why each option is there
# From the playbook's option tables (third step, "core CLI options"), en and zh.
TRACE_DOC = {
    "cuda": ("CUDA runtime & driver API: required for every GPU workload", "CUDA Runtime & Driver API：所有 GPU 工作负载必选"),
    "nvtx": ("NVTX annotations: your step / phase ranges (nsys-expert finds iterations with them)", "NVTX 标注：用于代码段标记（nsys-expert 用它识别迭代）"),
    "osrt": ("OS runtime (pthread, file I/O): DataLoader / I/O bottlenecks", "OS Runtime（pthread、文件 I/O 等）：分析 DataLoader / I/O 瓶颈"),
    "cudnn": ("cuDNN API: DL training (conv, RNN ...)", "cuDNN API：DL 训练（conv、RNN 等）"),
    "cublas": ("cuBLAS API: matrix work (linear layers)", "cuBLAS API：矩阵运算（线性层）"),
    "mpi": ("MPI API: multi-node distributed training", "MPI API：多机分布式训练"),
    "opengl": ("OpenGL API: graphics", "OpenGL API：图形应用"),
    "vulkan": ("Vulkan API: graphics", "Vulkan API：图形应用"),
    "nccl": ("NCCL communication (playbook; not a --trace value of nsys 2024-2025: NCCL shows as NVTX ranges)",
             "NCCL 通信（需插件；nsys 2024-2025 无此 --trace 值，NCCL 以 NVTX 区间呈现）"),
}

OPTION_DOC: dict[str, tuple[str, str]] = {
    "--output": ("report file name without extension; %p is replaced by the PID, %h by the host name",
                 "输出文件名（不含扩展名）；%p 替换为 PID，%h 替换为 hostname"),
    "--force-overwrite": ("overwrite an existing report of the same name instead of failing", "覆盖已有文件"),
    "--cuda-memory-usage": ("track the GPU memory each CUDA kernel uses (adds overhead)", "跟踪 CUDA kernel 的 GPU 显存使用（有开销）"),
    "--pytorch": ("PyTorch's own NVTX annotation: autograd-nvtx marks every autograd op, autograd-shapes-nvtx adds "
                  "tensor shapes, functions-trace traces PyTorch functions (network structure); combinable, none disables",
                  "PyTorch 专用：autograd-nvtx 自动为 autograd 操作添加 NVTX 标注，autograd-shapes-nvtx 额外记录 tensor shape，"
                  "functions-trace 追踪 PyTorch 函数调用（网络结构与执行信息）；可组合，none 禁用"),
    "--cudabacktrace": ("collect the call stack of CUDA API calls (expensive)", "为 CUDA API 调用采集调用栈（开销大）"),
    "--python-backtrace": ("collect the Python call stack at each CUDA API call", "在 CUDA API 调用时采集 Python 调用栈"),
    "--python-sampling": ("sample Python call stacks (what the interpreter is doing between launches)", "采集 Python 调用栈采样"),
    "--capture-range": ("what starts the capture: none (immediately), cudaProfilerApi, nvtx, hotkey",
                        "采集触发方式：none（立即）、cudaProfilerApi、nvtx、hotkey"),
    "--nvtx-capture": ("the NVTX range (push/pop or start/end) whose first occurrence starts the capture",
                       "以该 NVTX 区间触发采集"),
    "--capture-range-end": ("what happens when the range ends: stop (stop collecting, let the app run), "
                            "stop-shutdown, repeat[:N]", "采集结束行为：stop、stop-shutdown、repeat[:N]"),
    "--env-var": ("NSYS_NVTX_PROFILER_REGISTER_ONLY=0: match NVTX ranges pushed with plain (unregistered) strings, "
                  "which is what torch.cuda.nvtx and the nvtx package emit; without it the capture never starts",
                  "NSYS_NVTX_PROFILER_REGISTER_ONLY=0：让未注册的 NVTX 字符串（torch.cuda.nvtx、nvtx 包）也能触发采集，否则采集不会开始"),
    "--delay": ("seconds to wait after launch before collecting (skip start-up and warm-up)", "启动后等待若干秒再开始采集（跳过 warmup）"),
    "--duration": ("seconds to collect, then stop", "采集若干秒后停止"),
    "--kill": ("signal sent to the app when collection ends: sigterm (default) or none (let training continue)",
               "采集结束后是否终止应用：sigterm（默认）、none（让训练继续）"),
    "--sample": ("CPU sampling scope: process-tree (default), system-wide, none", "CPU 采样范围：process-tree（默认）、system-wide、none"),
    "--backtrace": ("how CPU samples are unwound: auto, dwarf, fp, lbr, none", "回溯方式：auto、dwarf、fp、lbr、none"),
    "--export": ("extra export written after the run: sqlite, jsonlines, arrow, none", "额外导出格式：sqlite、jsonlines、arrow、none"),
    "--cuda-graph-trace": ("graph: a CUDA graph launch is one range (low overhead, its kernels are NOT in cuda_gpu_trace); "
                           "node: every kernel of the graph is traced (nsys-expert needs it to judge GPU idle time)",
                           "graph：CUDA Graph 整体追踪（低开销，但 cuda_gpu_trace 中没有图内 kernel）；node：追踪图内每个 kernel"),
    "--cuda-trace-scope": ("trace CUDA in the target process and its children (process-tree) or system-wide",
                           "追踪目标进程及子进程的 CUDA 活动"),
    "--gpu-metrics-devices": ("sample GPU hardware metrics (SM activity, memory bandwidth, PCIe / NVLink) of these GPUs",
                              "采集 GPU 指标"),
    "--gpu-metrics-frequency": ("GPU metrics sampling rate in Hz (default 10 kHz)", "GPU 指标采样频率（Hz），默认 10KHz"),
    "--nic-metrics": ("sample NIC / HCA network counters (InfiniBand, RoCE)", "采集 NIC/HCA 网络指标"),
    "--stats": ("print the default summary reports when the run ends", "采集结束时直接生成统计"),
    # nsys stats / export
    "--report": ("the reports to write; the traces (cuda_gpu_trace, cuda_api_trace, nvtx_pushpop_trace) let nsys-expert "
                 "find the steady-state window and say why the GPU is idle; the summaries fill in the rest",
                 "要导出的报告；trace 报告让 nsys-expert 找到稳态窗口并判断 GPU 空闲原因，汇总报告补充其余信息"),
    "--format": ("csv: the format nsys-expert reads", "csv：nsys-expert 读取的格式"),
    "--type": ("export the whole report as an SQLite database (every table, for custom SQL and nsys-expert)",
               "导出 SQLite 数据库（用 Python/SQL 自定义分析）"),
    "--force-export": ("re-create the SQLite export even if one exists", "即使已有 SQLite 也重新导出"),
    # ncu
    "--set": ("metric set: full = every section (throughput, occupancy, stalls, memory); roofline = the roofline charts",
              "指标集合：full 为全部 section；roofline 为 Roofline 模型"),
    "--target-processes": ("profile kernels in child processes too (python launchers, torchrun)", "同时分析子进程中的 kernel"),
    "--kernel-name": ("only kernels whose name matches (regex: prefix = regular expression)", "仅分析名称匹配的 kernel（regex: 前缀为正则表达式）"),
    "--launch-count": ("stop after this many profiled kernel launches (each one is replayed many times: keep it small)",
                       "只分析这么多次 kernel 启动（每次都要重放多遍，保持小）"),
    "--launch-skip": ("skip this many kernel launches first (warm-up) before profiling", "先跳过这么多次 kernel 启动（warm-up）"),
    "-o": ("write the results to this report file (.ncu-rep is added)", "输出报告文件（自动加 .ncu-rep）"),
    "-f": ("overwrite an existing report of the same name", "覆盖已有文件"),
    "-i": ("read an existing report instead of profiling", "读取已有报告"),
    "--csv": ("print comma-separated values (what nsys-expert reads)", "以 CSV 输出"),
    "--page": ("details = one row per metric of each section (nsys-expert's input); raw = every collected metric",
               "details：每个 section 的指标；raw：所有采集的原始指标"),
    # launchers
    "--nnodes": ("number of nodes of the torchrun job", "torchrun 的节点数"),
    "--nproc-per-node": ("processes (GPUs) per node", "每个节点的进程（GPU）数"),
    "--no_python": ("the DeepSpeed launcher runs the wrapper script itself instead of 'python <script>'",
                    "让 DeepSpeed launcher 直接执行 wrapper 脚本，而不是 python <脚本>"),
    "--num_gpus": ("GPUs per node for the DeepSpeed launcher", "DeepSpeed 每个节点使用的 GPU 数"),
    "-np": ("number of MPI ranks (nodes x GPUs per node)", "MPI 进程数（节点数 x 每节点 GPU 数）"),
    "--cap-add": ("SYS_ADMIN (performance counters, GPU metrics) and SYS_PTRACE (process tracing, backtraces): "
                  "nsys and ncu need both inside a container", "容器内使用 nsys / ncu 需要 SYS_ADMIN 和 SYS_PTRACE 权限"),
}
ALIASES = {"-t": "--trace", "-o": "--output", "-f": "--force-overwrite", "-d": "--duration", "-y": "--delay",
           "-c": "--capture-range", "-s": "--sample", "-b": "--backtrace", "-r": "--report", "-k": "--kernel-name"}


VERB_DOC = {
    ("export", "--output"): ("the SQLite file to write", "要写入的 SQLite 文件"),
    ("export", "--force-overwrite"): ("replace an older export of the same name", "覆盖同名的旧导出"),
    ("stats", "--output"): ("prefix of the CSV files: one PREFIX_<report>.csv per report", "CSV 文件前缀：每个报告一个 PREFIX_<report>.csv"),
}


def explain_option(opt: Opt, tool: str = "nsys", lang: str = "en", verb: str = "") -> str:
    i = 1 if lang == "zh" else 0
    key = opt.key
    if (verb, key) in VERB_DOC:
        return VERB_DOC[(verb, key)][i]
    if tool == "ncu" and key in ("-o", "-f", "-i"):
        return OPTION_DOC[key][i]
    key = ALIASES.get(key, key)
    if key == "--trace":
        value = opt.words[0].split("=", 1)[1] if "=" in opt.words[0] else (opt.words[1] if len(opt.words) > 1 else "")
        parts = [f"{v} = {TRACE_DOC[v][i]}" for v in value.split(",") if v in TRACE_DOC]
        head = "要采集哪些 API 的 trace" if lang == "zh" else "which APIs to trace"
        return head + ": " + "; ".join(parts)
    if key in OPTION_DOC:
        return OPTION_DOC[key][i]
    return "（直接传给工具的选项）" if lang == "zh" else "passed through to the tool as given"


def _explain(plan: Plan, lang: str) -> list[tuple[str, str]]:
    seen, out = set(), []
    for c in plan.commands:
        tool = "ncu" if c.head and c.head[0] == "ncu" else "nsys"
        verb = c.head[1] if len(c.head) > 1 else ""
        for o in c.opts:
            why = explain_option(o, tool, lang, verb)
            if (c.head, o.key, why) in seen:
                continue
            seen.add((c.head, o.key, why))
            out.append((" ".join(quote(w) for w in o.words), why))
    return out


# ------------------------------------------------------------------------------------ builders
def _o(*words) -> Opt:
    return Opt(tuple(str(w) for w in words))


def _nsys_common(opts: Options) -> list[Opt]:
    out = []
    if opts.cuda_graph_trace:
        out.append(_o(f"--cuda-graph-trace={opts.cuda_graph_trace}"))
    out += [_o(w) for w in opts.extra]
    return out


def _nsys_profile(trace: str, middle: list[Opt], output: str, opts: Options, force: bool = True) -> Command:
    o = [_o(f"--trace={opts.trace or trace}"), *middle, *_nsys_common(opts), _o(f"--output={output}")]
    if force:
        o.append(_o("--force-overwrite=true"))
    return Command(("nsys", "profile"), tuple(o), tuple(opts.app))


def _stats_commands(rep: str) -> tuple[list[Command], str, str]:
    """nsys export + nsys stats for ``rep`` (a .nsys-rep): -> commands, sqlite path, csv folder."""
    base = rep[:-len(".nsys-rep")] if rep.endswith(".nsys-rep") else rep
    rep_file = base + ".nsys-rep"
    sqlite = base + ".sqlite"
    stem = base.rsplit("/", 1)[-1]
    csv_dir = base + "_csv"
    cmds = [
        Command(("nsys", "export"), (_o("--type=sqlite"), _o("--force-overwrite=true"), _o(f"--output={sqlite}")), (rep_file,)),
        Command(("mkdir", "-p", csv_dir)),
        Command(("nsys", "stats"), (_o("--report", ",".join(STATS_REPORTS)), _o("--format", "csv"),
                                    _o("--output", f"{csv_dir}/{stem}")), (sqlite,)),
        Command(("nsys-expert", "diagnose", csv_dir)),
    ]
    return cmds, sqlite, csv_dir


def _follow_up(plan: Plan, rep: str) -> None:
    plan.notes.append(f"then export what nsys-expert reads: nsys-expert command stats --input {rep}.nsys-rep")


def _wrapper_path(opts: Options, name: str, here: str = "") -> str:
    d = (opts.wrapper_dir or "").rstrip("/")
    if d in ("", "."):
        return here + name
    return f"{d}/{name}"


def quick(opts: Options) -> Plan:
    out = opts.output or "report_output"
    c = _nsys_profile("cuda,nvtx,osrt", [_o("--cuda-memory-usage=true")], out, opts)
    p = Plan("quick", "A: single-GPU training, quick look (CUDA + NVTX + OS runtime)", [c], outputs=[f"{out}.nsys-rep"])
    p.notes.append("mark each training step with an NVTX range (torch.cuda.nvtx.range_push('step') / range_pop()): "
                   "nsys-expert uses it to leave start-up out of the diagnosis")
    _follow_up(p, out)
    return p


def pytorch(opts: Options) -> Plan:
    out = opts.output or "dl_profile"
    modes = [m for part in opts.pytorch for m in part.split(",") if m]
    bad = [m for m in modes if m not in PYTORCH_MODES]
    if bad:
        raise ValueError(f"--pytorch {','.join(bad)}: not one of {', '.join(PYTORCH_MODES)}")
    if "none" in modes and len(modes) > 1:
        raise ValueError("--pytorch none cannot be combined with other modes")
    middle = [_o(f"--pytorch={','.join(modes)}"), _o("--cudabacktrace=all"), _o("--python-backtrace=cuda"),
              _o("--python-sampling=true"), _o("--cuda-memory-usage=true")]
    c = _nsys_profile("cuda,cudnn,cublas,osrt,nvtx", middle, out, opts)
    p = Plan("pytorch", "B: full PyTorch analysis (CUDA / cuDNN / cuBLAS / NVTX + Python sampling)", [c],
             outputs=[f"{out}.nsys-rep"])
    p.notes.append("--cudabacktrace=all and --python-sampling=true are expensive: profile a short run "
                   "(a few hundred steps), or combine with nsys-expert command nvtx-range")
    _follow_up(p, out)
    return p


TORCHRUN_WRAPPER = '''#!/usr/bin/env python3
"""torchrun starts this instead of the training script: the chosen ranks run under nsys, the others plainly.

Written by: nsys-expert command torchrun{args}
Launch:     {launch}
"""
import os
import subprocess
import sys

PROFILE_RANKS = {ranks}
NSYS = ["nsys", "profile", "-t", "{trace}"{extra}]

rank = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))
app = [sys.executable] + sys.argv[1:]
if rank in PROFILE_RANKS:
    # one report per rank: ranks never overwrite each other, also on a shared file system
    command = NSYS + ["-o", f"{output}", "-f", "true"] + app
else:
    command = app
sys.exit(subprocess.run(command).returncode)
'''


def torchrun(opts: Options) -> Plan:
    ranks = sorted(set(opts.ranks))
    world = opts.nproc_per_node * opts.nnodes
    if any(r < 0 or r >= world for r in ranks):
        raise ValueError(f"--ranks {','.join(map(str, ranks))}: ranks run from 0 to {world - 1} "
                         f"({opts.nnodes} node(s) x {opts.nproc_per_node})")
    output = opts.output or "rank{rank}_profile"
    if "{rank}" not in output:
        output += "_rank{rank}"
    extra = "".join(f', "{w}"' for o in _nsys_common(opts) for w in o.words)
    app = list(opts.app)
    script_args = app[1:] if app and re.match(r"^python[0-9.]*$", app[0]) else app
    launch = Command(("torchrun",), (_o(f"--nnodes={opts.nnodes}"), _o(f"--nproc-per-node={opts.nproc_per_node}")),
                     (_wrapper_path(opts, "run_nsys.py"), *script_args))
    args = f" --ranks {','.join(map(str, ranks))} --nproc-per-node {opts.nproc_per_node}" + \
        (f" --nnodes {opts.nnodes}" if opts.nnodes != 1 else "")
    content = TORCHRUN_WRAPPER.format(args=args, launch=launch.line(), ranks="{" + ", ".join(map(str, ranks)) + "}",
                                      trace=opts.trace or "cuda,nvtx,cudnn", extra=extra, output=output)
    p = Plan("torchrun", "C: multi-GPU torchrun, profile chosen ranks only", [launch],
             [WrapperFile("run_nsys.py", content)],
             outputs=[output.replace("{rank}", str(r)) + ".nsys-rep" for r in ranks])
    p.notes.append(f"run_nsys.py profiles global rank(s) {', '.join(map(str, ranks))} (RANK, set by torchrun) "
                   "and runs every other rank without nsys: one report per profiled rank, no collisions, "
                   "and the other ranks keep their normal speed")
    p.explain.append(('run_nsys.py: -t ' + (opts.trace or "cuda,nvtx,cudnn"),
                      explain_option(_o("-t", opts.trace or "cuda,nvtx,cudnn"), "nsys", opts.lang)))
    p.explain.append(("run_nsys.py: -o " + output,
                      "one report per profiled rank ({rank} = its global rank)" if opts.lang != "zh"
                      else "每个被采集的 rank 一个报告（{rank} 为全局 rank）"))
    _follow_up(p, output.replace("{rank}", str(ranks[0])))
    return p


DEEPSPEED_WRAPPER = '''#!/bin/bash
# DeepSpeed runs this script in place of python (deepspeed --no_python): every process is profiled,
# and %p (the PID) gives each process its own report.
# Written by: nsys-expert command deepspeed
# Launch:     {launch}
exec nsys profile \\
  -t {trace} \\
{extra}  -o {output} \\
  python "$@"
'''


def deepspeed(opts: Options) -> Plan:
    output = opts.output or "deepspeed_profile.%p"
    if "%p" not in output:
        output += ".%p"
    extra = "".join(f"  {' '.join(quote(w) for w in o.words)} \\\n" for o in _nsys_common(opts))
    app = list(opts.app)
    script_args = app[1:] if app and re.match(r"^python[0-9.]*$", app[0]) else app
    ds_opts = [_o("--no_python")]
    if opts.nproc_per_node != 8:
        ds_opts.append(_o(f"--num_gpus={opts.nproc_per_node}"))
    launch = Command(("deepspeed",), tuple(ds_opts), (_wrapper_path(opts, "nsys_profile.sh", "./"), *script_args))
    content = DEEPSPEED_WRAPPER.format(launch=launch.line(), trace=opts.trace or "cuda,mpi,nvtx,cudnn",
                                       extra=extra, output=output)
    p = Plan("deepspeed", "D: DeepSpeed, every process through an nsys wrapper script", [launch],
             [WrapperFile("nsys_profile.sh", content)], outputs=[output.replace("%p", "<PID>") + ".nsys-rep"])
    p.notes.append("--no_python makes the launcher run ./nsys_profile.sh itself (not 'python ./nsys_profile.sh'); "
                   "%p in -o becomes each process's PID, so ranks never overwrite each other's report")
    p.explain.append(("nsys_profile.sh: -t " + (opts.trace or "cuda,mpi,nvtx,cudnn"),
                      explain_option(_o("-t", opts.trace or "cuda,mpi,nvtx,cudnn"), "nsys", opts.lang)))
    p.explain.append(("nsys_profile.sh: -o " + output, OPTION_DOC["--output"][1 if opts.lang == "zh" else 0]))
    return p


def nvtx_range(opts: Options) -> Plan:
    out = opts.output or "nvtx_range_profile"
    middle = [_o("--capture-range=nvtx"), _o(f"--nvtx-capture={opts.range_name}"), _o("--capture-range-end=stop"),
              _o("--env-var=NSYS_NVTX_PROFILER_REGISTER_ONLY=0")]
    c = Command(("nsys", "profile"), tuple([*middle, _o(f"--trace={opts.trace or 'cuda,nvtx'}"), *_nsys_common(opts),
                                            _o(f"--output={out}"), _o("--force-overwrite=true")]), tuple(opts.app))
    p = Plan("nvtx-range", f"E1: capture only the NVTX range '{opts.range_name}'", [c], outputs=[f"{out}.nsys-rep"])
    p.notes.append(f"in the code, around the steps to profile: torch.cuda.nvtx.range_push(\"{opts.range_name}\") ... "
                   "torch.cuda.nvtx.range_pop() (or nvtx.range_push / nvtx.range_pop from the nvtx package); "
                   "put a 'step' range inside it for every iteration")
    _follow_up(p, out)
    return p


def cuda_profiler_range(opts: Options) -> Plan:
    out = opts.output or "cuda_profiler_range_profile"
    middle = [_o("--capture-range=cudaProfilerApi"), _o("--capture-range-end=stop")]
    c = Command(("nsys", "profile"), tuple([*middle, _o(f"--trace={opts.trace or 'cuda,nvtx'}"), *_nsys_common(opts),
                                            _o(f"--output={out}"), _o("--force-overwrite=true")]), tuple(opts.app))
    p = Plan("cuda-profiler-range", "E2: capture between cudaProfilerStart and cudaProfilerStop", [c],
             outputs=[f"{out}.nsys-rep"])
    p.notes.append("in the code: torch.cuda.cudart().cudaProfilerStart() before the steps to profile, "
                   "torch.cuda.cudart().cudaProfilerStop() after them")
    _follow_up(p, out)
    return p


def long_run(opts: Options) -> Plan:
    out = opts.output or "long_run_profile"
    if opts.delay < 0 or opts.duration <= 0:
        raise ValueError("--delay must be >= 0 and --duration > 0 (seconds)")
    middle = [_o(f"--delay={opts.delay}"), _o(f"--duration={opts.duration}"), _o("--kill=none")]
    c = _nsys_profile("cuda,nvtx,osrt", middle, out, opts, force=False)
    p = Plan("long-run", f"F: long job, skip {opts.delay} s of warm-up, sample {opts.duration} s, let training go on",
             [c], outputs=[f"{out}.nsys-rep"])
    _follow_up(p, out)
    return p


def stats(opts: Options) -> Plan:
    rep = opts.input or "report.nsys-rep"
    cmds, sqlite, csv_dir = _stats_commands(rep)
    p = Plan("stats", "G: export every report nsys-expert reads (traces included) and the SQLite database", cmds,
             outputs=[sqlite, f"{csv_dir}/*.csv"])
    p.notes.append("the traces (cuda_gpu_trace, cuda_api_trace, nvtx_pushpop_trace) are what let nsys-expert find the "
                   "steady state and say why the GPU idles; a default 'nsys stats' or --stats=true gives summaries only")
    p.notes.append("a report with no rows (e.g. osrt_sum without --trace=osrt) is written as an empty file or skipped: "
                   "nsys-expert lists the rules that needed it as not evaluated")
    return p


MPI_WRAPPER = '''#!/bin/bash
# mpirun / srun run this in place of the application: every rank is profiled, and the GPU and NIC
# metrics (sampled per device, for the whole node) are collected by each node's local rank 0 only.
# Written by: nsys-expert command mpi
# Launch:     {launch}
LOCAL_RANK=${{OMPI_COMM_WORLD_LOCAL_RANK:-${{SLURM_LOCALID:-${{MPI_LOCALRANKID:-0}}}}}}
if [ "$LOCAL_RANK" -eq 0 ]; then
    exec nsys profile {common} --nic-metrics=true --gpu-metrics-devices=all "$@"
else
    exec nsys profile {common} "$@"
fi
'''


def mpi(opts: Options) -> Plan:
    output = opts.output or "mpi_profile.%h.%p"
    common = [_o(f"--trace={opts.trace or 'cuda,nvtx,osrt,mpi'}"), *_nsys_common(opts), _o(f"--output={output}"),
              _o("--force-overwrite=true")]
    n = opts.nproc_per_node * opts.nnodes
    launch = Command(("mpirun",), (_o("-np", n),), (_wrapper_path(opts, "nsys_mpi.sh", "./"), *opts.app))
    content = MPI_WRAPPER.format(launch=launch.line(), common=" ".join(quote(w) for o in common for w in o.words))
    p = Plan("mpi", "MPI / Slurm: every rank profiled, GPU and NIC metrics on local rank 0 only", [launch],
             [WrapperFile("nsys_mpi.sh", content)], outputs=[output.replace("%h", "<host>").replace("%p", "<PID>") + ".nsys-rep"])
    p.notes.append("with Slurm: srun --ntasks-per-node=N ./nsys_mpi.sh python train.py (SLURM_LOCALID picks the local rank)")
    p.notes.append("GPU metrics sample every GPU of the node and NIC metrics every adapter: two ranks of one node "
                   "asking for them would collide, so only local rank 0 does")
    for o in common:
        p.explain.append(("nsys_mpi.sh: " + " ".join(o.words), explain_option(o, "nsys", opts.lang)))
    for flag in ("--nic-metrics=true", "--gpu-metrics-devices=all"):
        p.explain.append(("nsys_mpi.sh (local rank 0): " + flag, explain_option(_o(flag), "nsys", opts.lang)))
    return p


def ncu_exports(rep: str) -> list[Command]:
    """``ncu -i X.ncu-rep --csv --page details|raw > ...``: the CSVs nsys-expert reads."""
    base = rep[:-len(".ncu-rep")] if rep.endswith(".ncu-rep") else rep
    return [Command(("ncu",), (_o("-i", f"{base}.ncu-rep"), _o("--csv"), _o("--page", page)), (), f"{base}_{page}.csv")
            for page in ("details", "raw")]


def _ncu(set_: str, opts: Options, extra: list[Opt], out: str, app=None, target_all: bool = True) -> Command:
    o = [_o("--set", set_)]
    if target_all:
        o.append(_o("--target-processes", "all"))
    o += extra + [_o(w) for w in opts.extra] + [_o("-o", out), _o("-f")]
    return Command(("ncu",), tuple(o), tuple(app if app is not None else opts.app))


def _kernel_opt(opts: Options, default: str) -> Opt:
    k = opts.kernel or default
    return _o("--kernel-name", k if k.startswith(("regex:", "demangled:", "mangled:")) else f"regex:{k}")


def ncu_kernel(opts: Options) -> Plan:
    out = opts.output or "ncu_kernel"
    skip = [] if opts.launch_skip is None else [_o("--launch-skip", opts.launch_skip)]
    c = _ncu("full", opts, [_kernel_opt(opts, ".*my_kernel.*"), *skip, _o("--launch-count", opts.launch_count or 5)], out)
    p = Plan("ncu-kernel", "ncu A: one hot kernel, the full metric set", [c, *ncu_exports(out)],
             outputs=[f"{out}.ncu-rep", f"{out}_details.csv", f"{out}_raw.csv"])
    p.notes.append("take the kernel name from nsys-expert's top-kernel table (or nsys stats -r cuda_gpu_kern_sum); "
                   "ncu replays each kernel many times, so keep --launch-count small")
    p.notes.append(f"then: nsys-expert diagnose <nsys CSV folder> {out}_details.csv")
    return p


def ncu_roofline(opts: Options) -> Plan:
    out = opts.output or "roofline_report"
    c = _ncu("roofline", opts, [_kernel_opt(opts, ".*matmul.*"), _o("--launch-count", opts.launch_count or 3)], out,
             target_all=False)
    p = Plan("ncu-roofline", "ncu B: roofline (compute- vs memory-bound)", [c, *ncu_exports(out)],
             outputs=[f"{out}.ncu-rep", f"{out}_details.csv", f"{out}_raw.csv"])
    p.notes.append("under the bandwidth slope = memory-bound (cut traffic, coalesce, tile); under the compute roof = "
                   "compute-bound (mixed precision, tensor cores); far from both = latency, divergence or spills")
    return p


def ncu_training_step(opts: Options) -> Plan:
    out = opts.output or "training_kernels"
    skip = 1000 if opts.launch_skip is None else opts.launch_skip
    count = opts.launch_count or 50
    c = _ncu("full", opts, [_o("--launch-skip", skip), _o("--launch-count", count)], out)
    p = Plan("ncu-training-step", f"ncu C: the kernels of one training step (skip {skip}, profile {count})",
             [c, *ncu_exports(out)], outputs=[f"{out}.ncu-rep", f"{out}_details.csv", f"{out}_raw.csv"])
    p.notes.append("--launch-skip should pass start-up and warm-up; set it to (kernels per step from nsys-expert's "
                   "kernels_per_iter) x (steps to skip), and --launch-count to one step's kernels")
    return p


def ncu_compare(opts: Options) -> Plan:
    before = list(opts.before or ("python", "train_v0.py"))
    after = list(opts.after or ("python", "train_v1.py"))
    cmds = [_ncu("full", opts, [], "before", before, target_all=False),
            _ncu("full", opts, [], "after", after, target_all=False)]
    cmds += ncu_exports("before") + ncu_exports("after")
    p = Plan("ncu-compare", "ncu D: before / after reports of two versions", cmds,
             outputs=["before.ncu-rep", "after.ncu-rep", "before_details.csv", "after_details.csv"])
    p.notes.append("open both in ncu-ui (ncu-ui before.ncu-rep after.ncu-rep) and set 'before' as the baseline; "
                   "add --kernel-name / --launch-count (--kernel) to compare the same kernels")
    return p


SCENARIOS = {
    "quick": ("A", quick), "pytorch": ("B", pytorch), "torchrun": ("C", torchrun), "deepspeed": ("D", deepspeed),
    "nvtx-range": ("E1", nvtx_range), "cuda-profiler-range": ("E2", cuda_profiler_range), "long-run": ("F", long_run),
    "stats": ("G", stats), "mpi": ("-", mpi), "ncu-kernel": ("ncu A", ncu_kernel), "ncu-roofline": ("ncu B", ncu_roofline),
    "ncu-training-step": ("ncu C", ncu_training_step), "ncu-compare": ("ncu D", ncu_compare),
}
# The scenarios `collect` can run: one `nsys profile` of one process tree.
COLLECTABLE = ("quick", "pytorch", "nvtx-range", "cuda-profiler-range", "long-run")

SITUATIONS = {
    "quick": "single-GPU training or inference, first look (most common)",
    "pytorch": "PyTorch script, full analysis: autograd ops as NVTX ranges, Python backtraces",
    "torchrun": "multi-GPU job started with torchrun: profile only the ranks you choose",
    "deepspeed": "job started with the deepspeed launcher",
    "nvtx-range": "only an NVTX-marked part of the run (a few steps after warm-up)",
    "cuda-profiler-range": "only the part between cudaProfilerStart / cudaProfilerStop",
    "long-run": "long training job: skip the warm-up, sample a window, let it continue",
    "stats": "you have a .nsys-rep: export the reports nsys-expert reads",
    "mpi": "mpirun / srun job: every rank, GPU and NIC metrics on one rank per node",
    "ncu-kernel": "nsys named a hot kernel: why is it slow (full ncu metric set)",
    "ncu-roofline": "is a kernel compute- or memory-bound (roofline)",
    "ncu-training-step": "every kernel of one training step, after warm-up",
    "ncu-compare": "before / after an optimisation, kernel by kernel",
}


def _container(plan: Plan, kind: str, lang: str) -> None:
    if kind == "docker":
        plan.container.append("docker run --gpus all --cap-add=SYS_ADMIN --cap-add=SYS_PTRACE ... IMAGE")
    elif kind == "k8s":
        plan.container.append("securityContext:\n  capabilities:\n    add: [\"SYS_ADMIN\", \"SYS_PTRACE\"]")
        plan.files.append(WrapperFile("nsys-security-context.yaml",
                                      "# nsys / ncu inside a pod: add to the container spec\n"
                                      "securityContext:\n  capabilities:\n    add: [\"SYS_ADMIN\", \"SYS_PTRACE\"]\n",
                                      executable=False))
    else:
        raise ValueError(f"--container {kind}: use docker or k8s")
    plan.explain.append(("--cap-add=SYS_ADMIN --cap-add=SYS_PTRACE" if kind == "docker"
                         else "capabilities: SYS_ADMIN, SYS_PTRACE", OPTION_DOC["--cap-add"][1 if lang == "zh" else 0]))


def build(scenario: str, opts: Options | None = None) -> Plan:
    """The commands, wrapper files and explanations for one scenario. ValueError on bad options."""
    opts = opts or Options()
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario '{scenario}' (one of: {', '.join(SCENARIOS)})")
    if opts.trace:
        if "nccl" in opts.trace.split(","):
            raise ValueError("--trace nccl: not an nsys --trace value (2024-2025); NCCL calls are NVTX ranges "
                             "(keep nvtx in --trace) and NCCL kernels are in the CUDA trace")
        bad = [v for v in opts.trace.split(",") if v not in TRACE_VALUES]
        if bad:
            raise ValueError(f"--trace {opts.trace}: unknown value(s) {', '.join(bad)}")
    if opts.cuda_graph_trace not in (None, "graph", "node"):
        raise ValueError(f"--cuda-graph-trace {opts.cuda_graph_trace}: use graph or node")
    if opts.nproc_per_node < 1 or opts.nnodes < 1:
        raise ValueError("--nproc-per-node and --nnodes must be at least 1")
    if not opts.app and scenario not in ("stats", "ncu-compare"):
        raise ValueError("no application command (give it after --, e.g. -- python train.py)")
    plan = SCENARIOS[scenario][1](opts)
    plan.explain = _explain(plan, opts.lang) + plan.explain
    if opts.container:
        _container(plan, opts.container, opts.lang)
    return plan


def profile_command(scenario: str, opts: Options) -> list[str]:
    """The ``nsys profile`` argv ``collect`` runs for ``scenario`` (one of COLLECTABLE); ``opts.output`` is the
    report path without extension."""
    if scenario not in COLLECTABLE:
        raise ValueError(f"collect runs one nsys profile; scenario '{scenario}' is not one of {', '.join(COLLECTABLE)} "
                         f"(nsys-expert command {scenario} prints its commands)")
    output = opts.output or "profile"
    plan = build(scenario, replace(opts, output=output, container=None))
    argv = plan.commands[0].argv
    if "--force-overwrite=true" not in argv:
        i = argv.index(f"--output={output}") + 1
        argv.insert(i, "--force-overwrite=true")
    return argv


def export_commands(rep: str) -> list[list[str]]:
    """The ``nsys export`` and ``nsys stats`` argv lists that ``collect`` runs on ``rep`` (.nsys-rep)."""
    cmds, _, _ = _stats_commands(rep)
    return [c.argv for c in cmds if c.head[0] == "nsys"]


# --------------------------------------------------------------------------------- next steps
def _inputs_in(text: str) -> list[str]:
    from .facts.registry import INPUTS

    found = sorted((text.find(desc), key) for key, desc in INPUTS.items() if desc in text)
    return [k for _, k in found]


_REPORT_OF = {"gpu_trace": "cuda_gpu_trace", "api_trace": "cuda_api_trace", "nvtx_trace": "nvtx_pushpop_trace",
              "kern_sum": "cuda_gpu_kern_sum", "api_sum": "cuda_api_sum", "mem_time_sum": "cuda_gpu_mem_time_sum",
              "mem_size_sum": "cuda_gpu_mem_size_sum", "nvtx_sum": "nvtx_sum", "osrt_sum": "osrt_sum",
              "kern_exec_sum": "cuda_kern_exec_sum"}


def next_steps(not_evaluated: list[dict], facts: dict, *, report: str = "report.nsys-rep",
               app: list[str] | tuple[str, ...] = DEFAULT_APP, hot_kernel: str | None = None) -> list[dict]:
    """For the rules a diagnosis could not evaluate, the exact commands that collect what they lack.

    ``not_evaluated`` is the report's list (``{"rule", "missing": [text], "facts": [...]}``), ``facts`` its
    run facts. One step per missing input, in the order: export from the existing report, re-profile,
    Nsight Compute. Each step: ``{"need", "why", "rules", "commands"}`` (commands as shell lines).
    """
    from .facts import registry

    needs: dict[str, list[str]] = {}
    graph_rules: list[str] = []
    ncu_hint: dict[str, str] = {}
    for entry in not_evaluated or []:
        rule = entry.get("rule", "?")
        lines = entry.get("missing") or []
        got: list[str] = []
        for line in lines:
            if "CUDA graph" in line:
                graph_rules.append(rule)
                continue
            if "Nsight Compute" in line or line.lstrip().startswith("needs ncu"):
                got.append("ncu")
                m = re.search(r'--kernel-name\s+"?regex:"?([^"\s]+)"?', line)
                if m and "kernel" not in ncu_hint:
                    ncu_hint["kernel"] = m.group(1)
                m = re.search(r"--launch-skip\s+(\d+)", line)
                if m and "skip" not in ncu_hint:
                    ncu_hint["skip"] = m.group(1)
                continue
            ids = _inputs_in(line)
            if not ids:
                continue
            if line.startswith("only the whole-profile value"):
                got += [i for i in ids if i.endswith("trace")]
            else:
                got.append(ids[0])       # "needs A or B": A is the richer one
        if not got and rule not in graph_rules:
            for f in entry.get("facts") or []:
                d = registry.lookup("run", f) or registry.lookup("kernel", f)
                if d and d.needs:
                    got.append(d.needs[0])
        for i in dict.fromkeys(got):
            needs.setdefault(i, [])
            if rule not in needs[i]:
                needs[i].append(rule)

    base = report[:-len(".nsys-rep")] if report.endswith(".nsys-rep") else report
    stem = base.rsplit("/", 1)[-1]
    steps: list[dict] = []
    # with CUDA graphs hidden from the trace, the traces are there but blind: re-profiling (below) fixes it
    exportable = [i for i in needs if i in _REPORT_OF and not (graph_rules and i in ("gpu_trace", "api_trace"))]
    if exportable:
        reports = [_REPORT_OF[i] for i in exportable]
        rules = sorted({r for i in exportable for r in needs[i]})
        cmds = [f"nsys stats --report {','.join(reports)} --format csv --output {quote(base)} {quote(base + '.nsys-rep')}"]
        steps.append({"need": ", ".join(reports), "rules": rules,
                      "why": "these reports are missing from the input: export them from the same profile",
                      "commands": cmds})
    if "nvtx_trace" in needs:
        q = build("quick", Options(app=tuple(app), output=stem))
        steps.append({"need": "NVTX step ranges", "rules": needs["nvtx_trace"],
                      "why": "if the profile has no NVTX ranges, mark each training step "
                             "(torch.cuda.nvtx.range_push('step') ... range_pop()) and profile with --trace including nvtx",
                      "commands": q.lines()})
    if "osrt_sum" in needs:
        q = build("quick", Options(app=tuple(app), output=stem))
        steps.append({"need": "OS runtime trace", "rules": needs["osrt_sum"],
                      "why": "if the profile was made without --trace=osrt, osrt_sum has no rows: profile again with it",
                      "commands": q.lines()})
    if graph_rules or (facts or {}).get("graph_launch_count") or (facts or {}).get("graph_launch_count_span"):
        if graph_rules:
            q = build("quick", Options(app=tuple(app), output=stem, cuda_graph_trace="node"))
            steps.append({"need": "CUDA graph kernels in the GPU trace", "rules": sorted(set(graph_rules)),
                          "why": "the run launches CUDA graphs and the default --cuda-graph-trace=graph leaves their kernels "
                                 "out of cuda_gpu_trace: profile again with --cuda-graph-trace=node",
                          "commands": q.lines() + export_lines(stem)})
    if "ncu" in needs:
        hot_kernel = hot_kernel or ncu_hint.get("kernel")
        k = hot_kernel or ".*HOT_KERNEL.*"
        if hot_kernel and not hot_kernel.startswith(("regex:", ".*")):
            k = f".*{re.escape(hot_kernel)}.*"
        skip = int(ncu_hint["skip"]) if "skip" in ncu_hint else None
        plan = build("ncu-kernel", Options(app=tuple(app), kernel=k, output="ncu_kernel", launch_skip=skip))
        steps.append({"need": "Nsight Compute metrics", "rules": needs["ncu"],
                      "why": "kernel-level rules need ncu's metrics of the hot kernels"
                             + ("" if hot_kernel else " (put the top kernel's name in the regex)"),
                      "commands": plan.lines()})
    return steps


def export_lines(stem: str) -> list[str]:
    cmds, _, _ = _stats_commands(stem)
    return [c.line() for c in cmds]
