"""The memoized SDK fast path gives the stock path's results, and steps aside when unsure.

These tests are how a google-genai version gets verified: they switch the fast path on
for whatever SDK is installed (the fixture `fast_path_trusted`, tests/helpers/fast_path.py);
once they and tests/contract pass on it, the version is listed in `FAST_PATH_SDK_VERSIONS`. An
unverified version is no failure: the fast path steps aside for it (the stock path,
tested below), and `./dev test` says so; the lock (constraints.txt) names a verified
one (tests/e2e/test_dev_script.py checks it).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google import genai
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim_tui.core.gemini import GeminiBackend, fastcalls, fastpath
from reclaim_tui.core.gemini.fastpath import install_fast_path
from reclaim_tui.core.models import TRANSPORTS, JobSpec, RemoteInteraction, RemoteState
from reclaim_tui.emulator import EmulatorServer, FaultConfig
from reclaim_tui.errors import BackendError

SPEC = JobSpec(input="Tell me about lighthouses.", model="gemini-3-flash")
INSTALLED_SDK = str(genai.__version__)
VERIFIED_SDKS = fastpath.FAST_PATH_SDK_VERSIONS  # as shipped, before `fast_path_trusted` adds one


pytestmark = pytest.mark.usefixtures("fast_path_trusted")


def _dump(interaction: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = interaction.model_dump(mode="json", by_alias=True)
    return dumped


async def _sdk_calls(backend: GeminiBackend, emu: EmulatorServer, fast: bool) -> list[Any]:
    """create, get (pending), get (completed), cancel — the SDK objects, on one path."""
    sdk = backend._client.aio.interactions
    with fastpath._fast_path(fast):
        created = await sdk.create(
            model=SPEC.model, input=SPEC.input, background=True, labels={"idem": "a" * 32}
        )
        pending = await sdk.get(created.id)
        emu.store.finish(emu.store.interactions[created.id], "completed", None, None)
        completed = await sdk.get(created.id)
        other = await sdk.create(model=SPEC.model, input=SPEC.input, background=True)
        cancelled = await sdk.cancel(other.id)
    return [created, pending, completed, cancelled]


async def test_fast_path_gives_the_stock_results(emu: EmulatorServer) -> None:
    backend = GeminiBackend(emu.api_key, emu.base_url)
    assert backend.fast_path
    try:
        fastpath._MODEL_CACHE.clear()
        fast = await _sdk_calls(backend, emu, fast=True)
        assert fastpath._MODEL_CACHE, "the fast path was not exercised"
        stock = await _sdk_calls(backend, emu, fast=False)
    finally:
        await backend.aclose()
    for fast_obj, stock_obj in zip(fast, stock, strict=True):
        assert type(fast_obj) is type(stock_obj)
        fast_dump, stock_dump = _dump(fast_obj), _dump(stock_obj)
        fast_dump.pop("id")
        stock_dump.pop("id")
        assert fast_dump == stock_dump
    assert fast[2].output_text and fast[3].status == "cancelled"


async def test_backend_results_match_with_and_without_fast_path(emu: EmulatorServer) -> None:
    results = []
    for fast_path in (True, False):
        backend = GeminiBackend(emu.api_key, emu.base_url, fast_path=fast_path)
        try:
            created = await backend.create(SPEC, "b" * 32)
            emu.store.finish(emu.store.interactions[created.id], "completed", None, None)
            done = await backend.get(created.id)
        finally:
            await backend.aclose()
        raw = dict(done.raw)
        raw.pop("id")
        results.append((done.state, done.output_text, done.usage, raw))
    assert results[0] == results[1]


async def test_other_sdk_versions_use_the_stock_path(
    emu: EmulatorServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert install_fast_path(version="3.7.0") is False
    monkeypatch.setattr(genai, "__version__", "3.3.1")
    backends = [GeminiBackend(emu.api_key, emu.base_url) for _ in range(2)]
    backend = backends[0]
    assert backend.fast_path is False and backend._fast_get is None
    fastpath._MODEL_CACHE.clear()
    try:
        created = await backend.create(SPEC, "c" * 32)
        assert (await backend.get(created.id)).id == created.id
    finally:
        for each in backends:
            await each.aclose()
    assert fastpath._MODEL_CACHE == {}
    # One warning for the process, naming the first version asked about.
    warnings = [r for r in caplog.records if r.name == fastpath.__name__]
    assert [r.levelno for r in warnings] == [logging.WARNING]
    assert "google-genai 3.7.0" in warnings[0].getMessage()
    assert "stock SDK path" in warnings[0].getMessage()


def test_an_unverified_sdk_is_reported_once_on_stderr() -> None:
    # A fresh process, logging not configured: what a user of the CLI sees.
    script = (
        "from google import genai\n"
        "from reclaim_tui.core.gemini import GeminiBackend\n"
        "genai.__version__ = '3.99.0'\n"
        "for _ in range(3):\n"
        "    assert not GeminiBackend('k', 'http://127.0.0.1:9').fast_path\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert "google-genai 3.99.0" in lines[0] and "using the stock SDK path" in lines[0]


def test_verified_sdks_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    assert install_fast_path() is True
    assert not [r for r in caplog.records if r.name == fastpath.__name__]


def test_changed_sdk_layout_is_refused() -> None:
    class Renamed:
        @staticmethod
        def unmarshal(value: Any, typ: Any, strict: bool = True) -> Any:
            return value

        @staticmethod
        def marshal_json(val: Any, typ: Any) -> str:
            return ""

    assert fastpath._sdk_shape_ok(Renamed, []) is False


def test_memo_is_inert_outside_backend_calls() -> None:
    calls: list[str] = []

    def stock(name: str, /, **fields: Any) -> str:
        calls.append(name)
        return name

    memo = fastpath._memo_create_model(stock)
    memo("M", body=(int, ...))
    memo("M", body=(int, ...))
    assert calls == ["M", "M"]
    with fastpath._fast_path(True):
        memo("N", body=(int, ...))
        memo("N", body=(int, ...))
        memo("U", body=([],))  # unhashable: stock every time
        memo("U", body=([],))
    assert calls == ["M", "M", "N", "U", "U"]


# -- the fast get: same request out, same RemoteInteraction (or error) back ------------------
async def _outcome(backend: GeminiBackend, handle: str) -> Any:
    """What the engine sees from one get: the RemoteInteraction, or the error's shape."""
    try:
        return await backend.get(handle)
    except BackendError as exc:
        # The SDK's own exception class too (3.5.0 moved them to `_interactions_errors`).
        return (type(exc).__name__, exc.status, str(exc), type(exc.__cause__))


@pytest.fixture
async def pair(emu: EmulatorServer) -> AsyncIterator[tuple[GeminiBackend, GeminiBackend]]:
    """(fast, stock): the same client settings, with and without the fast path."""
    fast = GeminiBackend(emu.api_key, emu.base_url)
    stock = GeminiBackend(emu.api_key, emu.base_url, fast_path=False)
    assert fast._fast_get is not None and stock._fast_get is None
    try:
        yield fast, stock
    finally:
        await fast.aclose()
        await stock.aclose()


async def _same(pair: tuple[GeminiBackend, GeminiBackend], handle: str) -> Any:
    fast, stock = pair
    got = await _outcome(fast, handle)
    assert got == await _outcome(stock, handle)
    return got


@pytest.mark.parametrize(
    ("status", "error", "state"),
    [
        ("in_progress", None, RemoteState.PENDING),
        ("completed", None, RemoteState.COMPLETED),
        ("failed", "quota of thoughts exceeded", RemoteState.FAILED),
        ("cancelled", None, RemoteState.CANCELLED),
        ("requires_action", None, RemoteState.ACTION),
        ("weird_status", None, RemoteState.UNKNOWN),
    ],
)
async def test_fast_get_gives_the_stock_interaction(
    emu: EmulatorServer,
    pair: tuple[GeminiBackend, GeminiBackend],
    status: str,
    error: str | None,
    state: RemoteState,
) -> None:
    handle = (await pair[1].create(SPEC, "d" * 32)).id
    emu.store.finish(emu.store.interactions[handle], status, None, error)
    got = await _same(pair, handle)
    assert isinstance(got, RemoteInteraction) and got.state is state
    assert pair[0]._fast_get is not None and await pair[0]._fast_get.ready()


async def test_fast_get_of_an_idle_interaction_is_the_stock_one(
    emu: EmulatorServer, pair: tuple[GeminiBackend, GeminiBackend]
) -> None:
    # "idle": a status google-genai names from 3.5.0 on (older ones keep it as a str).
    handle = (await pair[1].create(SPEC, "d" * 32)).id
    emu.store.finish(emu.store.interactions[handle], "idle", None, None)
    got = await _same(pair, handle)
    assert isinstance(got, RemoteInteraction) and got.api_status == "idle"


@pytest.mark.parametrize(
    ("faults", "expected"),
    [
        ({"get": {"rate_500": 1.0}}, ("TransientReadError", 500)),
        ({"get": {"rate_503": 1.0}}, ("TransientReadError", 503)),
        ({"get": {"rate_429": 1.0}}, ("TransientReadError", 429)),
    ],
)
async def test_fast_get_gives_the_stock_errors(
    emu: EmulatorServer,
    pair: tuple[GeminiBackend, GeminiBackend],
    faults: dict[str, Any],
    expected: tuple[str, int],
) -> None:
    handle = (await pair[1].create(SPEC, "e" * 32)).id
    emu.store.faults = FaultConfig.from_json(faults)
    got = await _same(pair, handle)
    assert got[:2] == expected


async def test_fast_get_of_unknown_id_is_gone_like_stock(
    pair: tuple[GeminiBackend, GeminiBackend],
) -> None:
    got = await _same(pair, "no-such-interaction")
    assert got[:2] == ("InteractionGoneError", 404)


async def test_fast_get_with_a_wrong_key_fails_like_stock(emu: EmulatorServer) -> None:
    fast = GeminiBackend("wrong-key", emu.base_url)
    stock = GeminiBackend("wrong-key", emu.base_url, fast_path=False)
    try:
        got = await _outcome(fast, "some-id")
        assert got == await _outcome(stock, "some-id")
        assert got[:2] == ("TransientReadError", 400) and "wrong-key" not in got[2]
    finally:
        await fast.aclose()
        await stock.aclose()


class _Recorder:
    """Wraps the SDK's httpx client `send` to keep what goes on the wire."""

    def __init__(self, backend: GeminiBackend, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[tuple[str, str, list[tuple[str, str]], Any, bytes]] = []
        client = backend._interactions.sdk_configuration.async_client
        send = client.send

        async def recording(request: Any, **kw: Any) -> Any:
            headers = sorted((k.lower(), v) for k, v in request.headers.items())
            timeout = request.extensions.get("timeout")
            self.sent.append((request.method, str(request.url), headers, timeout, request.content))
            return await send(request, **kw)

        monkeypatch.setattr(client, "send", recording)


async def test_fast_get_sends_the_stock_request(
    emu: EmulatorServer, pair: tuple[GeminiBackend, GeminiBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, stock = pair
    handle = (await stock.create(SPEC, "f" * 32)).id
    records = [_Recorder(fast, monkeypatch), _Recorder(stock, monkeypatch)]
    await _same(pair, handle)
    assert records[0].sent == records[1].sent and len(records[0].sent) == 1
    method, url, headers, _, _ = records[0].sent[0]
    assert method == "GET" and url.endswith(f"/interactions/{handle}?stream=false")
    assert ("x-goog-api-key", emu.api_key) in headers


async def test_fast_get_runs_a_callable_auth_source_on_every_call(
    emu: EmulatorServer, pair: tuple[GeminiBackend, GeminiBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Vertex credentials: a token source the SDK's auth hook asks on each request.
    from google.genai._gaos._hooks.google_genai_auth import GoogleGenAISecurityProvider

    tokens = iter(f"token-{n}" for n in range(100))
    for backend in pair:
        provider = GoogleGenAISecurityProvider(access_token=lambda: next(tokens))
        config = backend._interactions.sdk_configuration
        monkeypatch.setattr(config, "security", provider)
    fast, stock = pair
    fast._fast_get = fastcalls._FastGet.attach(fast._interactions)  # re-read the config
    records = [_Recorder(fast, monkeypatch), _Recorder(stock, monkeypatch)]
    for backend in (fast, fast, stock):
        got = await _outcome(backend, "any-id")
        assert got[:2] == ("TransientReadError", 403)  # the emulator wants an API key
    auth = [dict(r[2]).get("authorization") for r in records[0].sent + records[1].sent]
    assert auth == ["Bearer token-0", "Bearer token-1", "Bearer token-2"]
    assert [r[:2] for r in records[0].sent] == [records[1].sent[0][:2]] * 2


async def test_fast_get_parses_other_shapes_like_stock(
    pair: tuple[GeminiBackend, GeminiBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Answers the emulator never gives: legacy `outputs`, extra fields, a non-JSON 200,
    # an HTML 502 and a JSON body that is not an interaction.
    import httpx2

    answers = {
        "legacy": (
            200,
            "application/json",
            {
                "id": "legacy",
                "status": "completed",
                "outputs": [{"type": "text", "text": "old"}],
                "new_field": {"x": 1},
            },
        ),
        "html": (200, "text/html", "<html>hi</html>"),
        "gateway": (502, "text/html", "<html>bad gateway</html>"),
        "list": (200, "application/json", [1, 2]),
        "broken": (200, "application/json", "{not json"),
    }

    def answer(request: Any) -> Any:
        status, kind, body = answers[request.url.path.rsplit("/", 1)[-1]]
        text = body if isinstance(body, str) else json.dumps(body)
        return httpx2.Response(status, headers={"content-type": kind}, text=text)

    for backend in pair:
        client = backend._interactions.sdk_configuration.async_client
        monkeypatch.setattr(client, "_transport", httpx2.MockTransport(answer))
    for handle in answers:
        await _same(pair, handle)


async def test_unsafe_ids_and_changed_hooks_use_the_stock_get(
    pair: tuple[GeminiBackend, GeminiBackend],
) -> None:
    fast, _ = pair
    assert fast._fast_get is not None
    assert not fast._fast_get.accepts("a/b") and not fast._fast_get.accepts("a?b")
    assert (await _same(pair, "a/b"))[:2] == ("InteractionGoneError", 404)
    hooks = fast._interactions.sdk_configuration.__dict__["_async_hooks"]
    hooks.after_success_hooks.append(object())
    try:
        assert fastcalls._FastGet.attach(fast._interactions) is None
    finally:
        hooks.after_success_hooks.pop()
    retrying = GeminiBackend("k", "http://127.0.0.1:9")
    retrying._interactions.sdk_configuration.retry_config.max_retries = 2
    assert fastcalls._FastGet.attach(retrying._interactions) is None
    await retrying.aclose()


# -- the fast create: same body out, same RemoteInteraction (or error) back, one POST --------
IDEM = "0123456789abcdef" * 2
SPECS = {
    "plain": SPEC,
    "escapes": JobSpec(input='é "q" \\ \n\t\x00 \u2028 😀 \ud800', model="gemini-3-flash"),
    "labels": JobSpec(input="x", model="m", config={"labels": {"team": "a-b", "run": "7"}}),
    "extras": JobSpec(
        input="Tell me about lighthouses.",
        model="gemini-3-flash",
        config={
            "system_instruction": "Be brief.",
            "generation_config": {"temperature": 0.5, "max_output_tokens": 64},
            "labels": {"team": "ops"},
        },
    ),
    "text_blocks": JobSpec(input=[{"type": "text", "text": "a"}, {"text": "b"}], model="m"),
    "steps": JobSpec(
        input=[{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}], model="m"
    ),
}


async def _create_outcome(backend: GeminiBackend, spec: JobSpec) -> Any:
    """What the engine sees from one create, ids aside (two creates differ only there)."""
    try:
        got = await backend.create(spec, IDEM)
    except BackendError as exc:
        retryable = getattr(exc, "retryable", None)
        return (type(exc).__name__, exc.status, str(exc), retryable, type(exc.__cause__))
    raw = {k: v for k, v in got.raw.items() if k != "id"}
    return dataclasses.replace(got, id="", raw=raw)


def _stock_create_forbidden(backend: GeminiBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(**kwargs: Any) -> Any:
        raise AssertionError("the stock create was used")

    monkeypatch.setattr(backend._interactions, "create", refuse)


async def _same_create(
    pair: tuple[GeminiBackend, GeminiBackend],
    spec: JobSpec,
    posts: Any = None,
    *,
    fast_only: bool = True,
) -> Any:
    """Both backends' outcomes for `spec`, asserted equal; `posts()` must rise by one each.

    `fast_only`: the fast backend must not fall back to the stock create.
    """
    outcomes = []
    if fast_only:
        with pytest.MonkeyPatch.context() as patch:
            _stock_create_forbidden(pair[0], patch)
            outcomes.append(await _one_create(pair[0], spec, posts))
    else:
        outcomes.append(await _one_create(pair[0], spec, posts))
    outcomes.append(await _one_create(pair[1], spec, posts))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


async def _one_create(backend: GeminiBackend, spec: JobSpec, posts: Any) -> Any:
    before = posts() if posts else 0
    outcome = await _create_outcome(backend, spec)
    if posts:
        assert posts() - before == 1, "exactly one POST per create"
    return outcome


@pytest.mark.parametrize("name", list(SPECS))
async def test_fast_create_sends_the_stock_request(
    name: str, pair: tuple[GeminiBackend, GeminiBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, stock = pair
    records = [_Recorder(fast, monkeypatch), _Recorder(stock, monkeypatch)]
    got = await _same_create(pair, SPECS[name])
    assert isinstance(got, RemoteInteraction) and got.state is RemoteState.PENDING
    assert records[0].sent == records[1].sent and len(records[0].sent) == 1
    method, url, headers, _, body = records[0].sent[0]
    assert method == "POST" and url.endswith("/interactions")
    assert json.loads(body)["labels"]["idem"] == IDEM
    assert ("content-type", "application/json") in headers


async def test_fast_create_gives_the_stock_interaction_after_completion(
    emu: EmulatorServer, pair: tuple[GeminiBackend, GeminiBackend]
) -> None:
    done = []
    for backend in pair:
        created = await backend.create(SPECS["extras"], IDEM)
        emu.store.finish(emu.store.interactions[created.id], "completed", "done", None)
        got = await backend.get(created.id)
        done.append(dataclasses.replace(got, id="", raw={"id": None, **got.raw} | {"id": ""}))
    assert done[0] == done[1] and done[0].output_text == "done"


def _posts(emu: EmulatorServer) -> Any:
    return lambda: emu.store.calls["create_posts_received"]


@pytest.mark.parametrize(
    ("faults", "spec", "expected"),
    [
        ({"create": {"rate_429": 1.0}}, SPEC, ("NotCreatedError", 429, True)),
        ({"create": {"rate_500": 1.0}}, SPEC, ("MaybeCreatedError", 500, None)),
        ({"create": {"rate_503": 1.0}}, SPEC, ("MaybeCreatedError", 503, None)),
        ({"drop_rate": 1.0, "drop_mode": "503"}, SPEC, ("MaybeCreatedError", 503, None)),
        ({"drop_rate": 1.0}, SPEC, ("MaybeCreatedError", None, None)),  # connection dropped
        ({}, JobSpec(input=None, model="m"), ("NotCreatedError", 400, False)),
        ({}, JobSpec(input="x", model=None), ("NotCreatedError", 400, False)),  # type: ignore[arg-type]
        ({}, JobSpec(input="x", model=""), ("NotCreatedError", 400, False)),
        (
            {},
            JobSpec(input="x", model="m", config={"labels": {"Bad": "x"}}),
            ("NotCreatedError", 400, False),
        ),
    ],
)
async def test_fast_create_gives_the_stock_errors(
    emu: EmulatorServer,
    pair: tuple[GeminiBackend, GeminiBackend],
    faults: dict[str, Any],
    spec: JobSpec,
    expected: tuple[str, int | None, bool | None],
) -> None:
    emu.store.faults = FaultConfig.from_json(faults)
    got = await _same_create(pair, spec, _posts(emu))
    assert (got[0], got[1], got[3]) == expected


async def test_fast_create_with_a_wrong_key_fails_like_stock(emu: EmulatorServer) -> None:
    pair = (
        GeminiBackend("wrong-key", emu.base_url),
        GeminiBackend("wrong-key", emu.base_url, fast_path=False),
    )
    try:
        got = await _same_create(pair, SPEC, _posts(emu))
    finally:
        for backend in pair:
            await backend.aclose()
    assert got[:2] == ("NotCreatedError", 400) and got[3] is True and "wrong-key" not in got[2]
    assert emu.store.creates_log == []


async def test_fast_create_without_an_api_key_fails_like_stock(
    emu: EmulatorServer, pair: tuple[GeminiBackend, GeminiBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A callable token source (Vertex): asked on every request; the emulator wants a key (403).
    from google.genai._gaos._hooks.google_genai_auth import GoogleGenAISecurityProvider

    tokens = iter(f"token-{n}" for n in range(100))
    for backend in pair:
        provider = GoogleGenAISecurityProvider(access_token=lambda: next(tokens))
        monkeypatch.setattr(backend._interactions.sdk_configuration, "security", provider)
    fast, stock = pair
    fast._fast_create = fastcalls._FastCreate.attach(fast._interactions)  # re-read the config
    records = [_Recorder(fast, monkeypatch), _Recorder(stock, monkeypatch)]
    got = await _same_create(pair, SPEC, _posts(emu))
    assert got[:2] == ("NotCreatedError", 403) and got[3] is True
    await _create_outcome(fast, SPEC)
    auth = [dict(r[2]).get("authorization") for r in records[0].sent + records[1].sent]
    assert auth == ["Bearer token-0", "Bearer token-2", "Bearer token-1"]
    assert [r[:2] + r[4:] for r in records[0].sent] == [
        records[1].sent[0][:2] + records[1].sent[0][4:]
    ] * 2


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fast_create_timeout_and_refused_connection_like_stock(
    emu: EmulatorServer, transport: str
) -> None:
    from tests.helpers.ports import free_port

    # The client gives up after its request reached the emulator, which answers
    # later still: the timeout leaves the request time to arrive on a loaded
    # machine (at 0.1 s a create could time out before the emulator saw it).
    emu.store.faults = FaultConfig.from_json({"slow_rate": 1.0, "slow_seconds": 3.0})
    slow = _fast_and_stock(emu.api_key, emu.base_url, request_timeout=1.0, transport=transport)
    closed = f"http://127.0.0.1:{free_port()}"
    refused = _fast_and_stock(None, closed, transport=transport)
    try:
        got = await _same_create(slow, SPEC, _posts(emu))
        assert got[:2] == ("MaybeCreatedError", None) and "create sent" in got[2]
        got = await _same_create(refused, SPEC)
        assert got[:2] == ("NotCreatedError", None) and got[3] is True
        assert got[2].startswith("create was not sent: ")
    finally:
        for backend in (*slow, *refused):
            await backend.aclose()
    assert len(emu.store.creates_log) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("url", ["htp://{host}", "ftp://{host}", "not a url", "http://"])
async def test_a_base_url_no_request_can_leave_by_is_not_sent(
    emu: EmulatorServer, transport: str, url: str
) -> None:
    """A base URL without a host, or not http(s), is refused while the request
    is being built: "not sent" on every transport, so a retry spends no
    attempt on a create that never left and counts no duplicate."""
    base_url = url.format(host=emu.base_url.removeprefix("http://"))
    pair = _fast_and_stock(emu.api_key, base_url, transport=transport)
    try:
        got = await _same_create(pair, SPEC, fast_only=False)
    finally:
        for backend in pair:
            await backend.aclose()
    assert got[:2] == ("NotCreatedError", None) and got[3] is True, got
    assert got[2].startswith("create was not sent: "), got
    assert emu.store.creates_log == []


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_connection_lost_after_the_create_was_sent_is_outcome_unknown(
    emu: EmulatorServer, transport: str
) -> None:
    """The emulator stores the interaction, then closes the connection without an
    answer: "maybe created" on every transport, never "not sent" (a retry would
    then create a duplicate the ledger does not expect). httpx-aiohttp reports
    this as an httpx connect timeout; errors.py reads the aiohttp error under it."""
    emu.store.faults = FaultConfig.from_json({"drop_rate": 1.0})
    pair = _fast_and_stock(emu.api_key, emu.base_url, transport=transport)
    try:
        got = await _same_create(pair, SPEC, _posts(emu))
    finally:
        for backend in pair:
            await backend.aclose()
    assert got[:2] == ("MaybeCreatedError", None), got
    assert got[2].startswith("create sent, no usable answer: "), got
    assert len(emu.store.creates_log) == 2


def _fast_and_stock(
    api_key: str | None, base_url: str, **kwargs: Any
) -> tuple[GeminiBackend, GeminiBackend]:
    return (
        GeminiBackend(api_key, base_url, **kwargs),
        GeminiBackend(api_key, base_url, fast_path=False, **kwargs),
    )


@pytest.mark.parametrize(
    ("spec", "fast_only"),
    [
        (JobSpec(input="x", model="m", config={"no_such_parameter": 1}), True),  # TypeError
        (JobSpec(input="x", model="m", config={"generation_config": {"temperature": "hot"}}), True),
        (JobSpec(input="x", model="m", config={"labels": {"n": 1}}), True),  # ValidationError
        (JobSpec(input=[{"role": "user", "content": "hi"}], model="m"), True),  # not in SDK 3.3
        # A second `model`: a TypeError of the call itself, left to the stock create.
        (JobSpec(input="x", model="m", config={"model": "other"}), False),
    ],
)
async def test_fast_create_rejects_bad_requests_like_stock_without_sending(
    emu: EmulatorServer,
    pair: tuple[GeminiBackend, GeminiBackend],
    spec: JobSpec,
    fast_only: bool,
) -> None:
    got = await _same_create(pair, spec, fast_only=fast_only)
    assert got[0] == "NotCreatedError" and got[3] is False
    assert emu.store.calls["create_posts_received"] == 0


async def test_fast_create_parses_other_shapes_like_stock(
    pair: tuple[GeminiBackend, GeminiBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx2

    answers = [
        (
            200,
            "application/json",
            {
                "id": "legacy",
                "status": "in_progress",
                "outputs": [{"type": "text", "text": "old"}],
                "new_field": {"x": 1},
            },
        ),
        (
            200,
            "application/json",
            {
                "id": "x",
                "status": "completed",
                "steps": [{"type": "model_output", "content": [{"type": "text", "text": "hi"}]}],
            },
        ),
        (200, "application/json", {"status": "in_progress"}),  # no id
        (200, "text/html", "<html>hi</html>"),
        (200, "text/event-stream", "data: {}\n\n"),
        (201, "application/json", {"id": "x", "status": "in_progress"}),
        (502, "text/html", "<html>bad gateway</html>"),
        (400, "application/json", {"unexpected": True}),
        (
            400,
            "application/json",
            {
                "error": {
                    "code": "INVALID_ARGUMENT",
                    "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT",
                }
            },
        ),
        (409, "application/json", {"error": {"message": "conflict"}}),
        (503, "application/json", [1, 2]),
        (200, "application/json", [1, 2]),
        (200, "application/json", "{not json"),
    ]
    current: list[Any] = []

    def answer(request: Any) -> Any:
        status, kind, body = current[0]
        text = body if isinstance(body, str) else json.dumps(body)
        return httpx2.Response(status, headers={"content-type": kind}, text=text)

    for backend in pair:
        client = backend._interactions.sdk_configuration.async_client
        monkeypatch.setattr(client, "_transport", httpx2.MockTransport(answer))
    for shape in answers:
        current[:] = [shape]
        await _same_create(pair, SPEC)


def _backend_without_server(**kwargs: Any) -> GeminiBackend:
    return GeminiBackend("k", "http://127.0.0.1:9", **kwargs)


async def test_fast_create_steps_aside_when_unsure(
    emu: EmulatorServer, pair: tuple[GeminiBackend, GeminiBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, _ = pair
    assert fast._fast_create is not None
    # Agent and stream requests keep the stock create (other checks, headers, parsers).
    for extra in ({"agent": "a"}, {"stream": True}, {"agent_config": {}}):
        assert fast._fast_create.body("m", "x", {"idem": IDEM}, extra) is None
    # A template that surprises us: the stock create from then on, same results.
    broken = fastcalls._FastCreate.attach(fast._interactions)

    async def fail() -> None:
        raise ValueError("surprise")

    monkeypatch.setattr(broken, "_prepare", fail)
    fast._fast_create = broken
    await _same_create(pair, SPEC, _posts(emu), fast_only=False)
    assert fast._fast_create is None
    # Changed hooks or SDK retries switched on: no fast create at all.
    other = _backend_without_server()
    hooks = other._interactions.sdk_configuration.__dict__["_async_hooks"]
    hooks.after_parse_error_hooks.append(object())
    assert fastcalls._FastCreate.attach(other._interactions) is None
    assert fastcalls._FastGet.attach(other._interactions) is None
    hooks.after_parse_error_hooks.pop()
    other._interactions.sdk_configuration.retry_config.max_retries = 2
    assert fastcalls._FastCreate.attach(other._interactions) is None
    await other.aclose()
    assert _backend_without_server(fast_path=False)._fast_create is None


async def test_hand_built_body_is_checked_against_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend_without_server()
    fast = backend._fast_create
    assert fast is not None and await fast.ready() and fast._plain
    monkeypatch.setattr(fastcalls._FastCreate, "_plain_body", staticmethod(lambda *a: "{}"))
    other = fastcalls._FastCreate.attach(backend._interactions)
    assert await other.ready() and not other._plain  # the SDK builds every body
    assert other.body("m", "x", {"idem": IDEM}, {}) == fast._sdk_body("m", "x", {"idem": IDEM}, {})
    await backend.aclose()


@functools.cache
def _body_builder() -> Any:
    # Never sends: only the SDK's body functions are used.
    return fastcalls._FastCreate.attach(_backend_without_server()._interactions)


@given(
    model=st.text(max_size=20),
    text=st.text(max_size=60),
    labels=st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
)
@settings(max_examples=200, deadline=None)
def test_hand_built_body_equals_the_sdk_body(model: str, text: str, labels: dict[str, str]) -> None:
    fast = _body_builder()
    with fastpath._fast_path(True):
        assert fast._plain_body(model, text, labels) == fast._sdk_body(model, text, labels, {})


# -- the table of SDK internals: looked up once, and all or nothing --------------------------
def test_every_name_of_the_sdk_table_is_found() -> None:
    sdk = fastpath._sdk()
    assert sdk is not None and len(sdk) == len(fastpath._SDK_NAMES)  # no key used twice
    assert fastpath._sdk() is sdk


async def test_a_missing_sdk_name_turns_the_whole_fast_path_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = _backend_without_server(fast_path=False)
    try:
        with pytest.MonkeyPatch.context() as patch:
            renamed = (*fastpath._SDK_NAMES, ("models", "RenamedInANewerSdk"))
            patch.setattr(fastpath, "_SDK_NAMES", renamed)
            fastpath._sdk.cache_clear()
            assert fastpath._sdk() is None
            assert install_fast_path() is False
            assert fastcalls._FastGet.attach(backend._interactions) is None
            assert fastcalls._FastCreate.attach(backend._interactions) is None
            off = _backend_without_server()
            assert not off.fast_path and off._fast_get is None and off._fast_create is None
            await off.aclose()
            warned = [r.getMessage() for r in caplog.records if r.name == fastpath.__name__]
            assert len(warned) == 1 and "lacks an SDK internal" in warned[0]
    finally:
        fastpath._sdk.cache_clear()
        await backend.aclose()
    assert install_fast_path() is True
