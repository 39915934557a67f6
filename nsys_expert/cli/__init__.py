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

import click

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


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nsys-expert")
def main():
    """Diagnose GPU performance from Nsight Systems / Nsight Compute output."""
    import signal

    if hasattr(signal, "SIGPIPE"):  # `nsys-expert rules | head` ends quietly, like any Unix tool
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
