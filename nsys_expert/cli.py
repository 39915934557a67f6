"""Command line: ``nsys-expert diagnose PATH...`` and the rule-pack commands.

Exit codes: 0 ran (findings or not), 1 findings at or above ``--fail-on``, 2 bad input or usage,
3 an internal error (a bug: please report it with the input that caused it).
"""
from __future__ import annotations

import os
import re
import sys
import traceback

import click

from . import __version__
from .errors import InputError

SEVERITIES = ["info", "low", "medium", "high", "critical"]


def _fail(msg: str, code: int = 2):
    click.echo(f"nsys-expert: error: {msg}", err=True)
    sys.exit(code)


def _parse_time(s: str) -> int:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?\d+)?)\s*(ns|us|ms|s)?\s*", s)
    if not m:
        raise click.BadParameter(f"'{s}' is not a time (e.g. 16.4s, 16400ms or 16400000000)")
    v, unit = float(m.group(1)), m.group(2)
    if unit is None:
        unit = "s" if ("." in m.group(1) or v < 1e5) else "ns"
    return int(round(v * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]))


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


def _guard(fn):
    """Turn user errors into one line + exit 2, and anything unexpected into one line + exit 3."""
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except InputError as e:
            _fail(e.line(), 2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except Exception as e:  # noqa: BLE001
            if os.environ.get("NSX_DEBUG"):
                traceback.print_exc()
            _fail(f"internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
                  f"(a bug in nsys-expert; NSX_DEBUG=1 shows where)", 3)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nsys-expert")
def main():
    """Diagnose GPU performance from Nsight Systems / Nsight Compute output."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the report here instead of stdout")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@click.option("--rules", "packs", multiple=True, type=click.Path(), help="an extra rule pack folder (repeatable)")
@click.option("--select", multiple=True, help="only these rules or categories (repeatable)")
@click.option("--ignore", multiple=True, help="leave out these rules or categories (repeatable)")
@click.option("--set", "overrides", multiple=True, metavar="RULE.PARAM=VALUE", help="override a rule parameter")
@click.option("--window", callback=_parse_window, help="analysis window START:END (s, ms, us or ns)")
@click.option("--skip-iterations", type=click.IntRange(min=0), help="warm-up iterations to leave out (default 1)")
@click.option("--fail-on", type=click.Choice(SEVERITIES), help="exit 1 when a finding is at or above this severity")
@_guard
def diagnose(paths, fmt, output, lang, packs, select, ignore, overrides, window, skip_iterations, fail_on):
    """Diagnose a profile: a folder of nsys stats CSVs (or the files themselves)."""
    from . import pipeline, report

    doc = pipeline.diagnose(pipeline.Request(list(paths), list(packs), list(select), list(ignore),
                                             list(overrides), window, skip_iterations, lang))
    text = report.to_json(doc) if fmt == "json" else report.render_markdown(doc, lang)
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise InputError(f"cannot write the report ({e.strerror})", output) from e
    else:
        click.echo(text, nl=False)
    if fail_on and any(SEVERITIES.index(f["severity"]) >= SEVERITIES.index(fail_on) for f in doc["findings"]):
        sys.exit(1)


from . import cli_ext  # noqa: E402

cli_ext.register(main)

if __name__ == "__main__":  # pragma: no cover
    main()
