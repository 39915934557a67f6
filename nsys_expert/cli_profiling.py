"""Profiling commands: ``command`` (print the nsys / ncu commands for a situation) and ``collect``
(run nsys, export what the rules read, diagnose). The commands themselves come from ``scenarios``."""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import threading

import click

from . import scenarios as sc
from .cliutil import _guard
from .errors import InputError


def _ranks(ctx, param, value):
    if value is None:
        return None
    try:
        out = tuple(sorted({int(v) for v in value.split(",") if v.strip()}))
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a comma-separated list of ranks (e.g. 0 or 0,8)") from None
    if not out:
        raise click.BadParameter("give at least one rank")
    return out


def _words(value):
    return tuple(shlex.split(value)) if value else None


def _write_files(plan: sc.Plan, out_dir: str) -> list[str]:
    try:
        os.makedirs(out_dir, exist_ok=True)
        written = []
        for f in plan.files:
            path = os.path.join(out_dir, f.name)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(f.content)
            if f.executable:
                os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            written.append(path)
        return written
    except OSError as e:
        raise InputError(f"cannot write the wrapper files ({e.strerror})", out_dir) from e


def _comment(text: str, prefix: str = "# ") -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines())


def render_plan(plan: sc.Plan, written: list[str] | None, explain: bool, one_line: bool = False) -> str:
    """What ``command`` prints: a valid shell script (comments, heredocs for wrappers, the commands)."""
    out = [f"# {plan.title}"]
    if plan.container:
        out.append("# in a container, start it with the capabilities nsys / ncu need:")
        out += [_comment(c, "#   ") for c in plan.container]
    for f in plan.files:
        if written is not None:
            path = next(p for p in written if os.path.basename(p) == f.name)
            out.append(f"# wrote {path}" + (" (executable)" if f.executable else ""))
        else:
            out.append(f"# {f.name} (--out-dir DIR writes it for you):")
            out.append(f"cat > {f.name} <<'EOF'\n{f.content.rstrip(chr(10))}\nEOF")
            if f.executable:
                out.append(f"chmod +x {f.name}")
    out.append(plan.shell(multiline=not one_line))
    for n in plan.notes:
        out.append(_comment("note: " + n))
    if explain and plan.explain:
        out.append("# why each option is there:")
        for flag, why in plan.explain:
            out.append(f"#   {flag}")
            out.append(f"#       {why}")
    return "\n".join(out) + "\n"


def _list_scenarios() -> str:
    w = max(len(k) for k in sc.SCENARIOS)
    lines = ["Scenarios (nsys-expert command SCENARIO [options] [-- APP...]):"]
    for name, (tpl, _) in sc.SCENARIOS.items():
        lines.append(f"  {name:<{w}}  {tpl:<5}  {sc.SITUATIONS[name]}")
    lines.append("--explain says why each option is there; --out-dir DIR writes the wrapper files.")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------- collect
def _run(argv: list[str], log, echo: bool) -> tuple[int, list[str]]:
    """Run, copying stdout and stderr to ``log`` (and to our stderr when ``echo``); -> (rc, stderr tail)."""
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                             bufsize=1)
    except OSError as e:
        raise InputError(f"cannot run {argv[0]} ({e.strerror})") from e
    tail: collections.deque[str] = collections.deque(maxlen=40)
    lock = threading.Lock()

    def pump(stream, keep):
        for line in stream:
            with lock:
                log.write(line)
                if echo:
                    sys.stderr.write(line)
                    sys.stderr.flush()
                if keep:
                    tail.append(line.rstrip("\n"))
        stream.close()

    threads = [threading.Thread(target=pump, args=(p.stdout, False), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, True), daemon=True)]
    for t in threads:
        t.start()
    try:
        rc = p.wait()
    except KeyboardInterrupt:
        p.terminate()
        p.wait()
        raise
    for t in threads:
        t.join()
    log.flush()
    return rc, list(tail)


def _trim(lines: list[str], n: int = 4, limit: int = 400) -> str:
    keep = [ln.strip() for ln in lines if ln.strip()][-n:]
    text = " | ".join(keep) or "no output on stderr"
    return text if len(text) <= limit else "..." + text[-limit:]


def collect_run(app: list[str], scenario: str = "quick", out_dir: str = "nsys-expert-out", name: str = "profile",
                opts: sc.Options | None = None, diagnose: bool = True, lang: str = "en", echo: bool = True) -> dict:
    """profile -> export (SQLite + the stats CSVs) -> diagnose. Returns the paths and the diagnosis (or None)."""
    nsys = shutil.which("nsys")
    if not nsys:
        raise InputError("nsys (Nsight Systems) is not on PATH", None,
                         f"install {sc.NSYS_HELP}, or put its bin folder on PATH; 'nsys-expert command quick' "
                         "prints the command to run where nsys is installed")
    if not app:
        raise InputError("no application to profile: give it after --, e.g. nsys-expert collect -- python train.py")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output folder ({e.strerror})", out_dir) from e
    base = os.path.join(out_dir, name)
    opts = dataclasses.replace(opts or sc.Options(), app=tuple(app), output=base)
    try:
        profile = sc.profile_command(scenario, opts)
    except ValueError as e:
        raise InputError(str(e)) from None
    exports = sc.export_commands(base)
    rep, sqlite, csv_dir, log_path = base + ".nsys-rep", base + ".sqlite", base + "_csv", base + ".log"
    warnings: list[str] = []
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + sc.Command(tuple(profile)).line() + "\n")
        rc, tail = _run([nsys, *profile[1:]], log, echo)
        if not os.path.exists(rep):
            hint = None
            if scenario == "nvtx-range":
                hint = f"did the app push the NVTX range '{opts.range_name}'?"
            elif scenario == "cuda-profiler-range":
                hint = "did the app call cudaProfilerStart()?"
            raise InputError(f"nsys profile failed (exit {rc}) and wrote no report: {_trim(tail)}", log_path, hint)
        if rc != 0:
            warnings.append(f"nsys profile exited with {rc} (usually the application's own exit code); "
                            f"the report was written and is used")
        os.makedirs(csv_dir, exist_ok=True)
        for argv in exports:
            log.write("$ " + sc.Command(tuple(argv)).line() + "\n")
            rc, tail = _run([nsys, *argv[1:]], log, False)
            if argv[1] == "export" and (rc != 0 or not os.path.exists(sqlite)):
                raise InputError(f"nsys export failed (exit {rc}): {_trim(tail)}", rep)
            if argv[1] == "stats":
                csvs = [f for f in os.listdir(csv_dir) if f.endswith(".csv")]
                if not csvs:
                    raise InputError(f"nsys stats failed (exit {rc}) and wrote no CSV: {_trim(tail)}", sqlite)
                if rc != 0:
                    warnings.append(f"nsys stats exited with {rc}: {_trim(tail, 2)}")
    result = {"report": rep, "sqlite": sqlite, "csv_dir": csv_dir, "log": log_path, "warnings": warnings,
              "csv": sorted(f for f in os.listdir(csv_dir) if f.endswith(".csv")), "doc": None}
    if diagnose:
        from . import pipeline, report

        doc = pipeline.diagnose(pipeline.Request([csv_dir], lang=lang))
        md, js = base + ".diagnosis.md", base + ".diagnosis.json"
        with open(md, "w", encoding="utf-8") as fh:
            fh.write(report.render_markdown(doc, lang))
        with open(js, "w", encoding="utf-8") as fh:
            fh.write(report.to_json(doc))
        result.update(doc=doc, markdown=md, json=js)
    return result


def summary(res: dict) -> str:
    lines = ["nsys-expert collect: done",
             f"  report     {res['report']}",
             f"  sqlite     {res['sqlite']}",
             f"  csv        {res['csv_dir']}/ ({len(res['csv'])} reports)",
             f"  log        {res['log']}"]
    doc = res.get("doc")
    if doc is None:
        lines.append(f"  diagnose   nsys-expert diagnose {res['csv_dir']}")
    else:
        lines.append(f"  diagnosis  {res['markdown']}, {res['json']}")
        v = doc.get("verdict") or {}
        lines.append(f"verdict: {v.get('category') or 'no bottleneck at medium severity or above'}"
                     + (f" (rule {v['rule']}, severity {v['severity']})" if v.get("rule") else ""))
        for f in doc["findings"][:5]:
            gain = f.get("estimated_gain_pct")
            lines.append(f"  {f['rank']}. [{f['severity']}] {f['rule']}: {f['message']}"
                         + (f" (up to {gain:g} % of the window)" if gain is not None else ""))
        if doc.get("not_evaluated"):
            lines.append(f"  {len(doc['not_evaluated'])} rule(s) not evaluated (see the report)")
    for w in res["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------ register
def register(main) -> None:
    @main.command("command", context_settings={"help_option_names": ["-h", "--help"]})
    @click.argument("scenario", required=False, type=click.Choice(list(sc.SCENARIOS)))
    @click.argument("app", nargs=-1, type=click.UNPROCESSED)
    @click.option("-o", "--output", help="report name, without extension (default: the playbook's)")
    @click.option("--trace", help="override the --trace list (e.g. cuda,nvtx,osrt,cublas)")
    @click.option("--pytorch", "pytorch_modes", multiple=True,
                  help="pytorch: autograd-nvtx (default), autograd-shapes-nvtx, functions-trace, none; repeat or comma-join")
    @click.option("--ranks", callback=_ranks, help="torchrun: the global ranks to profile (default 0)")
    @click.option("--nproc-per-node", type=click.IntRange(min=1), default=8, show_default=True,
                  help="torchrun / deepspeed / mpi: processes (GPUs) per node")
    @click.option("--nnodes", type=click.IntRange(min=1), default=1, show_default=True, help="torchrun / mpi: nodes")
    @click.option("--range", "range_name", default="profile_region", show_default=True, help="nvtx-range: the NVTX range")
    @click.option("--delay", type=click.IntRange(min=0), default=120, show_default=True, help="long-run: seconds to skip")
    @click.option("--duration", type=click.IntRange(min=1), default=30, show_default=True, help="long-run: seconds to collect")
    @click.option("--kernel", help="ncu-kernel / ncu-roofline: kernel name regex")
    @click.option("--launch-skip", type=click.IntRange(min=0), help="ncu-training-step: kernel launches to skip (default 1000)")
    @click.option("--launch-count", type=click.IntRange(min=1), help="ncu: kernel launches to profile")
    @click.option("--input", "input_", help="stats: the .nsys-rep to export (default report.nsys-rep)")
    @click.option("--before", help="ncu-compare: the first command (quoted)")
    @click.option("--after", help="ncu-compare: the second command (quoted)")
    @click.option("--cuda-graph-trace", type=click.Choice(["graph", "node"]),
                  help="nsys: node traces every kernel of a CUDA graph (nsys-expert needs it for graphed code)")
    @click.option("--container", type=click.Choice(["docker", "k8s"]), help="add the capabilities nsys / ncu need")
    @click.option("--out-dir", type=click.Path(file_okay=False), help="write the wrapper files here")
    @click.option("--explain", is_flag=True, help="say why each option is there")
    @click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
    @click.option("--one-line", is_flag=True, help="print each command on one line")
    @click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
    @_guard
    def command_cmd(scenario, app, output, trace, pytorch_modes, ranks, nproc_per_node, nnodes, range_name, delay,
                    duration, kernel, launch_skip, launch_count, input_, before, after, cuda_graph_trace, container,
                    out_dir, explain, lang, one_line, fmt):
        """Print the nsys / ncu command(s) for a situation (playbook templates A-G and the ncu templates).

        Give the application after --, e.g.: nsys-expert command quick -- python train.py --lr 3e-4.
        Without SCENARIO: the list of scenarios.
        """
        if not scenario:
            click.echo(_list_scenarios(), nl=False)
            return
        opts = sc.Options(app=tuple(app) or sc.DEFAULT_APP, output=output, trace=trace,
                          pytorch=tuple(pytorch_modes) or ("autograd-nvtx",), ranks=ranks or (0,),
                          nproc_per_node=nproc_per_node, nnodes=nnodes, range_name=range_name, delay=delay,
                          duration=duration, kernel=kernel, launch_skip=launch_skip, launch_count=launch_count,
                          input=input_, before=_words(before), after=_words(after), cuda_graph_trace=cuda_graph_trace,
                          container=container, wrapper_dir=out_dir, lang=lang)
        try:
            plan = sc.build(scenario, opts)
        except ValueError as e:
            raise InputError(str(e)) from None
        written = _write_files(plan, out_dir) if out_dir and plan.files else None
        if fmt == "json":
            click.echo(json.dumps({
                "scenario": plan.scenario, "title": plan.title, "commands": plan.lines(),
                "files": [{"name": f.name, "executable": f.executable, "content": f.content,
                           **({"path": os.path.join(out_dir, f.name)} if written else {})} for f in plan.files],
                "notes": plan.notes, "container": plan.container, "outputs": plan.outputs,
                "explain": [{"option": a, "why": b} for a, b in plan.explain]}, indent=2, ensure_ascii=False))
            return
        click.echo(render_plan(plan, written, explain, one_line), nl=False)

    @main.command("collect", context_settings={"help_option_names": ["-h", "--help"]})
    @click.argument("app", nargs=-1, required=True, type=click.UNPROCESSED)
    @click.option("--scenario", type=click.Choice(list(sc.COLLECTABLE)), default="quick", show_default=True)
    @click.option("--out", "out_dir", type=click.Path(file_okay=False), default="nsys-expert-out", show_default=True,
                  help="folder for the report, the SQLite, the CSVs and the diagnosis")
    @click.option("--name", default="profile", show_default=True, help="report name inside --out")
    @click.option("--nsys-arg", "nsys_args", multiple=True, metavar="OPTION",
                  help="one more nsys profile option, e.g. --nsys-arg=--sample=none (repeatable)")
    @click.option("--pytorch", "pytorch_modes", multiple=True, help="pytorch scenario: --pytorch modes")
    @click.option("--range", "range_name", default="profile_region", show_default=True, help="nvtx-range: the NVTX range")
    @click.option("--delay", type=click.IntRange(min=0), default=120, show_default=True, help="long-run: seconds to skip")
    @click.option("--duration", type=click.IntRange(min=1), default=30, show_default=True, help="long-run: seconds to collect")
    @click.option("--cuda-graph-trace", type=click.Choice(["graph", "node"]), help="node: trace each kernel of CUDA graphs")
    @click.option("--no-diagnose", is_flag=True, help="profile and export only (diagnose the CSV folder elsewhere)")
    @click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
    @click.option("-q", "--quiet", is_flag=True, help="do not echo the application's output")
    @_guard
    def collect_cmd(app, scenario, out_dir, name, nsys_args, pytorch_modes, range_name, delay, duration,
                    cuda_graph_trace, no_diagnose, lang, quiet):
        """Profile APP with nsys, export the reports and SQLite the rules read, and diagnose.

        nsys-expert collect [--scenario quick] [--out DIR] -- python train.py [args]
        """
        if name != os.path.basename(name) or name in ("", ".", ".."):
            raise InputError(f"--name {name!r}: a plain file name, without folders")
        opts = sc.Options(pytorch=tuple(pytorch_modes) or ("autograd-nvtx",), range_name=range_name, delay=delay,
                          duration=duration, cuda_graph_trace=cuda_graph_trace, extra=tuple(nsys_args))
        res = collect_run(list(app), scenario, out_dir, name, opts, diagnose=not no_diagnose, lang=lang, echo=not quiet)
        click.echo(summary(res), nl=False)
