"""What a stranger can hold of the webhook inbox (issue 22, point 4): idle
and slow connections, connections per client and in total, and the log a
misbehaving client can make the inbox write. Real sockets on loopback (the
attacker from 127.0.0.2, the API from 127.0.0.1); timeouts made small
through the limits, no wall-clock assertion: counts and what the sockets see.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from reclaim_tui.core.clock import SystemClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.inbox.limits import ConnectionLimits, RateLimit
from reclaim_tui.inbox.server import InboxServer
from reclaim_tui.inbox.verify import Verifier
from tests.unit.test_inbox import SECRET, event_body, hmac_headers

Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Serve = Callable[[ConnectionLimits], Awaitable[InboxServer]]
ATTACKER = "127.0.0.2"


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Serve]:
    ledger = await open_ledger(str(tmp_path / "ledger.db"))
    servers: list[InboxServer] = []

    async def start(limits: ConnectionLimits) -> InboxServer:
        verifier = Verifier(SystemClock(), [SECRET])
        server = InboxServer(
            ledger, verifier, port=0, limit=RateLimit(rate=10_000, burst=10_000), limits=limits
        )
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()
    await ledger.close()


async def _connect(server: InboxServer, source: str = ATTACKER) -> Conn:
    return await asyncio.open_connection("127.0.0.1", server.port, local_addr=(source, 0))


async def _closed_by_server(conn: Conn) -> bytes:
    """What the server sent before it closed the connection (waits for the close)."""
    return await asyncio.wait_for(conn[0].read(), 60)


async def _deliver(server: InboxServer, wid: str) -> int:
    """A real signed delivery from the API's address, on a fresh connection."""
    body = event_body(interaction=f"int-{wid}", key=f"job-{wid}")
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(server.url, data=body, headers=hmac_headers(body, wid)) as resp:
            return resp.status


def _lines(caplog: pytest.LogCaptureFixture, cause: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if f"({cause})" in r.getMessage()]


async def test_one_client_cannot_hold_more_than_its_share(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = await serve(ConnectionLimits(per_client=3, max_connections=100, header_timeout=600))
    held = [await _connect(server) for _ in range(3)]
    refused = [await _connect(server) for _ in range(10)]
    for conn in refused:
        assert await _closed_by_server(conn) == b""
    assert server.refused["client-connections"] == 10
    assert len(_lines(caplog, "client-connections")) == 1  # one line per cause per interval
    # The API, another client, is served while the attacker holds its three.
    assert await _deliver(server, "msg_share") == 200
    assert all(not conn[0].at_eof() for conn in held)
    for _, writer in held + refused:
        writer.close()


async def test_at_the_total_cap_an_idle_connection_gives_way_to_a_delivery(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    cap = 4
    server = await serve(ConnectionLimits(per_client=100, max_connections=cap, header_timeout=600))
    held = [await _connect(server) for _ in range(cap + 1)]  # N+1 idle connections
    assert await _closed_by_server(held[0]) == b""  # the oldest idle one made room
    assert await _deliver(server, "msg_cap") == 200
    assert await _closed_by_server(held[1]) == b""
    assert server.refused["evicted-idle"] == 2
    assert len(_lines(caplog, "evicted-idle")) == 1
    assert await server.ledger.select("SELECT webhook_id FROM inbox") == [("msg_cap",)]
    for _, writer in held:
        writer.close()


async def test_a_connection_that_never_finishes_its_headers_is_closed(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = await serve(ConnectionLimits(header_timeout=0.2))
    slow = [await _connect(server) for _ in range(5)]
    for _, writer in slow:
        writer.write(b"POST /webhooks/gemini HTTP/1.1\r\nHost: inbox\r\nX-Slow: 1\r\n")
    for conn in slow:
        assert await _closed_by_server(conn) == b""
    assert server.refused["slow-headers"] == 5
    assert len(_lines(caplog, "slow-headers")) == 1
    assert await _deliver(server, "msg_after_slow") == 200


async def test_a_body_that_never_ends_is_answered_408_and_closed(serve: Serve) -> None:
    server = await serve(ConnectionLimits(body_timeout=0.2, header_timeout=600))
    conn = await _connect(server)
    conn[1].write(
        b"POST /webhooks/gemini HTTP/1.1\r\nHost: inbox\r\nwebhook-id: msg_slow_body\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n" + b"{" * 10
    )
    answer = await _closed_by_server(conn)
    assert answer.startswith(b"HTTP/1.1 408")
    assert server.refused["slow-body"] == 1


async def test_malformed_requests_log_one_line_and_no_traceback(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = await serve(ConnectionLimits(header_timeout=600))
    for n in range(30):
        conn = await _connect(server)
        conn[1].write(
            b"POST /webhooks/gemini HTTP/1.1\r\nHost: inbox\r\nContent-Length: x%d\r\n\r\n" % n
        )
        answer = await _closed_by_server(conn)
        assert answer.split(b"\r\n")[0].endswith(b" 400 Bad Request")
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r for r in loud if r.exc_info] == []
    assert len(loud) == 1 and "(bad-request)" in loud[0].getMessage()


async def test_a_kept_alive_idle_connection_gives_way_at_the_cap(serve: Serve) -> None:
    server = await serve(ConnectionLimits(per_client=10, max_connections=1, header_timeout=600))
    reader, writer = await _connect(server)
    writer.write(b"POST /webhooks/gemini HTTP/1.1\r\nHost: inbox\r\nContent-Length: 2\r\n\r\n{}")
    assert (await asyncio.wait_for(reader.readline(), 60)).startswith(b"HTTP/1.1 401")
    # The connection is kept alive and idle: a delivery takes its place.
    assert await _deliver(server, "msg_after_keepalive") == 200
    assert server.refused["evicted-idle"] == 1
    writer.close()
