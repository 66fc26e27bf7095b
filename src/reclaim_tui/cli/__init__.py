"""The thin CLI: parses flags, builds the engine (bootstrap.py), calls the core, prints.

Exit codes (see docs/cli.md):
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

from reclaim_tui.cli.options import bound_numbers

__all__ = ["cli", "main"]

#: The end of `reclaim-tui --help`, as a manual page ends: the exit status, the
#: environment, completion and where the manual is (docs/cli.md says the same;
#: tests/unit/test_docs.py holds them together).
EPILOG = """\b
Exit status:
  0  success (a pass's row errors are in the rows and on stderr)
  1  unexpected error, or row errors with --fail-on-errors
  2  bad flags or settings, or no API key
  3  jobs file refused: every bad line named, nothing reserved
  4  ledger unusable: newer, corrupt, locked, read-only, unreachable, replaced
  5  operator action refused: unknown key, wrong status, held by a live process
  6  API unreachable or refusing us: no job was failed for it

\b
Environment: GEMINI_API_KEY or GOOGLE_API_KEY (the key), RECLAIM_DB (--db),
RECLAIM_BASE_URL (--base-url), RECLAIM_PG_SCHEMA (--schema).

\b
Shell completion (bash; zsh_source and fish_source for the others):
  eval "$(_RECLAIM_TUI_COMPLETE=bash_source reclaim-tui)"

\b
Each command's flags: reclaim-tui COMMAND --help. The manual: docs/ (./dev docs).
"""


class _LazyGroup(click.Group):
    """A group whose commands are imported only when named (or listed by
    --help): a command imports only what it uses. `reclaim-tui
    emulator` pulls in aiohttp, cryptography and PyJWT, and `status` the
    console's queries; an idle `tick` needs neither. Each command's numeric
    flags get their bounds as it loads (options.py, `bound_numbers`)."""

    lazy: ClassVar[dict[str, str]] = {
        "tick": "reclaim_tui.cli.jobs:tick",
        "run": "reclaim_tui.cli.jobs:run_command",
        "submit": "reclaim_tui.cli.jobs:submit",
        "show": "reclaim_tui.cli.rows:show",
        "retry": "reclaim_tui.cli.rows:retry",
        "cancel": "reclaim_tui.cli.rows:cancel",
        "adopt": "reclaim_tui.cli.rows:adopt",
        "answer": "reclaim_tui.cli.rows:answer",
        "recover": "reclaim_tui.cli.rows:recover",
        "replay": "reclaim_tui.cli.rows:replay",
        "status": "reclaim_tui.cli.data:status",
        "export": "reclaim_tui.cli.data:export",
        "costs": "reclaim_tui.cli.costs:costs",
        "prune": "reclaim_tui.cli.prune:prune",
        "migrate": "reclaim_tui.cli.data:migrate",
        "upgrade": "reclaim_tui.cli.upgrade:upgrade",
        "grants": "reclaim_tui.cli.upgrade:grants",
        "console": "reclaim_tui.cli.console:console",
        "demo": "reclaim_tui.cli.console:demo",
        "emulator": "reclaim_tui.cli.emulator:emulator",
        "inbox": "reclaim_tui.cli.servers:inbox",
        "webhooks": "reclaim_tui.cli.servers:webhooks",
        "service": "reclaim_tui.cli.service:service",
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
        bound_numbers(command)  # no numeric flag without a range (idempotent)
        return command


@click.group(cls=_LazyGroup, invoke_without_command=True, epilog=EPILOG)
@click.version_option(package_name="reclaim-tui")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """reclaim-tui: fire background Gemini jobs, exit, and never lose a result."""
    if ctx.invoked_subcommand is None:
        # Parsed as `reclaim-tui console` with no flags, so the RECLAIM_*
        # variables apply (ctx.invoke would take the bare defaults).
        command = cli.get_command(ctx, "console")
        assert command is not None
        with command.make_context("console", [], parent=ctx) as console_ctx:
            command.invoke(console_ctx)


def main() -> None:
    cli(prog_name="reclaim-tui")
