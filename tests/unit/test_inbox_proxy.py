"""The inbox behind a TLS proxy (issue 40 point 13): every delivery comes
from the proxy's address, and per-client caps keyed on it refused genuine
deliveries. With `--trusted-proxy` a trusted peer's forwarded client is the
key; an untrusted peer's header is never believed. Real requests on
loopback: the proxy from 127.0.0.1, a stranger from 127.0.0.2."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.core.clock import SystemClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.inbox.forwarded import TrustedProxies
from reclaim_tui.inbox.limits import ConnectionLimits, RateLimit
from reclaim_tui.inbox.server import InboxServer
from reclaim_tui.inbox.verify import Verifier
from tests.unit.test_inbox import SECRET, event_body, hmac_headers

PROXY, STRANGER = "127.0.0.1", "127.0.0.2"
Serve = Callable[[ConnectionLimits], Awaitable[InboxServer]]


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Serve]:
    ledger = await open_ledger(str(tmp_path / "ledger.db"))
    servers: list[InboxServer] = []

    async def start(limits: ConnectionLimits) -> InboxServer:
        # One delivery per client, then 429 for the rest of the test.
        limit = RateLimit(rate=1e-9, burst=1.0)
        server = InboxServer(ledger, Verifier(SystemClock(), [SECRET]), port=0, limit=limit,
                             limits=limits)  # fmt: skip
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()
    await ledger.close()


async def deliver(server: InboxServer, wid: str, source: str, **headers: str) -> int:
    """A real signed delivery from `source`, with `headers` added."""
    body = event_body(interaction=f"int-{wid}", key=f"job-{wid}")
    connector = aiohttp.TCPConnector(force_close=True, local_addr=(source, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        sent = {**hmac_headers(body, wid), **{k.replace("_", "-"): v for k, v in headers.items()}}
        async with session.post(server.url, data=body, headers=sent) as resp:
            return resp.status


def _trusting(*given: str, header: str = "X-Forwarded-For") -> ConnectionLimits:
    return ConnectionLimits(per_client=2, max_connections=100, header_timeout=600,
                            trusted=TrustedProxies.parse(given, header))  # fmt: skip


async def test_each_client_behind_a_trusted_proxy_has_its_own_allowance(serve: Serve) -> None:
    server = await serve(_trusting("127.0.0.0/30"))
    for n, client in enumerate(["203.0.113.7", "198.51.100.2", "2001:db8::1"]):
        assert await deliver(server, f"msg_{n}", PROXY, X_Forwarded_For=client) == 200
    # The same client again: its own bucket is spent (the proxy's is not shared).
    assert await deliver(server, "msg_again", PROXY, X_Forwarded_For="203.0.113.7") == 429
    # Hops left of the proxy's own are the client's words: a forged one changes nothing.
    forged = "192.0.2.99, 203.0.113.7"
    assert await deliver(server, "msg_forged", PROXY, X_Forwarded_For=forged) == 429
    # A chain of trusted proxies is walked through to the first untrusted hop.
    chain = "192.0.2.50, 127.0.0.2"
    assert await deliver(server, "msg_chain", PROXY, X_Forwarded_For=chain) == 200
    assert server.accepted == 4


async def test_a_header_from_an_untrusted_peer_is_never_believed(serve: Serve) -> None:
    server = await serve(_trusting("10.0.0.1"))
    assert await deliver(server, "msg_a", STRANGER, X_Forwarded_For="203.0.113.1") == 200
    for n in range(3):  # rotating forged addresses: still the stranger's one bucket
        wid = f"msg_rot{n}"
        assert await deliver(server, wid, STRANGER, X_Forwarded_For=f"203.0.113.{n + 2}") == 429
    assert await deliver(server, "msg_fwd", STRANGER, Forwarded="for=198.51.100.9") == 429
    assert server.refused["rate"] == 4


async def test_without_a_trusted_proxy_the_peer_is_the_client(serve: Serve) -> None:
    server = await serve(ConnectionLimits())
    assert await deliver(server, "msg_1", PROXY, X_Forwarded_For="203.0.113.1") == 200
    assert await deliver(server, "msg_2", PROXY, X_Forwarded_For="203.0.113.2") == 429


async def test_the_forwarded_header_when_the_proxy_sets_it(serve: Serve) -> None:
    server = await serve(_trusting("127.0.0.1", header="Forwarded"))
    v6 = 'for="[2001:db8:cafe::17]:4711";proto=https'
    assert await deliver(server, "msg_v6", PROXY, Forwarded=v6) == 200
    assert await deliver(server, "msg_v4", PROXY, Forwarded="for=192.0.2.60;by=127.0.0.1") == 200
    # X-Forwarded-For is not the header this proxy sets: the client's words.
    assert await deliver(server, "msg_x", PROXY, X_Forwarded_For="192.0.2.61") == 200
    assert await deliver(server, "msg_y", PROXY, X_Forwarded_For="192.0.2.62") == 429
    # An unknown or garbage hop: keyed on the proxy, as without a header.
    assert await deliver(server, "msg_unknown", PROXY, Forwarded="for=unknown") == 429


async def test_a_trusted_proxy_may_hold_more_connections_than_one_client(serve: Serve) -> None:
    server = await serve(_trusting("127.0.0.1"))
    held = [await asyncio.open_connection("127.0.0.1", server.port, local_addr=(PROXY, 0))
            for _ in range(5)]  # fmt: skip
    strangers = [await asyncio.open_connection("127.0.0.1", server.port, local_addr=(STRANGER, 0))
                 for _ in range(3)]  # fmt: skip
    assert await asyncio.wait_for(strangers[2][0].read(), 60) == b""  # past its share of 2
    assert await deliver(server, "msg_busy", PROXY, X_Forwarded_For="203.0.113.5") == 200
    assert server.refused["client-connections"] == 1
    for _, writer in held + strangers:
        writer.close()


def test_trusted_proxy_values_are_checked() -> None:
    out = CliRunner().invoke(cli, ["inbox", "--trusted-proxy", "proxy.example"])
    assert out.exit_code == 2
    assert "expected an IP address or a network" in out.output
    with pytest.raises(ValueError, match="Forwarded"):
        TrustedProxies.parse(["127.0.0.1"], "X-Real-IP")
    trusted = TrustedProxies.parse(["10.0.0.0/8", "::1"])
    assert (
        trusted.trusts("10.2.3.4") and trusted.trusts("::1") and trusted.trusts("::ffff:10.0.0.1")
    )
    assert not trusted.trusts("11.0.0.1") and not trusted.trusts("?")
    assert trusted.client("10.0.0.2", ["1.2.3.4, 10.9.9.9"]) == "1.2.3.4"
    assert trusted.client("10.0.0.2", ["1.2.3.4", "10.9.9.9"]) == "1.2.3.4"  # two header lines
    assert trusted.client("10.0.0.2", ["10.1.1.1, 10.9.9.9"]) == "10.1.1.1"  # all trusted
    assert trusted.client("10.0.0.2", [" " * 100_000 + "x" * 100_000]) == "10.0.0.2"
    assert trusted.client("10.0.0.2", []) == "10.0.0.2"
    assert trusted.client("192.0.2.1", ["1.2.3.4"]) == "192.0.2.1"
