"""``nsys-expert command SCENARIO``: print the nsys / ncu commands for a situation (the commands
themselves come from ``scenarios``; this writes them out as a shell script, or JSON)."""
from __future__ import annotations

import json
import os
import shlex
import stat

import click

from .. import scenarios as sc
from ..errors import InputError
from ..scenarios.commands import heredoc_tag
from .options import Choice, languages, command, emit, format_option, output_option, special_file


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
            why = special_file(os.path.realpath(path))   # a FIFO there would block, a device be replaced
            if why:
                raise InputError(why, path, "remove it or give another --out-dir")
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


_WORDS = {"note": "note: ", "container": "in a container, start it with the capabilities nsys / ncu need:",
          "why": "why each option is there:"}


def _said(plan: sc.Plan, lang: str) -> sc.Plan:
    """The plan's title, notes and why each option is there in ``lang`` (each a ``plan.*`` note or the playbook's
    English, said from the message catalog: issue 56, item 9); commands, file names and the files' code stay
    as they are."""
    from ..report.i18n import say
    plan.title = say(plan.title, lang)
    plan.notes = [say(n, lang) for n in plan.notes]
    plan.explain = [(flag, say(why, lang)) for flag, why in plan.explain]
    return plan


def render_plan(plan: sc.Plan, written: list[str] | None, explain: bool, one_line: bool = False,
                lang: str = "en") -> str:
    """What ``command`` prints: a valid shell script (comments, heredocs for wrappers, the commands)."""
    from ..notes import Note
    from ..report.i18n import say
    from ..report.labels import words
    plan = _said(plan, lang)
    w = words("command", _WORDS, lang)
    note = w["note"]
    out = [_comment(plan.title)]   # every user value in a comment stays in it (_comment: each line prefixed)
    if plan.container:
        out.append("# " + w["container"])
        out += [_comment(c, "#   ") for c in plan.container]
    def files(fs):
        for f in fs:
            if written is not None:
                path = next(p for p in written if os.path.basename(p) == f.name)
                out.append(_comment(f"wrote {path}" + (" (executable)" if f.executable else "")))
            else:
                out.append("# " + say(Note("plan.file_not_written", {"name": f.name}), lang))
                body = f.content.rstrip(chr(10))
                tag = heredoc_tag(body)   # a terminator no line of the file can end early
                out.append(f"cat > {shlex.quote(f.name)} <<'{tag}'\n{body}\n{tag}")
                if f.executable:
                    out.append(f"chmod +x {shlex.quote(f.name)}")

    files([f for f in plan.files if f.executable])   # wrappers the commands run: before them
    out.append(plan.shell(multiline=not one_line))
    for n in plan.notes:
        out.append(_comment(note + n))
    if not one_line:   # code to paste into the user's script (the torch.profiler twin): after, never in --one-line
        files([f for f in plan.files if not f.executable])
    if explain and plan.explain:
        out.append("# " + w["why"])
        for flag, why in plan.explain:
            out.append(_comment(flag, "#   "))
            out.append(_comment(why, "#       "))
    return "\n".join(out) + "\n"


def _list_scenarios() -> str:
    w = max(len(k) for k in sc.SCENARIOS)
    lines = ["Scenarios (nsys-expert command SCENARIO [options] [-- APP...]):"]
    for name, (tpl, _) in sc.SCENARIOS.items():
        lines.append(f"  {name:<{w}}  {tpl:<5}  {sc.SITUATIONS[name]}")
    lines.append("--explain says why each option is there; --out-dir DIR writes the wrapper files.")
    return "\n".join(lines) + "\n"


@command("command", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("scenario", required=False, metavar="[SCENARIO]", type=Choice(list(sc.SCENARIOS)))
@click.argument("app", nargs=-1, type=click.UNPROCESSED)
@output_option("write the commands to FILE instead of stdout")
@click.option("--name", help="the nsys / ncu report name, without extension (default: the playbook's)")
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
@click.option("--cuda-graph-trace", type=Choice(["graph", "node"]),
              help="nsys: node traces every kernel of a CUDA graph (nsys-expert needs it for graphed code)")
@click.option("--container", type=Choice(["docker", "k8s"]), help="add the capabilities nsys / ncu need")
@click.option("--gpu-metrics", "gpu_metrics", is_flag=False, flag_value="all", default=None, metavar="[all|IDS]",
              help="add --gpu-metrics-devices (SM / tensor / DRAM / PCIe samples; one process per GPU); bare: all")
@click.option("--out-dir", type=click.Path(file_okay=False), help="write the wrapper files here")
@click.option("--explain", is_flag=True, help="say why each option is there")
@click.option("--lang", type=Choice(languages()), default="en", show_default=True)
@click.option("--one-line", is_flag=True, help="print each command on one line")
@format_option(["text", "json"], "text")
def command_cmd(scenario, app, output, name, trace, pytorch_modes, ranks, nproc_per_node, nnodes, range_name, delay,
                duration, kernel, launch_skip, launch_count, input_, before, after, cuda_graph_trace, container,
                gpu_metrics, out_dir, explain, lang, one_line, fmt):
    """Print the nsys / ncu command(s) for a situation (playbook templates A-G and the ncu templates).

    Give the application after --, e.g.: nsys-expert command quick -- python train.py --lr 3e-4.
    Without SCENARIO: the list of scenarios.
    """
    if not scenario:
        emit(_list_scenarios(), output)
        return
    opts = sc.Options(app=tuple(app) or sc.DEFAULT_APP, output=name, trace=trace,
                      pytorch=tuple(pytorch_modes) or ("autograd-nvtx",), ranks=ranks or (0,),
                      nproc_per_node=nproc_per_node, nnodes=nnodes, range_name=range_name, delay=delay,
                      duration=duration, kernel=kernel, launch_skip=launch_skip, launch_count=launch_count,
                      input=input_, before=_words(before), after=_words(after), cuda_graph_trace=cuda_graph_trace,
                      container=container, wrapper_dir=out_dir, gpu_metrics=gpu_metrics)
    try:
        plan = sc.build(scenario, opts)
    except ValueError as e:
        raise InputError(str(e)) from None
    written = _write_files(plan, out_dir) if out_dir and plan.files else None
    if fmt == "json":
        plan = _said(plan, lang)
        emit(json.dumps({
            "scenario": plan.scenario, "title": plan.title, "commands": plan.lines(),
            "files": [{"name": f.name, "executable": f.executable, "content": f.content,
                       **({"path": os.path.join(out_dir, f.name)} if written else {})} for f in plan.files],
            "notes": plan.notes, "container": plan.container, "outputs": plan.outputs,
            "explain": [{"option": a, "why": b} for a, b in plan.explain]}, indent=2, ensure_ascii=False) + "\n",
            output)
        return
    emit(render_plan(plan, written, explain, one_line, lang), output)
