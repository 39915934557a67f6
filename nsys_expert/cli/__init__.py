"""Command line: the ``nsys-expert`` group and the table of its subcommands.

Each subcommand lives in its own module of this package, imported only when that subcommand is
asked for (``--help`` lists them all, so it imports them all): ``diagnose`` starts without the
profiling or rule-pack commands. What every subcommand shares (``-o``, ``--format``, writing the
output, errors as one line with an exit code) is in :mod:`.options`.

Exit codes: 0 ran (findings or not), 1 findings at or above ``--fail-on``, 2 bad input or usage,
3 an internal error (a bug: please report it with the input that caused it).
"""
from __future__ import annotations

import importlib
import os

import click

# Polars allocates through its own jemalloc, which keeps freed pages for 10 s before handing them
# back: a big trace's read leaves its parse chunks resident while the facts allocate anew (+350 MB
# at ten million operations). Returned after 200 ms instead: the same speed, a lower peak. Read by
# jemalloc when Polars is first imported (after this line); a value the user set is kept.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:200,muzzy_decay_ms:0")

from .. import __version__

# subcommand -> (module of this package, the click command in it); a new subcommand is one module
# and one line here
COMMANDS = {
    "diagnose": ("diagnose", "diagnose"),
    "diff": ("diff", "diff_cmd"),
    "rules": ("rules", "rules_cmd"),
    "explain": ("rules", "explain_cmd"),
    "check-rules": ("rules", "check_rules_cmd"),
    "facts": ("rules", "facts_cmd"),
    "command": ("command", "command_cmd"),
    "collect": ("collect", "collect_cmd"),
}


class _LazyGroup(click.Group):
    """Imports a subcommand's module on first need (its name on the command line, or ``--help``)."""

    def get_command(self, ctx, cmd_name):
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            cmd = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
            self.add_command(cmd, cmd_name)
        return cmd

    def list_commands(self, ctx):
        return sorted(set(self.commands) | set(COMMANDS))

    def resolve_command(self, ctx, args):
        """An unknown subcommand: the closest one ("did you mean 'diagnose'?")."""
        import difflib

        name = args[0] if args else None
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            hint = difflib.get_close_matches(name, self.list_commands(ctx), 1, 0.5)
            ctx.fail(f"No such command '{name}'" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                    )
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        """Usage errors quote what the user typed (a file name): escape sequences in it are shown,
        never obeyed by the terminal (``textsafe.one_line``)."""
        try:
            return super().invoke(ctx)
        except click.ClickException as e:
            from ..textsafe import one_line

            e.message = one_line(e.message)
            if isinstance(e, click.BadParameter) and e.param_hint:
                e.param_hint = one_line(str(e.param_hint))
            raise


def _show_usage_error(self, file=None):
    """A usage error is one line, as every other error: what is wrong and where the help is (click's
    default is four: the usage, "Try ... --help", a blank line, the error)."""
    from ..textsafe import one_line

    where = f" (see {self.ctx.command_path} --help)" if getattr(self, "ctx", None) else ""
    click.echo(f"nsys-expert: error: {one_line(self.format_message())}{where}", err=True, file=file)


click.exceptions.UsageError.show = _show_usage_error


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nsys-expert")
def main():
    """Diagnose GPU performance from Nsight Systems / Nsight Compute output.

    \b
    Every subcommand: -o/--output FILE writes what it would print to FILE
    (stderr says "wrote FILE"; it replaces its own earlier reports and
    listings, anything else only with --force); --format picks the format where there is
    more than one. Exit codes: 0 ran, 1 a gate tripped (--fail-on,
    --fail-on-regression, a failing rule case; stderr says which),
    2 bad input or usage, 3 internal error, 130 interrupted (Ctrl-C).
    """
    import atexit
    import gc
    import signal

    # at exit, the interpreter's last garbage collections walk every object of the run (Polars, Jinja2,
    # the findings) only to free memory the process gives back anyway: ~45 ms of a 0.6 s diagnosis.
    # Registered first, this runs after every other exit handler; files and temp folders are closed by
    # then (the output is written and closed by the command, temp folders by their own handlers).
    atexit.unregister(gc.freeze)          # once, however often main() is called in one process
    atexit.register(gc.freeze)
    if hasattr(signal, "SIGPIPE"):  # `nsys-expert rules | head` ends quietly, like any Unix tool
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
