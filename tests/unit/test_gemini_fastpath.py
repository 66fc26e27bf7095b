"""The memoized SDK fast path gives the stock path's results, and steps aside when unsure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from reclaim_tui.core import gemini
from reclaim_tui.core.gemini import GeminiBackend, install_fast_path
from reclaim_tui.core.models import JobSpec
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer

SPEC = JobSpec(input="Tell me about lighthouses.", model="gemini-3-flash")


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorServer]:
    # A frozen clock: two creates differ only in their id.
    config = EmulatorConfig(latency=None, clock=lambda: 1_800_000_000.0)
    async with EmulatorServer(config) as server:
        yield server


def _dump(interaction: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = interaction.model_dump(mode="json", by_alias=True)
    return dumped


async def _sdk_calls(backend: GeminiBackend, emu: EmulatorServer, fast: bool) -> list[Any]:
    """create, get (pending), get (completed), cancel — the SDK objects, on one path."""
    sdk = backend._client.aio.interactions
    with gemini._fast_path(fast):
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
        gemini._MODEL_CACHE.clear()
        fast = await _sdk_calls(backend, emu, fast=True)
        assert gemini._MODEL_CACHE, "the fast path was not exercised"
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
    emu: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google import genai

    assert install_fast_path(version="3.4.0") is False
    monkeypatch.setattr(genai, "__version__", "3.3.1")
    backend = GeminiBackend(emu.api_key, emu.base_url)
    assert backend.fast_path is False
    gemini._MODEL_CACHE.clear()
    try:
        created = await backend.create(SPEC, "c" * 32)
        assert (await backend.get(created.id)).id == created.id
    finally:
        await backend.aclose()
    assert gemini._MODEL_CACHE == {}


def test_changed_sdk_layout_is_refused() -> None:
    class Renamed:
        @staticmethod
        def unmarshal(value: Any, typ: Any, strict: bool = True) -> Any:
            return value

        @staticmethod
        def marshal_json(val: Any, typ: Any) -> str:
            return ""

    assert gemini._sdk_shape_ok(Renamed, []) is False


def test_memo_is_inert_outside_backend_calls() -> None:
    calls: list[str] = []

    def stock(name: str, /, **fields: Any) -> str:
        calls.append(name)
        return name

    memo = gemini._memo_create_model(stock)
    memo("M", body=(int, ...))
    memo("M", body=(int, ...))
    assert calls == ["M", "M"]
    with gemini._fast_path(True):
        memo("N", body=(int, ...))
        memo("N", body=(int, ...))
        memo("U", body=([],))  # unhashable: stock every time
        memo("U", body=([],))
    assert calls == ["M", "M", "N", "U", "U"]
