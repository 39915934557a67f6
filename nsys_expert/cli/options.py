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
        from .. import budget

        try:
            with budget.watch(_inputs(kw)):   # past the memory budget: one line, exit 2 (never the OOM killer)
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


def _inputs(kw: dict) -> list[str]:
    """What a command reads, for the memory watch's message."""
    return [str(p) for p in (*(kw.get("paths") or ()), kw.get("before"), kw.get("after")) if p]


def memory_option():
    """``--max-memory SIZE``: the memory budget of this run (:mod:`nsys_expert.budget`)."""
    def given(ctx, param, value):
        from .. import budget

        try:
            budget.set_limit(value)
        except InputError as e:
            raise click.BadParameter(e.message + (f" ({e.hint})" if e.hint else "")) from None
        return value
    return click.option("--max-memory", "max_memory", metavar="SIZE", callback=given, expose_value=False,
                        help="the most memory this run may hold (e.g. 8G, 512M, 25%; default NSX_MAX_MEMORY, else "
                             "half of this machine's memory), a multi-rank run's local worker processes included: "
                             "past it, one line and exit 2")


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


# what users type for a choice under another name: suggested, not taken ('cn' was answered "did you mean
# 'en'?", the closest spelling, where a Chinese user means zh: issue 56, item 12)
ALIASES = {"cn": "zh", "zh-cn": "zh", "zh_cn": "zh", "zh-hans": "zh", "chinese": "zh", "中文": "zh",
           "english": "en", "en-us": "en", "en_us": "en", "markdown": "md", "htm": "html", "txt": "text"}


def languages() -> list[str]:
    """What ``--lang`` takes: English and every language a catalog folder holds (``notes/catalogs.py``: a
    language is its catalog files, no code names one)."""
    from ..notes.catalogs import languages as found

    return found()


class Choice(click.Choice):
    """``click.Choice`` that suggests the closest choice ("did you mean 'quick'?"), or the one a known
    other name means (:data:`ALIASES`)."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            import difflib

            alias = ALIASES.get(str(value).strip().lower())
            hint = [alias] if alias in self.choices else \
                difflib.get_close_matches(str(value), list(self.choices), 1, 0.5)
            msg = f"'{value}' is not one of {', '.join(map(str, self.choices))}"
            self.fail(msg + (f" (did you mean '{hint[0]}'?)" if hint else ""), param, ctx)


def resolve_settings(config_path: str | None, **given):
    """The settings of this command, resolved once here (``config.resolve``): the command line's values
    (``given``, by ``config.Settings``' field names; None or empty: not given) over the settings file's
    (``--config FILE``, else the nearest ``nsys-expert.toml`` or ``pyproject.toml``)."""
    from types import SimpleNamespace

    from .. import config

    return config.resolve(SimpleNamespace(**given), config.load(config_path))


def config_option():
    """``--config FILE``: the settings file (the value arrives as ``config_path``)."""
    return click.option("--config", "config_path", type=click.Path(dir_okay=False),
                        help="settings file (default: the nearest nsys-expert.toml, or pyproject.toml with "
                             "[tool.nsys-expert], from the current folder up)")


def format_option(choices: list[str], default: str, help: str | None = None, show_default: bool = True):
    """``--format`` (the value arrives as ``fmt``), its default shown in ``--help`` (``show_default``
    False: the help says it in words, where the default depends on where the output goes)."""
    return click.option("--format", "fmt", type=Choice(choices), default=default, show_default=show_default,
                        help=help or "output format: " + ", ".join(choices))


def _set_force(ctx, _param, value):
    if value:
        ctx.meta["nsx_force"] = True
    return value


def output_option(help: str = "write the output to FILE instead of stdout"):
    """``-o`` / ``--output FILE``: the one meaning of ``-o`` in every subcommand (a file written
    instead of stdout; never one of the inputs), and ``--force``: replace a FILE that is not
    nsys-expert's own output (a rule pack, a config, notes)."""
    out = click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="FILE", help=help)
    force = click.option("--force", is_flag=True, expose_value=False, callback=_set_force,
                         help="let -o replace an existing file that is not an nsys-expert report or listing")
    return lambda fn: out(force(fn))


# files -o never replaces without --force: what nsys-expert or a build reads, not what it writes
PRECIOUS_SUFFIXES = (".yaml", ".yml", ".toml", ".py", ".cfg", ".ini", ".sqlite", ".nsys-rep", ".qdrep",
                     ".ncu-rep", ".csv", ".gz")


def _written_by_us(head: str, text: str) -> bool:
    """Earlier output of nsys-expert: a report (its JSON names the tool, its Markdown starts with
    "# nsys-expert", its HTML page names it as generator), or a file that starts as this output does (a
    listing of ``rules`` or ``facts``). A file that only mentions nsys-expert (notes, a README) is not."""
    import json

    lead = head.lstrip()
    if lead.startswith(("{", "[")):
        return _same_json(head, text)
    if lead.startswith("# nsys-expert") or 'name="generator" content="nsys-expert' in head[:2000]:
        return True
    first = text.split("\n", 1)[0].strip()
    return bool(first) and head.split("\n", 1)[0].strip() == first


def _same_json(head: str, text: str) -> bool:
    """A JSON file is nsys-expert's when it names the tool (a diagnosis), or has the keys of what this
    command writes now (a diff: schema_version, before, after; a listing: its rows' keys); a first line
    of "{" alone says nothing (any JSON file has it)."""
    import json

    def keys(s):
        try:
            v = json.loads(s)
        except ValueError:
            return None
        if isinstance(v, dict):
            return ("tool", (v.get("tool") or {}).get("name")) if isinstance(v.get("tool"), dict) else frozenset(v)
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return frozenset(v[0])
        return None

    theirs = keys(head)
    if theirs == ("tool", "nsys-expert"):
        return True
    return theirs is not None and theirs == keys(text)


def overwrite_refusal(target: str, inputs=(), this_run: set[str] | None = None, text: str = "") -> str | None:
    """Why ``-o`` must not replace ``target`` (None: it may): an input; a file of a kind nsys-expert
    reads rather than writes (a rule pack, a config, a profile); a file that is not nsys-expert's own
    output. Its own earlier report is replaced, of this run or another (issue 48, item 5: the profile ->
    fix -> profile again loop writes one report file over and over). ``this_run`` is kept for callers."""
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
        return "exists and is not an nsys-expert report; refusing to overwrite it"
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
