"""The thin CLI: parses flags, builds the engine (bootstrap.py), calls the core, prints.

Exit codes (see README):
    0  success (a tick whose rows recorded errors still exits 0 unless
       --fail-on-errors; the errors are in the rows and on stderr)
    1  unexpected error, or row errors with --fail-on-errors
    2  bad flags or settings, missing API key
    3  jobs file refused (every bad line named; nothing reserved)
    4  ledger unusable (newer schema, corrupt, locked past busy timeout, read-only,
       not a reclaim-tui ledger, its folder missing)
    5  operator action refused (unknown key, wrong status, row held by a live process)
    6  API unreachable or refusing us (a refused key, network down, rate limited, at
       capacity): the circuit breaker stopped the pass; no job was failed for it
"""

from __future__ import annotations

import importlib
from typing import ClassVar

import click

# The modules, not their commands, by name: a command named like its module
# (console, costs, prune) would hide the module behind `reclaim_tui.cli.<name>`.
from reclaim_tui.cli import console, costs, data, jobs, prune, rows
from reclaim_tui.cli.options import bound_numbers

__all__ = ["cli", "main"]


class _LazyGroup(click.Group):
    """A group whose heavier commands are imported only when named (or listed by
    --help): `reclaim-tui emulator` pulls in aiohttp, cryptography and PyJWT, half of
    an idle tick's start-up when every command imported it (issue 27). The server
    commands (cli/servers.py) come the same way."""

    lazy: ClassVar[dict[str, str]] = {
        "emulator": "reclaim_tui.emulator.command:emulator",
        "inbox": "reclaim_tui.cli.servers:inbox",
        "webhooks": "reclaim_tui.cli.servers:webhooks",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.lazy.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, name = where.partition(":")
        command = getattr(importlib.import_module(module), name)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, invoke_without_command=True)
@click.version_option(package_name="reclaim-tui")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """reclaim-tui: fire background Gemini jobs, exit, and never lose a result."""
    if ctx.invoked_subcommand is None:
        # Parsed as `reclaim-tui console` with no flags, so the RECLAIM_*
        # variables apply (ctx.invoke would take the bare defaults).
        command = console.console
        with command.make_context("console", [], parent=ctx) as console_ctx:
            command.invoke(console_ctx)


# Their order here is not --help's: the group lists its commands by name.
_COMMANDS = (
    *(jobs.tick, jobs.run_command, jobs.submit),
    *(rows.show, rows.retry, rows.cancel, rows.adopt, rows.answer, rows.recover, rows.replay),
    *(data.status, data.export, costs.costs, prune.prune, data.migrate),
    *(console.console, console.demo),
)
for _command in _COMMANDS:
    cli.add_command(_command)
# After every command is added: no numeric flag without a range (the lazy
# commands' modules bound their own).
bound_numbers(cli)


def main() -> None:
    cli(prog_name="reclaim-tui")
