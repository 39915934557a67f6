"""Shared by every command: errors become one line on stderr with the right exit code."""
from __future__ import annotations

import os
import sys
import traceback

import click

from .errors import InputError


def _fail(msg: str, code: int = 2):
    click.echo(f"nsys-expert: error: {msg}", err=True)
    sys.exit(code)


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


def write_output(output: str, text: str) -> None:
    """Write a report to ``-o FILE`` (a write error is the user's: one line, exit 2)."""
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise InputError(f"cannot write the report ({e.strerror})", output) from e
