"""`--trusted-proxy` and `--forwarded-header`: the same two flags, the same
checks, for the standalone inbox (`inbox`) and the one a service runs in its
own process (`run --inbox-listen`). What they mean is inbox/forwarded.py's."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from reclaim_tui.inbox.forwarded import TrustedProxies

__all__ = ["parse_trusted_proxies", "proxy_options"]

F = TypeVar("F", bound=Callable[..., object])


def proxy_options(*, needs: str | None = None) -> Callable[[F], F]:
    """The two options; `needs` names the flag they only make sense with."""
    lead = f"With {needs}: a" if needs else "A"

    def add(command: F) -> F:
        command = click.option(
            "--forwarded-header",
            default="X-Forwarded-For",
            show_default=True,
            type=click.Choice(["X-Forwarded-For", "Forwarded"], case_sensitive=False),
            help="With --trusted-proxy: the header the proxy sets (one it does not set would"
            " be the client's own words).",
        )(command)
        return click.option(
            "--trusted-proxy",
            "trusted_proxies",
            multiple=True,
            metavar="ADDR",
            help=f"{lead} proxy in front (an address or a network, 10.0.0.0/8; repeatable):"
            " a delivery from it counts as the client its forwarding header names (the"
            " rightmost hop that is not a trusted proxy). No other peer's header is believed.",
        )(command)

    return add


def parse_trusted_proxies(given: Iterable[str], header: str) -> TrustedProxies:
    """The flags' values checked (a usage error, exit 2, says which is wrong)."""
    from reclaim_tui.inbox.forwarded import TrustedProxies

    try:
        return TrustedProxies.parse(given, header)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
