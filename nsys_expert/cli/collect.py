"""``nsys-expert collect -- APP``: run nsys, export what the rules read (SQLite and the stats CSVs),
and diagnose. The nsys commands come from ``scenarios``."""
from __future__ import annotations

import collections
import dataclasses
import os
import shutil
import subprocess
import sys
import threading

import click

from .. import config, scenarios as sc
from ..errors import InputError
from ..notes import Note
from .options import Choice, languages, command, config_option, emit, output_option, resolve_settings



def _ended(rc: int) -> str:
    """How a tool ended, for a message: never "failed (exit 0)" (issue 48, item 16)."""
    return f"failed (exit {rc})" if rc else "ended without an error"

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
                opts: sc.Options | None = None, diagnose: bool = True, settings: config.Settings | None = None,
                echo: bool = True) -> dict:
    """profile -> export (SQLite + the stats CSVs) -> diagnose with ``settings`` (resolved by the caller,
    as ``diagnose`` resolves them; None: the defaults). Returns the paths and the diagnosis (or None)."""
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
    rep, sqlite, csv_dir, log_path = base + ".nsys-rep", base + ".sqlite", base + "_csv", base + ".log"
    with open(log_path, "w", encoding="utf-8") as log:
        warnings = _profile(nsys, profile, scenario, opts, rep, log, log_path, echo)
        warnings += _export(nsys, sc.export_commands(base), rep, sqlite, csv_dir, log)
    result = {"diagnose_input": sqlite if opts.gpu_metrics else csv_dir, "report": rep, "sqlite": sqlite, "csv_dir": csv_dir, "log": log_path, "warnings": warnings,
              "csv": sorted(f for f in os.listdir(csv_dir) if f.endswith(".csv")), "doc": None}
    if diagnose:   # GPU metrics samples are only in the SQLite export (nsys stats has no report of them)
        result.update(_diagnosis(result["diagnose_input"], base, settings or config.Settings()))
    return result


def _profile(nsys: str, profile: list[str], scenario: str, opts: sc.Options, rep: str, log, log_path: str,
             echo: bool) -> list[str]:
    """``nsys profile``, logged; no report written is the user's error (what to check, by scenario)."""
    log.write("$ " + sc.Command(tuple(profile)).line() + "\n")
    rc, tail = _run([nsys, *profile[1:]], log, echo)
    if not os.path.exists(rep):
        hint = None
        if scenario == "nvtx-range":
            hint = f"did the app push the NVTX range '{opts.range_name}'?"
        elif scenario == "cuda-profiler-range":
            hint = "did the app call cudaProfilerStart()?"
        raise InputError(f"nsys profile {_ended(rc)} and wrote no report: {_trim(tail)}", log_path, hint)
    if rc != 0:
        return [Note("collect.profile_exit", {"rc": rc})]
    return []


def _export(nsys: str, exports: list[list[str]], rep: str, sqlite: str, csv_dir: str, log) -> list[str]:
    """``nsys export`` (the SQLite) and ``nsys stats`` (the CSVs), logged; -> warnings."""
    warnings: list = []
    os.makedirs(csv_dir, exist_ok=True)
    for argv in exports:
        log.write("$ " + sc.Command(tuple(argv)).line() + "\n")
        rc, tail = _run([nsys, *argv[1:]], log, False)
        if argv[1] == "export" and (rc != 0 or not os.path.exists(sqlite)):
            raise InputError(f"nsys export {_ended(rc)}" + (" but wrote no SQLite" if rc == 0 else "") + f": {_trim(tail)}", rep)
        if argv[1] == "stats":
            csvs = [f for f in os.listdir(csv_dir) if f.endswith(".csv")]
            if not csvs:
                raise InputError(f"nsys stats {_ended(rc)} and wrote no CSV: {_trim(tail)}", sqlite)
            if rc != 0:
                warnings.append(Note("collect.stats_exit", {"rc": rc, "tail": _trim(tail, 2)}))
    return warnings


def _diagnosis(path: str, base: str, settings: config.Settings) -> dict:
    """Diagnose ``path``; the report written beside it as Markdown and JSON."""
    from .. import pipeline, report

    doc = pipeline.diagnose(pipeline.Request([path], settings))
    md, js = base + ".diagnosis.md", base + ".diagnosis.json"
    with open(md, "w", encoding="utf-8") as fh:
        fh.write(report.render_markdown(doc, settings.lang))
    with open(js, "w", encoding="utf-8") as fh:
        fh.write(report.to_json(doc))
    return {"doc": doc, "markdown": md, "json": js}


def summary(res: dict) -> str:
    lines = ["nsys-expert collect: done",
             f"  report     {res['report']}",
             f"  sqlite     {res['sqlite']}",
             f"  csv        {res['csv_dir']}/ ({len(res['csv'])} reports)",
             f"  log        {res['log']}"]
    doc = res.get("doc")
    if doc is None:
        lines.append(f"  diagnose   nsys-expert diagnose {res.get('diagnose_input', res['csv_dir'])}")
    else:
        lines.append(f"  diagnosis  {res['markdown']}, {res['json']}")
        v = doc.verdict
        lines.append(f"verdict: {v.category or 'no bottleneck at medium severity or above'}"
                     + (f" (rule {v.rule}, severity {v.severity})" if v.rule else ""))
        for f in doc.findings[:5]:
            gain = f.estimated_gain_pct
            lines.append(f"  {f.rank}. [{f.severity}] {f.rule}: {f.message}"
                         + (f" (up to {gain:g} % of the window)" if gain is not None else ""))
        if doc.not_evaluated:
            lines.append(f"  {len(doc.not_evaluated)} rule(s) not evaluated (see the report)")
    for w in res["warnings"]:
        lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"


@command("collect", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("app", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--scenario", type=Choice(list(sc.COLLECTABLE)), default="quick", show_default=True)
@click.option("--out-dir", "--out", "out_dir", type=click.Path(file_okay=False), default="nsys-expert-out", show_default=True,
              help="folder for the report, the SQLite, the CSVs and the diagnosis")
@click.option("--name", default="profile", show_default=True, help="report name inside --out-dir")
@output_option("write the summary to FILE instead of stdout (the diagnosis is in --out-dir)")
@click.option("--nsys-arg", "nsys_args", multiple=True, metavar="OPTION",
              help="one more nsys profile option, e.g. --nsys-arg=--sample=none (repeatable)")
@click.option("--pytorch", "pytorch_modes", multiple=True, help="pytorch scenario: --pytorch modes")
@click.option("--range", "range_name", default="profile_region", show_default=True, help="nvtx-range: the NVTX range")
@click.option("--delay", type=click.IntRange(min=0), default=120, show_default=True, help="long-run: seconds to skip")
@click.option("--duration", type=click.IntRange(min=1), default=30, show_default=True, help="long-run: seconds to collect")
@click.option("--cuda-graph-trace", type=Choice(["graph", "node"]), help="node: trace each kernel of CUDA graphs")
@click.option("--gpu-metrics", "gpu_metrics", is_flag=False, flag_value="all", default=None, metavar="[all|IDS]",
              help="sample GPU metrics (--gpu-metrics-devices; bare: all) and diagnose the SQLite export, which holds them")
@click.option("--no-diagnose", is_flag=True, help="profile and export only (diagnose the CSV folder elsewhere)")
@click.option("--lang", type=Choice(languages()), default=None, help="report language (default en)")
@click.option("-q", "--quiet", is_flag=True, help="do not echo the application's output")
@config_option()
def collect_cmd(app, scenario, out_dir, name, output, nsys_args, pytorch_modes, range_name, delay, duration,
                cuda_graph_trace, gpu_metrics, no_diagnose, lang, quiet, config_path):
    """Profile APP with nsys, export the reports and SQLite the rules read, and diagnose.

    nsys-expert collect [--scenario quick] [--out-dir DIR] -- python train.py [args]
    """
    if name != os.path.basename(name) or name in ("", ".", ".."):
        raise InputError(f"--name {name!r}: a plain file name, without folders")
    opts = sc.Options(pytorch=tuple(pytorch_modes) or ("autograd-nvtx",), range_name=range_name, delay=delay,
                      duration=duration, cuda_graph_trace=cuda_graph_trace, extra=tuple(nsys_args),
                      gpu_metrics=gpu_metrics)
    settings = resolve_settings(config_path, lang=lang)   # the settings file's rules and language, as diagnose
    res = collect_run(list(app), scenario, out_dir, name, opts, diagnose=not no_diagnose, settings=settings,
                      echo=not quiet)
    emit(summary(res), output)
