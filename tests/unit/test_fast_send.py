"""The fast calls build their requests and read their answers without httpx's per-call work.

`client.build_request` merges the client's headers with the call's into a new
`Headers` on every call, and `response.text` parses the content type through
the `email` package on every answer: both are the same for every call of a
fast get or create. core/gemini/fastsend.py does them once per client; these
tests count that it does, on every transport, and that what is sent and read
stays what httpx would give (tests/unit/test_gemini_fastpath.py compares the
requests on the wire with the stock path's).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.gemini.fastsend import RequestMaker, utf8_text
from reclaim_tui.core.models import TRANSPORTS, JobSpec, RemoteState
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer

SPEC = JobSpec(input="Tell me about lighthouses.", model="gemini-3-flash")
CALLS = 5


pytestmark = pytest.mark.usefixtures("fast_path_trusted")


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(EmulatorConfig(latency=None)) as server:
        yield server


async def _creates_and_gets(backend: GeminiBackend, emu: EmulatorServer) -> None:
    for n in range(CALLS):
        created = await backend.create(SPEC, f"{n:032x}")
        emu.store.finish(emu.store.interactions[created.id], "completed", "done", None)
        got = await backend.get(created.id)
        assert got.state is RemoteState.COMPLETED and got.output_text == "done"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fast_calls_merge_the_client_headers_once_per_client(
    emu: EmulatorServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = GeminiBackend(emu.api_key, emu.base_url, transport=transport)
    try:
        await backend.warm()
        assert backend.fast_path
        client = backend._interactions.sdk_configuration.async_client
        built: list[str] = []
        stock_build = client.build_request

        def counting(method: str, url: Any, **kwargs: Any) -> Any:
            built.append(method)
            return stock_build(method, url, **kwargs)

        monkeypatch.setattr(client, "build_request", counting)
        await _creates_and_gets(backend, emu)
    finally:
        await backend.aclose()
    # Each fast call's template (the SDK's own builder, once), then its first request,
    # built the stock way and compared; the other CALLS - 1 of each are built directly.
    assert built == ["POST", "POST", "GET", "GET"]


class _TextReads:
    """Counts reads of `httpx2.Response.text` (which parses the content type each time)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        stock = httpx2.Response.text

        def text(response: httpx2.Response) -> str:
            self.count += 1
            return str(stock.fget(response))  # type: ignore[attr-defined]

        monkeypatch.setattr(httpx2.Response, "text", property(text))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fast_answers_are_decoded_without_httpx_text(
    emu: EmulatorServer, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = GeminiBackend(emu.api_key, emu.base_url, transport=transport)
    try:
        await backend.warm()
        reads = _TextReads(monkeypatch)
        await _creates_and_gets(backend, emu)
    finally:
        await backend.aclose()
    assert reads.count == 0


def _answer(content_type: str | None, body: bytes, **kwargs: Any) -> httpx2.Response:
    headers = {} if content_type is None else {"content-type": content_type}
    return httpx2.Response(200, headers=headers, content=body, **kwargs)


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-8",
        "application/json; charset=UTF-8",
        "application/json;charset=utf-8",
        'application/json; charset="utf-8"',
        "application/json",
    ],
)
@pytest.mark.parametrize("body", ['{"id": "é 😀 \\u2028"}', "", '{"text": "\u2028 \x00"}'])
def test_utf8_text_is_httpx_text_for_utf8_json(content_type: str, body: str) -> None:
    response = _answer(content_type, body.encode())
    text = utf8_text(response)
    assert text is not None
    assert text == _answer(content_type, body.encode()).text


@pytest.mark.parametrize(
    ("content_type", "body", "default_encoding"),
    [
        ("application/json; charset=latin-1", "é".encode("latin-1"), "utf-8"),
        ("application/json; charset=utf-16", '{"a": 1}'.encode("utf-16"), "utf-8"),
        ("application/json", b'{"a": "\xff"}', "utf-8"),  # not UTF-8: httpx replaces
        ("application/json", '{"a": "é"}'.encode("latin-1"), "latin-1"),
        ("text/plain", b"{}", "utf-8"),
        (None, b"{}", "utf-8"),
    ],
)
def test_utf8_text_leaves_other_answers_to_httpx(
    content_type: str | None, body: bytes, default_encoding: str
) -> None:
    assert utf8_text(_answer(content_type, body, default_encoding=default_encoding)) is None


def _stock_builds(client: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the requests `client.build_request` builds (the stock way)."""
    built: list[str] = []
    stock = client.build_request

    def counting(method: str, url: Any, **kwargs: Any) -> httpx2.Request:
        built.append(method)
        return stock(method, url, **kwargs)

    monkeypatch.setattr(client, "build_request", counting)
    return built


def _wire(request: httpx2.Request) -> tuple[Any, ...]:
    return (request.method, request.url, request.headers.raw, request.extensions, request.read())


@pytest.mark.parametrize(
    "client_kwargs",
    [
        {},
        {"headers": {"x-client": "1", "x-call": "client's"}},
        {"cookies": {"session": "abc"}},
        {"timeout": 7.0},
    ],
)
@pytest.mark.parametrize("call_timeout", [None, {"connect": 1.0, "read": 2.0}])
async def test_request_maker_builds_what_build_request_builds(
    client_kwargs: dict[str, Any], call_timeout: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = {"x-call": "call's", "content-type": "application/json"}
    maker = RequestMaker(headers, call_timeout)
    async with httpx2.AsyncClient(**client_kwargs) as client:
        extensions = {"timeout": call_timeout} if call_timeout is not None else None
        stock_build = client.build_request  # what the maker's requests are compared with
        expected = []
        for n in range(3):
            url = f"http://127.0.0.1:1/v1beta/interactions/id{n}"
            made = maker.build(client, "POST", url, f'{{"n": {n}}}')
            expected.append(
                stock_build(
                    "POST", url, content=f'{{"n": {n}}}', headers=headers, extensions=extensions
                )
            )
            if n == 0:
                built = _stock_builds(client, monkeypatch)  # from the second request on
            assert _wire(made) == _wire(expected[n])
    assert built == []


async def test_request_maker_keeps_the_stock_way_where_the_two_differ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Query parameters on the client are merged into every URL by build_request only.
    maker = RequestMaker({"x-call": "1"}, None)
    async with httpx2.AsyncClient(params={"key": "v"}) as client:
        built = _stock_builds(client, monkeypatch)
        for _ in range(3):
            made = maker.build(client, "GET", "http://127.0.0.1:1/x", None)
            assert str(made.url) == "http://127.0.0.1:1/x?key=v"
    assert built == ["GET"] * 3


async def test_a_new_client_is_compared_again(monkeypatch: pytest.MonkeyPatch) -> None:
    maker = RequestMaker({"x-call": "1"}, None)
    async with httpx2.AsyncClient() as first, httpx2.AsyncClient(headers={"x-b": "2"}) as second:
        built = [_stock_builds(client, monkeypatch) for client in (first, second)]
        for client in (first, second, second):
            made = maker.build(client, "GET", "http://127.0.0.1:1/x", None)
            assert made.headers["x-call"] == "1"
            assert made.headers.get("x-b") == ("2" if client is second else None)
    assert built == [["GET"], ["GET"]]
