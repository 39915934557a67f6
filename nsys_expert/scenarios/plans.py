"""From the situation to the right profile: one function per playbook scenario, reading its template
(title, default output, trace list, options, notes, wrapper script) from playbook.yaml and the user's
:class:`Options`. ``build`` validates the options and returns a :class:`Plan`.

The records (``Options``, ``Plan``, ``WrapperFile``), the playbook's constants and the words that
explain each option are in ``plan.py``.
"""
from __future__ import annotations

import re
import string
from dataclasses import asdict, replace

from ..notes import CODES, Note

from .commands import (Command, Opt, ShellWord, docstring_text, kernel_option, ncu_exports, ncu_profile, nsys_export_sqlite,
                       nsys_profile, nsys_stats, one_line, opt, py_fstring, py_str, quote)
from .plan import (PLAYBOOK, ALIASES, COLLECTABLE, DEFAULT_APP, NCU_HELP, NSYS_HELP, OPTION_DOC, PYTORCH_MODES,  # noqa: F401
                   SITUATIONS, STATS_REPORTS, TRACE_DOC, TRACE_VALUES, VERB_DOC, Options, Plan, WrapperFile,
                   explanation, explain_option)

# ------------------------------------------------------------------------------------ helpers
def _t(name: str) -> dict:
    return PLAYBOOK["scenarios"][name]


# a playbook text that holds a value is said as the note of the same English template (notes/codes.py, plan.*):
# the report layer's catalog translates the template, never the filled sentence
_CODE_OF = {c.en: name for name, c in CODES.items() if name.startswith("plan.")}


def _fill(text: str, opts: Options, **more) -> str:
    """A playbook command word with its values."""
    return text.format(**{**asdict(opts), **more})


def _words(text: str, opts: Options, **more) -> Note | str:
    """A playbook text with its values: a ``plan.*`` note (its fields the values the text names), or the text
    itself where it names none."""
    names = [f for _, f, _, _ in string.Formatter().parse(text) if f]
    if not names:
        return text
    if text not in _CODE_OF:
        raise KeyError(f"playbook text with fields and no plan.* note in notes/codes.py: {text!r}")
    values = {**asdict(opts), **more}
    return Note(_CODE_OF[text], {k: values[k] for k in names})


def _nsys_common(opts: Options) -> list[Opt]:
    out = []
    if opts.cuda_graph_trace:
        out.append(opt(f"--cuda-graph-trace={opts.cuda_graph_trace}"))
    if opts.gpu_metrics:
        out.append(opt(f"--gpu-metrics-devices={opts.gpu_metrics}"))
    out += [opt(w) for w in opts.extra]
    return out


def _profile_plan(name: str, opts: Options, **more) -> Plan:
    """The plain `nsys profile` scenarios: the template's trace and options, the user's output and app."""
    t = _t(name)
    out = opts.output or t["output"]
    middle = [opt(_fill(w, opts, **more)) for w in t.get("options", [])]
    c = nsys_profile(opts.trace or t["trace"], middle, out, opts.app, _nsys_common(opts),
                     force=t.get("force_overwrite", True), trace_first=not t.get("trace_after_options", False))
    p = Plan(name, _words(t["title"], opts, **more), [c], outputs=[f"{out}.nsys-rep"])
    p.notes += [_words(n, opts, **more) for n in t.get("notes", [])]
    p.notes.append(Note("plan.then_export", {"input": quote(out + '.nsys-rep')}))
    if name in ("quick", "pytorch"):   # the torch.profiler twin of the same steps
        full = name == "pytorch"
        p.files.append(WrapperFile("torch_profiler_steps.py", PLAYBOOK["wrappers"]["torch_profiler"].format(
            scenario=name, trace_dir="kineto_trace", record_shapes=True, with_stack=full, profile_memory=full),
            executable=False))
        p.notes.append("without nsys, or for a second view: torch_profiler_steps.py records the same steps with "
                       "torch.profiler; nsys-expert diagnose reads its .pt.trace.json")
    return p


def _wrapper_path(opts: Options, name: str, here: str = "") -> str:
    d = (opts.wrapper_dir or "").rstrip("/")
    if d in ("", "."):
        return here + name
    return f"{d}/{name}"


def _script_args(app) -> list[str]:
    app = list(app)
    return app[1:] if app and re.match(r"^python[0-9.]*$", app[0]) else app


def stats_commands(rep: str) -> tuple[list[Command], str, str]:
    """nsys export + nsys stats for ``rep`` (a .nsys-rep): -> commands, sqlite path, csv folder."""
    base = rep[:-len(".nsys-rep")] if rep.endswith(".nsys-rep") else rep
    sqlite = base + ".sqlite"
    stem = base.rsplit("/", 1)[-1]
    csv_dir = base + "_csv"
    cmds = [nsys_export_sqlite(base + ".nsys-rep", sqlite), Command(("mkdir", "-p", csv_dir)),
            nsys_stats(STATS_REPORTS, sqlite, f"{csv_dir}/{stem}"), Command(("nsys-expert", "diagnose", sqlite))]
    return cmds, sqlite, csv_dir


# ---------------------------------------------------------------------------------- scenarios
def quick(opts: Options) -> Plan:
    return _profile_plan("quick", opts)


def pytorch(opts: Options) -> Plan:
    modes = [m for part in opts.pytorch for m in part.split(",") if m]
    bad = [m for m in modes if m not in PYTORCH_MODES]
    if bad:
        raise ValueError(f"--pytorch {','.join(bad)}: not one of {', '.join(PYTORCH_MODES)}")
    if "none" in modes and len(modes) > 1:
        raise ValueError("--pytorch none cannot be combined with other modes")
    return _profile_plan("pytorch", opts, pytorch=",".join(modes))


def nvtx_range(opts: Options) -> Plan:
    return _profile_plan("nvtx-range", opts)


def cuda_profiler_range(opts: Options) -> Plan:
    return _profile_plan("cuda-profiler-range", opts)


def long_run(opts: Options) -> Plan:
    if opts.delay < 0 or opts.duration <= 0:
        raise ValueError("--delay must be >= 0 and --duration > 0 (seconds)")
    return _profile_plan("long-run", opts)


def torchrun(opts: Options) -> Plan:
    t = _t("torchrun")
    ranks = sorted(set(opts.ranks))
    world = opts.nproc_per_node * opts.nnodes
    if any(r < 0 or r >= world for r in ranks):
        raise ValueError(f"--ranks {','.join(map(str, ranks))}: ranks run from 0 to {world - 1} "
                         f"({opts.nnodes} node(s) x {opts.nproc_per_node})")
    output = opts.output or t["output"]
    if "{rank}" not in output:
        output += "_rank{rank}"
    trace = opts.trace or t["trace"]
    extra = "".join(f", {py_str(w)}" for o in _nsys_common(opts) for w in o.words)
    nodes = (opt(f"--nnodes={opts.nnodes}"), opt(f"--nproc-per-node={opts.nproc_per_node}"))
    if opts.nnodes > 1:   # several nodes meet at a rendezvous: the same line runs on every node
        nodes += (opt("--rdzv-id=nsys_profile"), opt("--rdzv-backend=c10d"), opt(ShellWord("--rdzv-endpoint=${MASTER_ADDR}:29500")))
    launch = Command(("torchrun",), nodes, (_wrapper_path(opts, "run_nsys.py"), *_script_args(opts.app)))
    args = f" --ranks {','.join(map(str, ranks))} --nproc-per-node {opts.nproc_per_node}" + \
        (f" --nnodes {opts.nnodes}" if opts.nnodes != 1 else "")
    # user values land in Python: string literals (py_str / py_fstring), the docstring escaped
    content = PLAYBOOK["wrappers"]["torchrun"].format(args=args, launch=docstring_text(launch.line()),
                                                ranks="{" + ", ".join(map(str, ranks)) + "}",
                                                trace=py_str(trace), extra=extra, output=py_fstring(output, "rank"))
    p = Plan("torchrun", t["title"], [launch], [WrapperFile("run_nsys.py", content)],
             outputs=[output.replace("{rank}", str(r)) + ".nsys-rep" for r in ranks])
    p.notes += [_words(n, opts, ranks_text=", ".join(map(str, ranks))) for n in t["notes"]]
    p.explain.append(("run_nsys.py: -t " + trace, explain_option(opt("-t", trace), "nsys")))
    p.explain.append(("run_nsys.py: -o " + output, Note("plan.rank_output", {"placeholder": "{rank}"})))
    if opts.nnodes > 1:
        p.notes.append(Note("plan.nodes", {"n": opts.nnodes}))
    p.notes.append(Note("plan.then_export", {"input": quote(output.replace('{rank}', str(ranks[0])) + '.nsys-rep')}))
    return p


def deepspeed(opts: Options) -> Plan:
    t = _t("deepspeed")
    output = opts.output or t["output"]
    if "%p" not in output:
        output += ".%p"
    trace = opts.trace or t["trace"]
    extra = "".join(f"  {' '.join(quote(w) for w in o.words)} \\\n" for o in _nsys_common(opts))
    ds_opts = [opt("--no_python")]
    if opts.nproc_per_node != 8:
        ds_opts.append(opt(f"--num_gpus={opts.nproc_per_node}"))
    launch = Command(("deepspeed",), tuple(ds_opts),
                     (_wrapper_path(opts, "nsys_profile.sh", "./"), *_script_args(opts.app)))
    content = PLAYBOOK["wrappers"]["deepspeed"].format(launch=one_line(launch.line()), trace=quote(trace), extra=extra,
                                                 output=quote(output))
    p = Plan("deepspeed", t["title"], [launch], [WrapperFile("nsys_profile.sh", content)],
             outputs=[output.replace("%p", "<PID>") + ".nsys-rep"])
    p.notes += list(t["notes"])
    p.explain.append(("nsys_profile.sh: -t " + trace, explain_option(opt("-t", trace), "nsys")))
    p.explain.append(("nsys_profile.sh: -o " + output, OPTION_DOC["--output"]))
    return p


def stats(opts: Options) -> Plan:
    t = _t("stats")
    rep = opts.input or "report.nsys-rep"
    cmds, sqlite, csv_dir = stats_commands(rep)
    return Plan("stats", t["title"], cmds, notes=list(t["notes"]), outputs=[sqlite, f"{csv_dir}/*.csv"])


def mpi(opts: Options) -> Plan:
    t = _t("mpi")
    output = opts.output or t["output"]
    common = [opt(f"--trace={opts.trace or t['trace']}"), *_nsys_common(replace(opts, gpu_metrics=None)),
              opt(f"--output={output}"),
              opt("--force-overwrite=true")]
    n = opts.nproc_per_node * opts.nnodes
    launch = Command(("mpirun",), (opt("-np", n),), (_wrapper_path(opts, "nsys_mpi.sh", "./"), *opts.app))
    content = PLAYBOOK["wrappers"]["mpi"].format(launch=one_line(launch.line()), common=" ".join(quote(w) for o in common for w in o.words))
    p = Plan("mpi", t["title"], [launch], [WrapperFile("nsys_mpi.sh", content)],
             outputs=[output.replace("%h", "<host>").replace("%p", "<PID>") + ".nsys-rep"])
    p.notes += list(t["notes"])
    for o in common:
        p.explain.append(("nsys_mpi.sh: " + " ".join(o.words), explain_option(o, "nsys")))
    for flag in ("--nic-metrics=true", "--gpu-metrics-devices=all"):
        p.explain.append(("nsys_mpi.sh (local rank 0): " + flag, explain_option(opt(flag), "nsys")))
    return p


def _ncu_plan(name: str, opts: Options, extra: list[Opt], **more) -> Plan:
    t = _t(name)
    out = opts.output or t["output"]
    c = ncu_profile(t["set"], opts.app, out, extra, t.get("target_all", True), opts.extra)
    p = Plan(name, _words(t["title"], opts, **more), [c, *ncu_exports(out)],
             outputs=[f"{out}.ncu-rep", f"{out}_details.csv", f"{out}_raw.csv"])
    p.notes += [_words(n, opts, output=out, **more) for n in t.get("notes", [])]
    return p


def ncu_kernel(opts: Options) -> Plan:
    t = _t("ncu-kernel")
    skip = [] if opts.launch_skip is None else [opt("--launch-skip", opts.launch_skip)]
    p = _ncu_plan("ncu-kernel", opts, [*_kernel_filter(opts), *skip,
                                        opt("--launch-count", opts.launch_count or t["launch_count"])])
    return _no_kernel_note(p, opts)


def _kernel_filter(opts: Options) -> list[Opt]:
    """``--kernel-name`` for the kernel the user named; none without ``--kernel`` (a made-up name
    would match nothing, and ncu says nothing about it)."""
    return [kernel_option(opts.kernel)] if opts.kernel else []


def _no_kernel_note(p: Plan, opts: Options) -> Plan:
    if not opts.kernel:
        p.notes.insert(0, "no --kernel given: ncu profiles the first launches of any kernel; add --kernel NAME "
                          "(a name from diagnose's top-kernel table) to profile the hot one")
    return p


def ncu_roofline(opts: Options) -> Plan:
    t = _t("ncu-roofline")
    p = _ncu_plan("ncu-roofline", opts, [*_kernel_filter(opts),
                                          opt("--launch-count", opts.launch_count or t["launch_count"])])
    return _no_kernel_note(p, opts)


def ncu_training_step(opts: Options) -> Plan:
    t = _t("ncu-training-step")
    skip = t["launch_skip"] if opts.launch_skip is None else opts.launch_skip
    count = opts.launch_count or t["launch_count"]
    return _ncu_plan("ncu-training-step", replace(opts, launch_skip=skip, launch_count=count),
                     [opt("--launch-skip", skip), opt("--launch-count", count)])


def ncu_compare(opts: Options) -> Plan:
    t = _t("ncu-compare")
    before = list(opts.before or ("python", "train_v0.py"))
    after = list(opts.after or ("python", "train_v1.py"))
    cmds = [ncu_profile(t["set"], before, "before", (), False, opts.extra),
            ncu_profile(t["set"], after, "after", (), False, opts.extra)]
    cmds += ncu_exports("before") + ncu_exports("after")
    return Plan("ncu-compare", t["title"], cmds, notes=list(t["notes"]),
                outputs=["before.ncu-rep", "after.ncu-rep", "before_details.csv", "after_details.csv"])


_BUILDERS = {
    "quick": quick, "pytorch": pytorch, "torchrun": torchrun, "deepspeed": deepspeed, "nvtx-range": nvtx_range,
    "cuda-profiler-range": cuda_profiler_range, "long-run": long_run, "stats": stats, "mpi": mpi,
    "ncu-kernel": ncu_kernel, "ncu-roofline": ncu_roofline, "ncu-training-step": ncu_training_step,
    "ncu-compare": ncu_compare,
}
SCENARIOS = {name: (t["letter"], _BUILDERS[name]) for name, t in PLAYBOOK["scenarios"].items()}


def _container(plan: Plan, kind: str) -> None:
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
                         else "capabilities: SYS_ADMIN, SYS_PTRACE", OPTION_DOC["--cap-add"]))


GPU_METRICS_NOTE = (
    "--gpu-metrics-devices samples the GPU's own counters (SM active, tensor active, DRAM, PCIe / NVLink) at "
    "10 kHz: about 220,000 samples, 7 MB of SQLite export, per GPU and second on an H200 (--gpu-metrics-frequency "
    "lowers that), with little overhead on the GPU itself. Only one process per GPU can sample (with 'all': one per node): profiling several processes that share "
    "GPUs, enable it in one of them (the mpi scenario does it on local rank 0). nsys-expert reads the samples from "
    "the SQLite export: diagnose the .sqlite, not the CSVs.")


def _check_gpu_metrics(scenario: str, opts: Options) -> None:
    """The one-process-per-GPU limit: GPU metrics in several processes of one node collide."""
    if not re.fullmatch(r"all|none|\d+(,\d+)*", opts.gpu_metrics or ""):
        raise ValueError(f"--gpu-metrics {opts.gpu_metrics}: 'all' or GPU ids such as 0,1")
    if scenario in ("ncu-kernel", "ncu-roofline", "ncu-training-step", "ncu-compare", "stats"):
        raise ValueError(f"--gpu-metrics: an nsys profile option; scenario '{scenario}' runs no nsys profile")
    per_node = (len(set(opts.ranks)) if scenario == "torchrun" else opts.nproc_per_node if scenario == "deepspeed" else 1)
    if per_node > 1:
        raise ValueError(f"--gpu-metrics: only one process per GPU (per node with 'all') can sample GPU metrics, and "
                         f"this plan profiles {per_node} processes; profile one rank (--ranks 0), or use the mpi "
                         f"scenario, which samples them on each node's local rank 0")


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
    if opts.gpu_metrics:
        _check_gpu_metrics(scenario, opts)
    plan = SCENARIOS[scenario][1](opts)
    plan.explain = explanation(plan) + plan.explain
    if opts.gpu_metrics and scenario != "mpi":
        plan.notes.append(GPU_METRICS_NOTE)
    if opts.container:
        _container(plan, opts.container)
    return plan


def command_line(scenario: str, **kw) -> str:
    """The first command of a scenario as one shell line (rule advice calls this: ``command('quick')``)."""
    if "app" in kw and isinstance(kw["app"], list):
        kw["app"] = tuple(kw["app"])
    if "extra" in kw:
        kw["extra"] = tuple(kw["extra"])
    return build(scenario, Options(**kw)).commands[0].line()


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
    cmds, _, _ = stats_commands(rep)
    return [c.argv for c in cmds if c.head[0] == "nsys"]


def export_lines(stem: str) -> list[str]:
    cmds, _, _ = stats_commands(stem)
    return [c.line() for c in cmds]
