"""Large results through the emulator (issue 40 point 14): its admin API
answered 413 to a 50 MB scripted result (aiohttp's default 1 MiB body
cap), so no emulated interaction could finish with one. `finish` now
reads bodies up to its own cap (ADMIN_MAX_BODY) and says so past it; the
real SDK then reads the large answers back, two at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.models import JobSpec, RemoteState
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.emulator import app as emulator_app

SPEC = JobSpec(input="hello", model="gemini-3-flash")
MB = 1_000_000


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(EmulatorConfig(latency=None, seed=7)) as server:
        yield server


async def _finish(emu: EmulatorServer, handle: str, text: str) -> tuple[int, Any]:
    url = f"{emu.base_url}/_emulator/interactions/{handle}/finish"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json={"status": "completed", "text": text}) as resp,
    ):
        return resp.status, await resp.json()


async def test_an_interaction_finishes_with_a_50_mb_result(emu: EmulatorServer) -> None:
    backend = GeminiBackend(emu.api_key, emu.base_url)
    try:
        handles = [(await backend.create(SPEC, str(n) * 32)).id for n in range(2)]
        for n, handle in enumerate(handles):
            status, body = await _finish(emu, handle, str(n) * (50 * MB))
            assert status == 200, body
        got = await asyncio.gather(*(backend.get(h) for h in handles))
    finally:
        await backend.aclose()
    for n, result in enumerate(got):
        assert result.state == RemoteState.COMPLETED
        assert result.output_text == str(n) * (50 * MB)


async def test_a_result_past_the_admin_cap_is_refused_and_changes_nothing(
    emu: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(emulator_app, "ADMIN_MAX_BODY", 10_000)
    backend = GeminiBackend(emu.api_key, emu.base_url)
    try:
        handle = (await backend.create(SPEC, "7" * 32)).id
        status, body = await _finish(emu, handle, "x" * 20_000)
        assert status == 413
        assert body["error"]["message"] == "request body is larger than 10000 bytes"
        assert (await backend.get(handle)).state != RemoteState.COMPLETED
        assert (await _finish(emu, handle, "x" * 5_000))[0] == 200
        assert (await backend.get(handle)).output_text == "x" * 5_000
    finally:
        await backend.aclose()
