"""The fast calls over the aiohttp transport go straight to aiohttp (issue 39 item 4).

Counted, never timed: over httpx-aiohttp, each fast create and get used to be
built as an httpx request and sent through the httpx client's send (auth,
redirect, hook and cookie steps), which the transport turned back into one
`aiohttp.ClientSession.request` call. core/gemini/fastwire.py makes that call
itself: here, the arguments aiohttp receives are the same on the three paths
(the wire, the fast path without it, the stock SDK), the outcomes too, errors
included, and the wire steps aside where it could differ.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from reclaim_tui.core.gemini import GeminiBackend, fastwire
from reclaim_tui.core.models import JobSpec, RemoteInteraction
from reclaim_tui.emulator import EmulatorServer
from reclaim_tui.errors import BackendError, NotCreatedError

SPEC = JobSpec(
    input='Tell me about "lighthouses" — é 😀.', model="gemini-3-flash", labels={"t": "a"}
)
IDEM = "a" * 32


pytestmark = pytest.mark.usefixtures("fast_path_trusted")


class Wire:
    """What reaches aiohttp's `ClientSession.request` (as aiohttp reads its
    headers), and how many requests the SDK's httpx client sent itself."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.aiohttp: list[tuple[Any, ...]] = []
        self.httpx_sends = 0
        real_request = aiohttp.ClientSession.request

        def request(session: aiohttp.ClientSession, method: str, url: Any, **kw: Any) -> Any:
            headers = list(CIMultiDict(kw.get("headers") or {}).items())
            rest = {k: v for k, v in kw.items() if k not in ("headers", "data")}
            self.aiohttp.append((method, str(url), headers, kw.get("data"), rest))
            return real_request(session, method, url, **kw)

        monkeypatch.setattr(aiohttp.ClientSession, "request", request)
        import httpx2

        real_send = httpx2.AsyncClient.send

        async def send(client: Any, request: Any, **kw: Any) -> Any:
            self.httpx_sends += 1
            return await real_send(client, request, **kw)

        monkeypatch.setattr(httpx2.AsyncClient, "send", send)


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Iterator[Wire]:
    yield Wire(monkeypatch)


def _without_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastwire, "_transport_module", lambda: None)


async def _outcomes(backend: GeminiBackend, handle: str) -> list[Any]:
    """A create, a get of `handle`, a get of an unknown id: what the engine sees."""
    out: list[Any] = []
    for call in (
        lambda: backend.create(SPEC, IDEM),
        lambda: backend.get(handle),
        lambda: backend.get("nosuchinteraction0000"),
    ):
        try:
            got = await call()
            assert isinstance(got, RemoteInteraction)
            out.append(dataclasses.replace(got, id="", raw={**got.raw, "id": ""}))
        except BackendError as exc:
            out.append((type(exc).__name__, exc.status, str(exc), type(exc.__cause__)))
    return out


def _sorted(sent: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*sent[:2], sorted(sent[2]), *sent[3:])


async def test_the_wire_sends_what_httpx_aiohttp_sends_and_reads_alike(
    emu: EmulatorServer, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = GeminiBackend(emu.api_key, emu.base_url)
    handle = (await seed.create(SPEC, "b" * 32)).id
    await seed.aclose()
    wire.aiohttp.clear()
    runs = []
    for how in ("wire", "fast", "stock"):
        with monkeypatch.context() as patch:
            if how == "fast":
                _without_wire(patch)
            backend = GeminiBackend(
                emu.api_key, emu.base_url, transport="aiohttp", fast_path=how != "stock"
            )
            try:
                before, sends = len(wire.aiohttp), wire.httpx_sends
                got = await _outcomes(backend, handle)
                runs.append((how, got, wire.aiohttp[before:], wire.httpx_sends - sends))
            finally:
                await backend.aclose()
    (_, wired, sent, sends), *others = runs
    for how, got, their_sent, _ in others:
        assert got == wired, how
        if how == "fast":  # the same arguments, in the same order
            assert their_sent == sent
        else:  # the stock SDK orders its headers otherwise (test_gemini_fastpath.py)
            assert [_sorted(s) for s in their_sent] == [_sorted(s) for s in sent]
    assert [s[0] for s in sent] == ["POST", "GET", "GET"]
    assert wired[2][0] == "InteractionGoneError"
    # The mechanism: not one request through the httpx client's send on the wire.
    assert sends == 0
    assert [r[3] for r in runs] == [0, 3, 3]


async def test_the_wire_steps_aside_where_it_could_differ(
    emu: EmulatorServer, wire: Wire, caplog: pytest.LogCaptureFixture
) -> None:
    backend = GeminiBackend(emu.api_key, emu.base_url, transport="aiohttp")
    try:
        await backend.create(SPEC, IDEM)
        assert wire.httpx_sends == 0
        client = backend._interactions.sdk_configuration.async_client
        client.cookies.set("session", "x")  # a cookie is sent: httpx's send adds it
        await backend.create(SPEC, IDEM)
        assert wire.httpx_sends == 1 and ("cookie", "session=x") in wire.aiohttp[-1][2]
        client.cookies.clear()
        caplog.set_level(logging.INFO, logger="httpx2")  # httpx's send logs each request
        await backend.create(SPEC, IDEM)
        assert wire.httpx_sends == 2 and "HTTP Request: POST" in caplog.text
    finally:
        await backend.aclose()


async def test_a_client_with_event_hooks_or_an_unverified_transport_keeps_httpx(
    emu: EmulatorServer, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    async def hook(request: Any) -> None:
        seen.append(request.method)

    backend = GeminiBackend(emu.api_key, emu.base_url, transport="aiohttp")
    try:
        client = backend._interactions.sdk_configuration.async_client
        client.event_hooks = {"request": [hook], "response": []}
        await backend.create(SPEC, IDEM)
        assert seen == ["POST"] and wire.httpx_sends == 1
    finally:
        await backend.aclose()
    monkeypatch.setattr(fastwire, "WIRE_TRANSPORT_VERSIONS", ("0.0.1",))
    backend = GeminiBackend(emu.api_key, emu.base_url, transport="aiohttp")
    try:
        await backend.create(SPEC, IDEM)
        assert wire.httpx_sends == 2
    finally:
        await backend.aclose()


async def test_a_refused_connection_on_the_wire_is_not_sent(wire: Wire) -> None:
    from tests.helpers.ports import free_port

    backend = GeminiBackend(None, f"http://127.0.0.1:{free_port()}", transport="aiohttp")
    try:
        with pytest.raises(NotCreatedError, match="create was not sent"):
            await backend.create(SPEC, IDEM)
    finally:
        await backend.aclose()
    assert wire.httpx_sends == 0 and len(wire.aiohttp) == 1
