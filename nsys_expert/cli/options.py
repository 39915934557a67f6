"""What every subcommand shares, in one place: how a subcommand is declared (:func:`command`, which
adds the error handling), the ``-o`` and ``--format`` options, and writing the output.

Errors become one line on stderr with the right exit code: 2 for bad input or usage (an
``InputError``; click's own usage errors exit 2 too), 3 for anything unexpected (a bug), 130 when
interrupted.
"""
from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
import traceback

import click

from ..errors import InputError
from ..textsafe import one_line


def fail(msg: str, code: int = 2):
    click.echo(f"nsys-expert: error: {one_line(msg)}", err=True)
    sys.exit(code)


def say(msg: str) -> None:
    """One line on stderr that is not an error ("wrote FILE", why the exit code is 1)."""
    click.echo(f"nsys-expert: {one_line(msg)}", err=True)


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


class Choice(click.Choice):
    """``click.Choice`` that suggests the closest choice ("did you mean 'quick'?")."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            import difflib

            hint = difflib.get_close_matches(str(value), list(self.choices), 1, 0.5)
            msg = f"'{value}' is not one of {', '.join(map(str, self.choices))}"
            self.fail(msg + (f" (did you mean '{hint[0]}'?)" if hint else ""), param, ctx)


def format_option(choices: list[str], default: str, help: str | None = None):
    """``--format`` (the value arrives as ``fmt``), its default shown in ``--help``."""
    return click.option("--format", "fmt", type=Choice(choices), default=default, show_default=True,
                        help=help or "output format: " + ", ".join(choices))


def _set_force(ctx, _param, value):
    if value:
        ctx.meta["nsx_force"] = True
    return value


def output_option(help: str = "write the output to FILE instead of stdout"):
    """``-o`` / ``--output FILE``: the one meaning of ``-o`` in every subcommand (a file written
    instead of stdout; never one of the inputs), and ``--force``: replace a FILE that nsys-expert did
    not write (a rule pack, a config, a report of another run)."""
    out = click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="FILE", help=help)
    force = click.option("--force", is_flag=True, expose_value=False, callback=_set_force,
                         help="let -o replace an existing file that is not this command's earlier output")
    return lambda fn: out(force(fn))


# files -o never replaces without --force: what nsys-expert or a build reads, not what it writes
PRECIOUS_SUFFIXES = (".yaml", ".yml", ".toml", ".py", ".cfg", ".ini", ".sqlite", ".nsys-rep", ".qdrep",
                     ".ncu-rep", ".csv", ".gz")


def _report_inputs(head: str) -> set[str] | None:
    """The input file names an nsys-expert report lists (its JSON ``inputs``, the Markdown or HTML
    "Inputs" line), or None when ``head`` is no diagnosis report."""
    import json
    import re

    if head.lstrip().startswith("{"):
        try:
            doc = json.loads(head)
        except ValueError:
            return None
        if isinstance(doc, dict) and (doc.get("tool") or {}).get("name") == "nsys-expert" and "inputs" in doc:
            return {os.path.basename(str(i.get("path", ""))) for i in doc.get("inputs") or [] if isinstance(i, dict)}
        return None
    if head.startswith("# nsys-expert diagnosis") or 'name="generator" content="nsys-expert' in head[:2000]:
        m = re.search(r"(?:Inputs|输入)[^:：\n]*[:：]\s*(.*)", head)
        names = re.findall(r"(?:`|<code>)([^`<]+)(?:`|</code>)", m.group(1)) if m else []
        return set(names) or None
    return None


def _written_by_us(head: str, text: str) -> bool:
    """Earlier output of nsys-expert: it names the tool, or starts as this output does."""
    first = text.split("\n", 1)[0].strip()
    return "nsys-expert" in head[:4000] or bool(first) and head.split("\n", 1)[0].strip() == first


def overwrite_refusal(target: str, inputs=(), this_run: set[str] | None = None, text: str = "") -> str | None:
    """Why ``-o`` must not replace ``target`` (None: it may): an input; a file of a kind nsys-expert
    reads rather than writes (a rule pack, a config, a profile); a file nsys-expert did not write; the
    diagnosis report of another run (its inputs are not this run's)."""
    if target in input_files(inputs):
        return "is one of the inputs; refusing to overwrite it"
    if not os.path.isfile(target) or os.path.getsize(target) == 0:
        return None
    if click.get_current_context(silent=True) and click.get_current_context().meta.get("nsx_force"):
        return None
    if target.lower().endswith(PRECIOUS_SUFFIXES):
        return "exists and is not a report (a config, rule pack or profile); refusing to overwrite it"
    try:
        with open(target, encoding="utf-8", errors="replace") as fh:
            head = fh.read(1 << 20)
    except OSError:
        return None
    if not _written_by_us(head, text):
        return "exists and was not written by nsys-expert; refusing to overwrite it"
    theirs = _report_inputs(head)
    if this_run and theirs and not theirs & this_run:
        return "holds the report of another run; refusing to overwrite it"
    return None


def input_files(paths) -> set[str]:
    """The real paths of every file the inputs name (a folder: every file below it), so ``-o`` can
    refuse to overwrite one of them."""
    out: set[str] = set()
    for p in paths:
        real = os.path.realpath(p)
        if os.path.isdir(real):
            for root, _dirs, files in os.walk(real):
                out.update(os.path.realpath(os.path.join(root, f)) for f in files)
        else:
            out.add(real)
    return out


_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def special_file(target: str) -> str | None:
    """Why ``-o`` must not write ``target`` whatever ``--force`` says: it (or what its link points to) is a
    device, FIFO, socket or folder; the atomic rename would replace the node (``-o /dev/null`` as root)."""
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return None
    kind = next((k for test, k in _KINDS if test(mode)), None)
    return f"is {kind}, not a regular file; -o writes only regular files" if kind else None


def write_output(output: str, text: str, inputs=(), this_run: set[str] | None = None) -> None:
    """Write a report to ``-o FILE``: refused when FILE resolves to one of the inputs (a symlink to
    one included) or to a file it must not replace without ``--force`` (:func:`overwrite_refusal`;
    ``this_run``: the input file names of this diagnosis); written atomically (a temporary file in FILE's folder, then renamed over it), so
    an interrupted run leaves the old file whole; then "wrote FILE" on stderr. A write error is the
    user's: one line, exit 2."""
    import tempfile

    target = os.path.realpath(output)
    why = special_file(target) or overwrite_refusal(target, inputs, this_run, text)
    if why:
        raise InputError(why, output, "give -o a new file name" + ("" if "inputs" in why or "regular" in why
                                                                   else ", or --force"))
    folder = os.path.dirname(target) or "."
    tmp = None
    try:
        mode = os.stat(target).st_mode & 0o7777 if os.path.exists(target) else None
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise InputError(f"cannot write the report ({e.strerror})", output) from e
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    say(f"wrote {output}")


def emit(text: str, output: str | None, inputs=()) -> None:
    """The output of a subcommand: to ``-o FILE`` when given, else stdout as it is."""
    if output:
        write_output(output, text, inputs)
    else:
        click.echo(text, nl=False)
