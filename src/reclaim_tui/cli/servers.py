"""The server commands: `inbox` (the webhook receiver) and `webhooks` (the
API's static webhooks, over the SDK); `emulator` has a module of its own
(cli/emulator.py). The root group imports this module only when one of them is named or
--help lists them, and each imports its server (aiohttp, the SDK) only when run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from reclaim_tui.cli.common import require_folder, run
from reclaim_tui.cli.options import Finite, bound_numbers, options
from reclaim_tui.cli.proxy_options import parse_trusted_proxies, proxy_options
from reclaim_tui.inbox import DEFAULT_PATH, GOOGLE_JWKS_URL

if TYPE_CHECKING:
    from reclaim_tui.core.gemini.webhooks import WebhookAdmin

__all__ = ["inbox", "webhooks"]


@click.command()
@options("db")
@click.option(
    "--listen",
    default="127.0.0.1:8787",
    show_default=True,
    help="HOST:PORT to bind (loopback unless told otherwise: put a TLS proxy in front).",
)
@click.option("--path", default=DEFAULT_PATH, show_default=True, help="The URL path served.")
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    envvar="RECLAIM_WEBHOOK_SECRETS",
    help="A static webhook's signing secret (whsec_…); repeat it during a rotation."
    " From the environment: space-separated.",
)
@click.option(
    "--jwks-url",
    default=GOOGLE_JWKS_URL,
    show_default=True,
    help="Keys for dynamic webhooks' JWTs ('' refuses JWT-signed deliveries).",
)
@click.option("--audience", default=None, help="Check the JWTs' aud claim against this.")
@click.option(
    "--header-timeout",
    default=10.0,
    show_default=True,
    type=Finite(0.01, 3600),
    help="Seconds a connection has to send its request's headers before it is closed.",
)
@click.option(
    "--body-timeout",
    default=30.0,
    show_default=True,
    type=Finite(0.01, 3600),
    help="Seconds a delivery has to send its body (else 408, the connection closed).",
)
@click.option(
    "--max-connections",
    default=0,
    type=click.IntRange(0, 1_000_000),
    help="Connections open at once, all clients together (default 0: half the open-file"
    " limit, at most 512); at the cap the oldest idle one is closed.",
)
@click.option(
    "--max-client-connections",
    default=32,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Connections one client (an IPv4 address, an IPv6 /64) may hold open.",
)
@proxy_options()
@click.option(
    "--metrics-listen",
    default=None,
    metavar="HOST:PORT",
    help="Serve Prometheus metrics (/metrics: deliveries kept or refused by cause, the"
    " ledger unavailable or back) and a health check (/healthz) here, e.g. 127.0.0.1:9465.",
)
@run
async def inbox(
    db: str,
    listen: str,
    path: str,
    secrets: tuple[str, ...],
    jwks_url: str,
    audience: str | None,
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    max_client_connections: int,
    trusted_proxies: tuple[str, ...],
    forwarded_header: str,
    metrics_listen: str | None,
) -> None:
    """Receive the API's webhooks into the ledger (verified, kept once, then 200)."""
    from reclaim_tui.inbox.command import serve_inbox
    from reclaim_tui.inbox.limits import ConnectionLimits

    require_folder(db)
    trusted = parse_trusted_proxies(trusted_proxies, forwarded_header)
    limits = ConnectionLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        max_connections=max_connections,
        per_client=max_client_connections,
        trusted=trusted,
    )
    watch = None
    if metrics_listen is not None:
        from functools import partial

        from reclaim_tui.runner.inbox_metrics import inbox_metrics
        from reclaim_tui.runner.metrics import parse_listen

        parse_listen(metrics_listen)  # a bad one is said before the inbox binds
        watch = partial(inbox_metrics, metrics_listen)
    await serve_inbox(db, listen, path, secrets, jwks_url, audience, limits, watch)


@click.group()
def webhooks() -> None:
    """Static webhooks of the project (the API's WebhookService, over the SDK)."""


def _admin(kw: dict[str, Any]) -> WebhookAdmin:
    from reclaim_tui.core.gemini.backend import resolve_api_key
    from reclaim_tui.core.gemini.webhooks import WebhookAdmin

    return WebhookAdmin(resolve_api_key(kw.get("api_key")), kw.get("base_url"))


@webhooks.command("create")
@options("base_url", "api_key")
@click.argument("uri")
@click.option("--name", default=None, help="A display name for the webhook.")
@run
async def webhooks_create(uri: str, name: str | None, **kw: Any) -> None:
    """Register URI for the interaction events; prints the signing secret (shown once)."""
    from reclaim_tui.core.gemini.webhooks import INTERACTION_EVENTS

    admin = _admin(kw)
    try:
        made = await admin.create(uri, name, INTERACTION_EVENTS)
    finally:
        await admin.aclose()
    click.echo(json.dumps(made, indent=2))
    secret = made.get("new_signing_secret")
    if secret:
        click.echo(
            "the signing secret above is shown once: start the inbox with --secret (or"
            " RECLAIM_WEBHOOK_SECRETS)",
            err=True,
        )


@webhooks.command("list")
@options("base_url", "api_key")
@run
async def webhooks_list(**kw: Any) -> None:
    """Every static webhook: id, name, URI, events, state."""
    admin = _admin(kw)
    try:
        found = await admin.list()
    finally:
        await admin.aclose()
    click.echo(json.dumps(found, indent=2))


@webhooks.command("delete")
@options("base_url", "api_key")
@click.argument("webhook_id")
@run
async def webhooks_delete(webhook_id: str, **kw: Any) -> None:
    """Delete a static webhook."""
    admin = _admin(kw)
    try:
        await admin.delete(webhook_id)
    finally:
        await admin.aclose()
    click.echo(f"deleted {webhook_id}")


@webhooks.command("ping")
@options("base_url", "api_key")
@click.argument("webhook_id")
@run
async def webhooks_ping(webhook_id: str, **kw: Any) -> None:
    """Ask the API to send the webhook a ping event."""
    admin = _admin(kw)
    try:
        out = await admin.ping(webhook_id)
    finally:
        await admin.aclose()
    click.echo(json.dumps(out, indent=2) if out else f"ping sent to {webhook_id}")


for _command in (inbox, webhooks):
    bound_numbers(_command)  # no numeric flag without a range
