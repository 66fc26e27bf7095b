"""A 200 answer of UTF-8 JSON on the aiohttp transport is read straight from
aiohttp (core/gemini/wireanswer.py; issue 39 item 4).

Counted, never timed: each fast create and get over httpx-aiohttp used to wrap
aiohttp's answer in httpx's response (its headers parsed again, a byte stream,
decoders) before its text was read. Here: no httpx response is made for such an
answer; any other answer is still httpx's; what the engine sees is the same as
through httpx's response, a body cut short included ("maybe created", never
"not sent"), and a 200 whose text is not the plain shape goes to the SDK's parser.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from reclaim_tui.core.gemini import GeminiBackend, fastwire
from reclaim_tui.core.gemini.fastsend import utf8_json
from reclaim_tui.core.gemini.wireanswer import JsonKinds
from reclaim_tui.core.models import JobSpec, RemoteInteraction
from reclaim_tui.emulator import EmulatorServer
from reclaim_tui.errors import BackendError, MaybeCreatedError

SPEC = JobSpec(input="Tell me about lighthouses.", model="gemini-3-flash", labels={"t": "a"})
IDEM = "c" * 32


pytestmark = pytest.mark.usefixtures("fast_path_trusted")


@pytest.fixture
def responses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The status of every httpx response made, in order."""
    made: list[int] = []
    real = httpx2.Response.__init__

    def init(self: Any, status_code: int, *args: Any, **kw: Any) -> None:
        made.append(status_code)
        real(self, status_code, *args, **kw)

    monkeypatch.setattr(httpx2.Response, "__init__", init)
    yield made


async def test_a_200_json_answer_makes_no_httpx_response(
    emu: EmulatorServer, responses: list[int]
) -> None:
    backend = GeminiBackend(emu.api_key, emu.base_url, transport="aiohttp")
    try:
        created = await backend.create(SPEC, IDEM)
        polled = await backend.get(created.id)
        assert polled.id == created.id and polled.api_status
        # The mechanism: two 200 answers read, not one httpx response made.
        assert responses == []
        with pytest.raises(BackendError):
            await backend.get("nosuchinteraction0000")
        assert responses == [404]  # any other answer: httpx's, as before
    finally:
        await backend.aclose()


def _answer(status: int, *headers: tuple[str, str]) -> Any:
    return dataclasses.make_dataclass("A", ["status", "headers"])(
        status, CIMultiDictProxy(CIMultiDict(headers))
    )


JSON = ("Content-Type", "application/json; charset=utf-8")


@pytest.mark.parametrize(
    ("answer", "encoding", "straight"),
    [
        (_answer(200, JSON), None, True),
        (_answer(200, ("Content-Type", "application/json")), "utf-8", True),
        # no charset, and a client that guesses the encoding: httpx decides
        (_answer(200, ("Content-Type", "application/json")), None, False),
        (_answer(404, JSON), None, False),
        (_answer(200, JSON, ("Content-Encoding", "gzip")), None, False),
        (_answer(200, JSON, ("Set-Cookie", "a=b")), None, False),
        (_answer(200, JSON, JSON), None, False),  # two content types: httpx joins them
        (_answer(200, ("Content-Type", "application/json; charset=latin-1")), None, False),
        (_answer(200, ("Content-Type", "text/event-stream")), "utf-8", False),
        (_answer(200), "utf-8", False),
    ],
)
def test_only_what_httpx_would_read_alike_goes_straight(
    answer: Any, encoding: Any, straight: bool
) -> None:
    from google.genai._gaos.utils import match_response

    kinds = JsonKinds(lambda kind: utf8_json(kind, encoding), match_response)
    assert kinds.straight(answer) is straight
    assert kinds.straight(answer) is straight  # remembered, the same


class _OneAnswer:
    """A server that answers every request with the same bytes, then closes."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.requests = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = [
            int(line.split(b":")[1])
            for line in head.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        ]
        if length:
            await reader.readexactly(length[0])
        self.requests += 1
        writer.write(self.raw)
        await writer.drain()
        writer.close()


def _http(status: str, body: bytes, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json; charset=utf-8\r\n"
    return (head + f"Content-Length: {size}\r\n\r\n").encode() + body


async def _both(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What a create and a get give on the wire, then through httpx's response."""
    seen = []
    for wire in (True, False):
        with monkeypatch.context() as patch:
            if not wire:
                patch.setattr(fastwire, "_transport_module", lambda: None)
            async with _OneAnswer(raw) as url:
                backend = GeminiBackend("k", url, transport="aiohttp")
                try:
                    for call in (backend.create(SPEC, IDEM), backend.get("x1")):
                        try:
                            got: Any = await call
                            assert isinstance(got, RemoteInteraction)
                        except BackendError as exc:
                            got = (type(exc).__name__, exc.status, type(exc.__cause__).__name__)
                        seen.append(got)
                finally:
                    await backend.aclose()
    return seen


async def test_a_body_cut_short_reads_as_it_did_through_httpx(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The answer's head arrives, then the connection closes mid-body.
    cut = _http("200 OK", b'{"id": "x1", "status": "completed"', length=400)
    wire_create, wire_get, httpx_create, httpx_get = await _both(cut, monkeypatch)
    assert (wire_create, wire_get) == (httpx_create, httpx_get)
    assert wire_create[0] == MaybeCreatedError.__name__  # sent: its outcome unknown


@pytest.mark.parametrize(
    ("note", "read"),
    [
        (b"\xc3\xa9", "é"),  # a null in it: not the plain shape
        (b"\xff", "\ufffd"),  # not UTF-8: httpx's text, a replacement character
    ],
)
async def test_a_200_not_of_the_plain_shape_goes_to_the_sdk_parser(
    monkeypatch: pytest.MonkeyPatch, note: bytes, read: str
) -> None:
    body = b'{"id": "x1", "status": "in_progress", "usage": null, "note": "' + note + b'"}'
    results = await _both(_http("200 OK", body), monkeypatch)
    assert all(isinstance(r, RemoteInteraction) for r in results), results
    assert results[:2] == results[2:]
    assert results[0].id == "x1" and results[0].raw.get("note") == read


async def test_the_answer_budget_counts_a_straight_answer_before_reading_it(
    responses: list[int],
) -> None:
    from reclaim_tui.core.answer_budget import AnswerBudget, AnswerDeferred, polling_under

    body = b'{"id": "x1", "status": "completed", "note": "' + b"n" * 200 + b'"}'
    async with _OneAnswer(_http("200 OK", body)) as url:
        backend = GeminiBackend("k", url, transport="aiohttp")
        try:
            budget = AnswerBudget(len(body) + 50)
            budget.take("other", 100)
            with polling_under(budget, "mine"), pytest.raises(AnswerDeferred):
                await backend.get("x1")  # its declared length does not fit beside the other
            assert budget.held == 100
            budget.release(["other"])
            with polling_under(budget, "mine"):
                got = await backend.get("x1")
            assert got.id == "x1" and budget.held == len(body)
        finally:
            await backend.aclose()
    assert responses == []  # both read off the wire
