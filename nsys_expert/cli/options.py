"""What every subcommand shares, in one place: how a subcommand is declared (:func:`command`, which
adds the error handling), the ``-o`` and ``--format`` options, and writing the output.

Errors become one line on stderr with the right exit code: 2 for bad input or usage (an
``InputError``; click's own usage errors exit 2 too), 3 for anything unexpected (a bug), 130 when
interrupted.
"""
from __future__ import annotations

import functools
import os
import sys
import traceback

import click

from ..errors import InputError


def fail(msg: str, code: int = 2):
    click.echo(f"nsys-expert: error: {msg}", err=True)
    sys.exit(code)


def guard(fn):
    """Turn user errors into one line + exit 2, and anything unexpected into one line + exit 3."""
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except InputError as e:
            fail(e.line(), 2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except OSError as e:
            if e.filename is None:
                raise_internal(e)
            # a file that vanished, became unreadable or turned into a folder while in use:
            # the user's environment, not a bug (the loaders check paths first: load/files.py)
            fail(f"{e.filename}: {e.strerror or type(e).__name__}", 2)
        except Exception as e:  # noqa: BLE001
            raise_internal(e)
    return wrapper


def raise_internal(e: BaseException):
    """An unexpected exception: one line, exit 3 (NSX_DEBUG=1 prints the traceback)."""
    if os.environ.get("NSX_DEBUG"):
        traceback.print_exception(e)
    fail(f"internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
         f"(a bug in nsys-expert; NSX_DEBUG=1 shows where)", 3)


def command(name: str, **settings):
    """``@command("diff")`` above a subcommand's click options: a click command whose callback runs
    under :func:`guard` (the group in ``cli/__init__.py`` lists it in ``COMMANDS``)."""
    def decorate(fn):
        return click.command(name, **settings)(guard(fn))
    return decorate


def format_option(choices: list[str], default: str, help: str | None = None):
    """``--format`` (the value arrives as ``fmt``), its default shown in ``--help``."""
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help=help)


def output_option(help: str = "write the report here instead of stdout", path: bool = True):
    """``-o`` / ``--output``: a file to write instead of stdout (``path=False``: a plain name, as
    ``command`` takes for the report it will write)."""
    return click.option("-o", "--output", type=click.Path(dir_okay=False) if path else None, help=help)


def write_output(output: str, text: str) -> None:
    """Write a report to ``-o FILE`` (a write error is the user's: one line, exit 2)."""
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise InputError(f"cannot write the report ({e.strerror})", output) from e


def emit(text: str, output: str | None) -> None:
    """The output of a subcommand: to ``-o FILE`` when given, else stdout as it is."""
    if output:
        write_output(output, text)
    else:
        click.echo(text, nl=False)
