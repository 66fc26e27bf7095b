"""`reclaim-tui upgrade`: apply the ledger's schema migrations and nothing
else (core/ledger/upgrade.py): no API, no sink, no pass. `reclaim-tui
grants`: an app role's grants on a PostgreSQL ledger (core/ledger/postgres/grants.py)."""

from __future__ import annotations

import json

import click

from reclaim_tui.cli.common import require_folder, run
from reclaim_tui.cli.options import options

__all__ = ["grants", "upgrade"]


@click.command()
@options("db", "busy_timeout")
@click.option("--dry-run", is_flag=True, help="List the migrations; apply none.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@run
async def upgrade(db: str, busy_timeout: float, dry_run: bool, as_json: bool) -> None:
    """Bring the ledger's schema to this version's; send and deliver nothing.

    On PostgreSQL, run it as the role that owns the ledger's schema (the
    app role may only read and write rows); the services of the new version
    then find the ledger ready. Exit 0 when the ledger is (or would be) at
    this version's schema, 4 when it cannot be."""
    from reclaim_tui.core.ledger import upgrade as upgrading

    require_folder(db)
    done = await (upgrading.plan if dry_run else upgrading.apply)(db, busy_timeout)
    if as_json:
        click.echo(json.dumps({**done.as_dict(), "applied": not dry_run and bool(done.steps)}))
        return
    who = f" (as {done.role}; the schema's owner: {done.owner})" if done.role else ""
    if not done.steps:
        click.echo(f"{done.db}: up to date (schema {done.stored}){who}")
        return
    verb = "would apply" if dry_run else "applied"
    click.echo(f"{done.db}: schema {done.stored} → {done.target}, {verb}{who}:")
    for number, does in done.steps:
        click.echo(f"  migration {number}: {does}")


@click.command()
@options("db", "busy_timeout")
@click.option("--role", required=True, help="The app role to grant (DML only: rows, no tables).")
@click.option("--apply", "apply_now", is_flag=True, help="Run them now (as the schema's owner).")
@run
async def grants(db: str, busy_timeout: float, role: str, apply_now: bool) -> None:
    """Print (or, as the ledger's owner, apply) an app role's grants.

    The rights a DML-only role needs on the ledger's schema now, and on the
    tables the owner's later migrations add (ALTER DEFAULT PRIVILEGES), so
    `reclaim-tui upgrade` needs no administrator afterwards. PostgreSQL only."""
    from reclaim_tui.core.ledger.postgres.grants import role_grants

    owner, statements = await role_grants(db, busy_timeout, role, apply=apply_now)
    if apply_now:
        click.echo(f"-- applied as {owner}:", err=True)
    click.echo("\n".join(statements))
