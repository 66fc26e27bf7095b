"""The JWKS refresh of the webhook inbox (inbox/jwks.py): fetched on the inbox's
event loop, one at a time, at most every cooldown, given up after its timeout —
and never a thread, so a hanging key server holds no other delivery.

Counts and orderings only: no wall-clock assertion.
"""

from __future__ import annotations

import asyncio
import threading
import traceback
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from reclaim_tui.core.clock import ManualClock, SystemClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.inbox.limits import RateLimit
from reclaim_tui.inbox.server import InboxServer
from reclaim_tui.inbox.verify import Refused, Verifier
from tests.unit.test_inbox import SECRET, event_body, hmac_headers, jwt_headers, make_keys
from tests.unit.test_inbox_attacks import Inbox, Jwks, _serve_jwks, _until


@pytest.fixture
async def served_jwks() -> AsyncIterator[Jwks]:
    jwks = Jwks(make_keys("k1"))
    runner = await _serve_jwks(jwks)
    try:
        yield jwks
    finally:
        jwks.release.set()
        await runner.cleanup()


async def _inbox(tmp_path: Path, jwks: Jwks, verifier: Verifier) -> AsyncIterator[Inbox]:
    ledger = await open_ledger(str(tmp_path / "ledger.db"))
    server = InboxServer(
        ledger, verifier, port=0, limit=RateLimit(rate=10_000, burst=10_000), max_body=8192
    )
    await server.start()
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            yield Inbox(ledger, server, session, jwks)
    finally:
        jwks.release.set()
        await server.stop()
        await ledger.close()


@pytest.fixture
async def box(tmp_path: Path, served_jwks: Jwks) -> AsyncIterator[Inbox]:
    verifier = Verifier(SystemClock(), [SECRET], jwks_url=served_jwks.url)
    async for inbox in _inbox(tmp_path, served_jwks, verifier):
        yield inbox


@pytest.fixture
def inbox_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads started, from here on, by the inbox's code or PyJWT's."""
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        stack = "".join(traceback.format_stack())
        if "reclaim_tui/inbox/" in stack or "/jwt/" in stack:
            started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    return started


def _count_verifications(verifier: Verifier) -> list[bytes]:
    """The bodies `verifier.verify` was called with, from now on."""
    entered: list[bytes] = []
    verify = verifier.verify

    async def counted(headers: Any, body: bytes) -> Any:
        entered.append(body)
        return await verify(headers, body)

    verifier.verify = counted  # type: ignore[method-assign]
    return entered


async def test_a_hanging_jwks_refresh_starts_no_thread_and_holds_no_other_delivery(
    box: Inbox, inbox_threads: list[str]
) -> None:
    # The first JWT delivery fetches the set; the next refresh hangs.
    first = event_body(interaction="int-0", key="job-0")
    assert (await box.post(first, jwt_headers(first, "msg_0", box.jwks.keys)))[0] == 200
    assert box.jwks.fetches == 1
    keys = box.server.verifier._keys
    assert keys is not None
    keys.fetched_at = float("-inf")  # the cached set has expired: the next use refreshes it
    box.jwks.mode = "hang"
    # A delivery signed by the cached key is kept at once and starts the
    # refresh; one signed by a key not in the set waits for it.
    again = event_body(interaction="int-1", key="job-1")
    assert (await box.post(again, jwt_headers(again, "msg_1", box.jwks.keys)))[0] == 200
    await _until(lambda: box.jwks.fetches == 2)
    stranger = make_keys("k-new")
    body = event_body(interaction="int-new", key="job-new")
    entered = _count_verifications(box.server.verifier)
    waiting = asyncio.ensure_future(box.post(body, jwt_headers(body, "msg_new", stranger)))
    await _until(lambda: len(entered) == 1)  # it reached the verifier, which waits
    accepted = box.server.accepted
    # While the refresh hangs: every HMAC delivery and every one signed by a
    # cached key is kept; the waiting one is not answered yet.
    # 30 at once: fewer than the connections one client may hold (inbox/limits.py).
    sent = []
    for n in range(15):
        hm = event_body(interaction=f"int-h{n}", key=f"job-h{n}")
        sent.append(box.post(hm, hmac_headers(hm, f"msg_h{n}")))
        jw = event_body(interaction=f"int-j{n}", key=f"job-j{n}")
        sent.append(box.post(jw, jwt_headers(jw, f"msg_j{n}", box.jwks.keys)))
    answers = await asyncio.gather(*sent)
    assert [status for status, _ in answers] == [200] * 30
    assert box.server.accepted == accepted + 30
    assert not waiting.done()
    assert box.jwks.fetches == 2, "one refresh at a time"
    box.jwks.release.set()
    status, answer = await asyncio.wait_for(waiting, 30)
    assert (status, answer) == (401, {"error": "bad-signature"})  # its kid is in no set
    assert inbox_threads == [], "a JWKS refresh started a thread"


async def test_a_jwks_fetch_past_its_timeout_is_refused(tmp_path: Path, served_jwks: Jwks) -> None:
    verifier = Verifier(SystemClock(), [SECRET], jwks_url=served_jwks.url, jwks_timeout=0.2)
    async for box in _inbox(tmp_path, served_jwks, verifier):
        box.jwks.mode = "hang"  # never answers, never released in this test's delivery
        body = event_body(interaction="int-t", key="job-t")
        status, answer = await asyncio.wait_for(
            box.post(body, jwt_headers(body, "msg_t", box.jwks.keys)), 30
        )
        assert (status, answer) == (401, {"error": "jwks-unreachable"})
        assert box.server.refused["jwks-unreachable"] == 1 and box.jwks.fetches == 1
        assert await box.kept() == []


async def test_unknown_kids_refresh_the_set_at_most_once_per_cooldown(served_jwks: Jwks) -> None:
    clock = ManualClock()
    verifier = Verifier(clock, jwks_url=served_jwks.url, tolerance=10**10)
    body = event_body()

    async def refusal(kid: str) -> str:
        headers = jwt_headers(body, f"msg_{kid}", make_keys(kid))
        headers["webhook-timestamp"] = str(int(clock.now()))
        with pytest.raises(Refused) as refused:
            await verifier.verify(headers, body)
        return refused.value.reason

    try:
        assert await refusal("a") == "bad-signature"
        assert served_jwks.fetches == 1
        clock.advance(29)
        assert await refusal("b") == "bad-signature"
        assert served_jwks.fetches == 1  # within the cooldown: refused without a fetch
        clock.advance(2)
        assert await refusal("c") == "bad-signature"
        assert served_jwks.fetches == 2
        served_jwks.mode = "garbage"
        clock.advance(31)
        assert await refusal("d") == "jwks-unreachable"
        assert served_jwks.fetches == 3
        assert verifier._keys is not None and "k1" in verifier._keys.keys  # the old set kept
    finally:
        await verifier.aclose()


async def test_stopping_the_inbox_ends_a_hanging_refresh(box: Inbox) -> None:
    box.jwks.mode = "hang"
    body = event_body(interaction="int-s", key="job-s")
    waiting = asyncio.ensure_future(box.post(body, jwt_headers(body, "msg_s", box.jwks.keys)))
    await _until(lambda: box.jwks.fetches == 1)
    keys: Any = box.server.verifier._keys
    refresh = keys._refresh
    assert refresh is not None and not refresh.done()
    await box.server.verifier.aclose()
    assert refresh.cancelled()
    status, answer = await asyncio.wait_for(waiting, 30)
    assert (status, answer) == (401, {"error": "jwks-unreachable"})


async def test_a_key_set_too_large_is_not_read() -> None:
    async def serve(_: web.Request) -> web.Response:
        return web.Response(body=b'{"keys": [' + b" " * (2 * 1024 * 1024) + b"]}")

    app = web.Application()
    app.router.add_get("/jwks.json", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    verifier = Verifier(SystemClock(), jwks_url=f"http://127.0.0.1:{port}/jwks.json")
    body = event_body()
    try:
        with pytest.raises(Refused) as refused:
            await verifier.verify(jwt_headers(body, "msg_big", make_keys("k")), body)
    finally:
        await verifier.aclose()
        await runner.cleanup()
    assert str(refused.value) == "jwks-unreachable: ValueError"


def test_the_proxy_is_the_one_urllib_would_take(monkeypatch: pytest.MonkeyPatch) -> None:
    from reclaim_tui.inbox.jwks import _proxy_for

    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    url = "https://keys.example/.well-known/jwks.json"
    assert _proxy_for(url) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert _proxy_for(url) == "http://proxy.example:3128"
    assert _proxy_for("http://keys.example/jwks.json") is None  # no HTTP_PROXY
    monkeypatch.setenv("NO_PROXY", "keys.example")
    assert _proxy_for(url) is None
