"""``nsys-expert diff BEFORE AFTER``: what changed between two runs, with a regression gate."""
from __future__ import annotations

import json
import sys

import click

from .options import command, config_option, emit, format_option, memory_option, output_option, resolve_settings, say


@command("diff")
@click.argument("before", type=click.Path())
@click.argument("after", type=click.Path())
@format_option(["md", "json", "html"], "md")
@output_option()
@click.option("--fail-on-regression", "fail_pct", type=click.FloatRange(min=0),
              help="exit 1 when GPU active % / iteration time / a key fact gets worse by more than PCT "
                   "(points for % facts, percent for times), or a new high finding appears")
@click.option("--rules", "packs", multiple=True, type=click.Path(), help="an extra rule pack folder")
@click.option("--set", "overrides", multiple=True, metavar="RULE.PARAM=VALUE")
@memory_option()
@config_option()
def diff_cmd(before, after, fmt, output, fail_pct, packs, overrides, config_path):
    """Compare two runs (profiles, or JSON reports from diagnose --format json), each diagnosed with
    the settings `diagnose` would use (the command line over the settings file), resolved once."""
    from .. import diff, pipeline
    from ..diff import render

    settings = resolve_settings(config_path, packs=packs, overrides=overrides)

    warned: list[tuple[str, dict]] = []

    def run(path):
        doc = pipeline.run(pipeline.Request([path], settings)).doc
        warned.append((path, doc))
        return doc

    d = diff.compare(diff.load_side(before, run), diff.load_side(after, run), fail_pct)
    if output:   # the input warnings reach a CI log too, not only "wrote FILE" (issue 48, item 13)
        from .diagnose import warn

        for path, doc in warned:
            warn(doc, None, prefix=f"{path}: ")
    if fmt == "json":
        text = json.dumps(d, indent=2, ensure_ascii=False, default=str) + "\n"
    elif fmt == "html":
        text = render.render_html(d)
    else:
        text = render.render_markdown(d)
    emit(text, output, [before, after])
    if d["gate"] and d["gate"]["tripped"]:
        say("exit 1: --fail-on-regression " + f"{fail_pct:g} tripped by " + render.gate_reasons(d))
        sys.exit(1)
