"""``nsys-expert diagnose PATH...``: the report of a profile (Markdown, JSON or an HTML page).

Exit codes: 0 ran (findings or not), 1 findings at or above ``--fail-on``, 2 bad input or usage,
3 an internal error.
"""
from __future__ import annotations

import contextlib
import math
import re
import sys

import click

from ..notes import Note
from .options import (Choice, languages, command, config_option, format_option, memory_option, output_option, resolve_settings,
                      say, write_output)

# the largest time stamp a window may name: nsys times are int64 ns; 2^62 leaves room for END - START
MAX_NS = float(2 ** 62)
SEVERITIES = ["info", "low", "medium", "high", "critical"]


def _parse_time(s: str) -> int:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*(ns|us|ms|s)?\s*", s)
    if not m:
        raise click.BadParameter(f"'{s}' is not a time (e.g. 16.4s, 16400ms or 16400000000)")
    v, unit = float(m.group(1)), m.group(2)
    if unit is None:
        unit = "s" if ("." in m.group(1) or v < 1e5) else "ns"
    ns = v * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
    if not math.isfinite(ns) or ns > MAX_NS:   # 1e400 is inf; 1e19 ns does not fit the int64 time stamps
        raise click.BadParameter(f"'{s}' is too large for a time stamp (at most {MAX_NS / 1e9 / 86400 / 365.25:.0f} "
                                 f"years, {MAX_NS:.3g} ns)")
    return int(round(ns))


def _parse_window(ctx, param, value):
    if value is None:
        return None
    if ":" not in value:
        raise click.BadParameter("use START:END, e.g. 16.4s:17.7s or 16400000000:17700000000 (ns)")
    a, b = value.split(":", 1)
    s, e = _parse_time(a), _parse_time(b)
    if e <= s:
        raise click.BadParameter(f"END must be after START ({value})")
    return (s, e)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def _no_progress(paths, lang):
    yield lambda *a, **k: None


MAX_WARNINGS = 10


def warn(d, lang: str | None, prefix: str = "") -> None:
    """The report's warnings that change what to believe (damaged or partial input; not the notes on
    which file gave which table), one line each on stderr, when the report itself goes to a file."""
    from ..report import split_warnings
    from ..report.i18n import translate

    important, _notes = split_warnings(d.warnings)
    for w in important[:MAX_WARNINGS]:
        say(f"warning: {prefix}{translate(w, lang)}")
    if len(important) > MAX_WARNINGS:
        say(f"warning: {prefix}and {len(important) - MAX_WARNINGS} more in the report's Warnings")


@command("diagnose")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@format_option(["md", "json", "html"], "md", show_default=False,
               help="md (Markdown: the default when the output is piped or goes to -o; at a terminal, "
                    "without --format, a short summary), json, or html (one self-contained page with "
                    "charts; use -o)")
@output_option()
@click.option("--lang", type=Choice(languages()), default=None, help="report language (default en)")
@click.option("--rules", "packs", multiple=True, type=click.Path(), help="an extra rule pack folder (repeatable)")
@click.option("--select", multiple=True, help="only these rules or categories (repeatable)")
@click.option("--ignore", multiple=True, help="leave out these rules or categories (repeatable)")
@click.option("--set", "overrides", multiple=True, metavar="RULE.PARAM=VALUE", help="override a rule parameter")
@click.option("--window", callback=_parse_window, help="analysis window START:END (s, ms, us or ns): times on the nsys timeline, or the report's seconds from the profile's first event (the report says which it read)")
@click.option("--skip-iterations", type=click.IntRange(min=0), help="warm-up iterations to leave out (default 1)")
@click.option("--iteration-range", metavar="NAME",
              help="the NVTX range that marks iterations (default: the outermost repeated non-library range)")
@click.option("--scheduler", metavar="local|dask|tcp://HOST:PORT",
              help="where a multi-rank job's per-rank work runs: local process pool (default), dask (a local "
                   "Dask cluster), or an existing Dask scheduler; Dask needs pip install \"nsys-expert[dask]\"")
@click.option("--fail-on", type=Choice(SEVERITIES), help="exit 1 when a finding is at or above this severity")
@click.option("--show-facts", is_flag=True, help="also print every fact of this run with its value and source")
@memory_option()
@config_option()
def diagnose(paths, fmt, output, lang, packs, select, ignore, overrides, window, skip_iterations, iteration_range,
             scheduler, fail_on, show_facts, config_path):
    """Diagnose a profile. PATHS: a folder of `nsys stats --format csv` reports (or the CSV files);
    an `nsys export --type sqlite` file, or the .nsys-rep itself when nsys is on PATH; console text
    holding nsys stats tables (a `nsys profile --stats=true` log, pasted output); Nsight Compute
    CSVs (`ncu -i X.ncu-rep --csv --page details` or `--page raw`) beside them or in ncu/;
    torch.profiler (Kineto) Chrome traces (NAME.pt.trace.json, .json.gz, a folder of per-rank
    traces); any of these gzipped; several ranks of one job (a folder per rank, per-rank files, or
    one export with several processes).

    \b
    -o FILE writes the report to FILE (its own earlier report too; never an input, and no
    other file without --force) and says so on stderr, with the input warnings;
    --format md|json|html picks what is written (html: use -o); --scheduler picks where a
    multi-rank job's per-rank work runs.
    Exit codes: 0 ran, 1 --fail-on tripped (stderr names the findings), 2 bad input or usage,
    3 internal error, 130 interrupted (Ctrl-C).
    """
    settings = resolve_settings(config_path, packs=packs, select=select, ignore=ignore, overrides=overrides,
                                window=window, skip_iterations=skip_iterations, lang=lang,
                                iteration_range=iteration_range, scheduler=scheduler, fail_on=fail_on)
    doc, series, zoom = _diagnosed(paths, settings, fmt)
    text = _rendered(doc, fmt, settings.lang, series, zoom, show_facts)
    if output:
        import os

        this_run = {os.path.basename(str(i.get("path", ""))) for i in doc.inputs}
        warn(doc, settings.lang)   # what the report's Warnings say about the input reaches a CI log too
        write_output(output, text, [*paths, *packs, *([config_path] if config_path else [])], this_run)
    else:
        _shown(doc, text, fmt, settings.lang, output, show_facts)
    _gate(doc, settings.fail_on)


def _diagnosed(paths, settings, fmt: str) -> tuple:
    """The report (and for html, the chart series), a spinner on stderr while it runs at a terminal."""
    from .. import pipeline

    req = pipeline.Request(list(paths), settings)
    if fmt == "html" or _isatty(sys.stderr):
        from ..report import terminal

        progress = terminal.progress
    else:   # piped, no spinner: the report modules load while the input is read (pipeline.run)
        progress = _no_progress
    with progress(paths, settings.lang) as spinner:   # a spinner on stderr, only at a terminal
        def step(phase, *args) -> None:
            if isinstance(phase, Note):   # said at once, before the work it is about (many ranks)
                from ..report.i18n import translate

                say(f"warning: {translate(phase, settings.lang)}")
            else:
                spinner(phase, *args)

        if fmt == "html":   # the pipeline computes the chart series; the report draws them
            return pipeline.diagnose_with_series(req, step)
        return pipeline.run(req, step).doc, None, None


def _rendered(doc, fmt: str, lang: str, series, zoom, show_facts: bool) -> str:
    from .. import report

    if fmt == "html":
        from ..report import html

        return html.render_html(doc, series, lang, zoom)
    text = report.to_json(doc) if fmt == "json" else report.render_markdown(doc, lang)
    if show_facts and fmt == "md":
        text += report.render_facts(doc, lang)
    return text


def _shown(doc, text: str, fmt: str, lang: str, output, show_facts: bool) -> None:
    """The report on stdout: at a terminal, without --format, the short summary."""
    from ..report import terminal

    if not show_facts and terminal.wants_summary(
            output, click.get_current_context().get_parameter_source("fmt").name != "DEFAULT"):
        terminal.summary(doc, lang)   # a person at a terminal who asked for nothing: the short version
        return
    if fmt == "md" and _isatty(sys.stdout):   # a terminal draws no HTML: the folded notes unfolded
        text = terminal.plain_details(text)
    click.echo(text, nl=False)


def _gate(d, fail_on: str | None) -> None:
    """``--fail-on``: exit 1 when a finding of ``d`` (a ``Diagnosis``) is at or above it (stderr names them)."""
    tripped = [f for f in d.findings if fail_on and SEVERITIES.index(f.severity) >= SEVERITIES.index(fail_on)]
    if tripped:
        names = ", ".join(f"{f.rule} ({f.severity})" for f in tripped[:3])
        more = f" and {len(tripped) - 3} more" if len(tripped) > 3 else ""
        say(f"exit 1: --fail-on {fail_on} tripped by {names}{more}")
        sys.exit(1)
