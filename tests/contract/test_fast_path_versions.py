"""For each google-genai version the fast path is verified on, the stock SDK path and
the fast path give identical results: the real SDK, over HTTP, against the emulator.

One case per listed version (`FAST_PATH_SDK_VERSIONS`, as shipped: nothing here
switches the fast path on for an unlisted SDK, unlike tests/unit/test_gemini_fastpath.py).
A run proves the version it has installed; the others are proven by the CI run that
installs each (tests/unit/test_tested_versions.py checks there is one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google import genai

from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.gemini.fastgate import FAST_PATH_SDK_VERSIONS, attach_fast_path
from reclaim_tui.core.models import JobSpec
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.errors import BackendError

INSTALLED_SDK = str(genai.__version__)
SPECS = {
    "text": JobSpec(input="Tell me about lighthouses.", model="gemini-3-flash"),
    "config": JobSpec(
        input="Two words.",
        model="gemini-3-flash",
        config={"generation_config": {"temperature": 0.2}},
        labels={"team": "ops"},
    ),
}


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorServer]:
    # A frozen clock: two runs differ only in the interactions' ids.
    config = EmulatorConfig(latency=None, clock=lambda: 1_800_000_000.0)
    async with EmulatorServer(config) as server:
        yield server


def _without_ids(raw: Any) -> Any:
    if isinstance(raw, dict):
        return {k: _without_ids(v) for k, v in raw.items() if k != "id"}
    if isinstance(raw, list):
        return [_without_ids(v) for v in raw]
    return raw


async def _run(emu: EmulatorServer, fast: bool) -> list[Any]:
    """Every call the engine makes, on one path: what each returned or raised."""
    backend = GeminiBackend(emu.api_key, emu.base_url, fast_path=fast)
    seen: list[Any] = []
    try:
        assert backend.fast_path is fast, "the fast path did not switch on as asked"
        assert (backend._fast_get is not None and backend._fast_create is not None) is fast
        for letter, spec in zip("ab", SPECS.values(), strict=True):
            created = await backend.create(spec, letter * 32)
            pending = await backend.get(created.id)
            emu.store.finish(emu.store.interactions[created.id], "completed", None, None)
            done = await backend.get(created.id)
            seen += [
                (r.state, r.output_text, r.usage, _without_ids(dict(r.raw)))
                for r in (
                    created,
                    pending,
                    done,
                )
            ]
        other = await backend.create(SPECS["text"], "c" * 32)
        cancelled = await backend.cancel(other.id)
        seen.append((cancelled.state, _without_ids(dict(cancelled.raw))))
        for call in (backend.get("v1_unknown"), backend.create(JobSpec(input="x", model=""), "d")):
            try:
                await call
                seen.append("no error")
            except BackendError as exc:
                seen.append((type(exc).__name__, str(exc)))
        # Neither fast call stepped aside on the way: each answer above was its own.
        assert (backend._fast_get is not None and backend._fast_create is not None) is fast
    finally:
        await backend.aclose()
    return seen


@pytest.mark.parametrize("version", FAST_PATH_SDK_VERSIONS)
async def test_the_stock_and_the_fast_path_give_identical_results(
    version: str, emu: EmulatorServer
) -> None:
    if version != INSTALLED_SDK:
        pytest.skip(
            f"google-genai {version} is proven by the CI run that installs it"
            f" (this one has {INSTALLED_SDK})"
        )
    backend = GeminiBackend(emu.api_key, emu.base_url)
    try:
        await backend.warm()
        # The one door hands the backend both fast calls on a verified SDK.
        fast = attach_fast_path(backend._interactions, True)
        assert fast.on and fast.get is not None and fast.create is not None
    finally:
        await backend.aclose()
    stock = await _run(emu, fast=False)
    assert await _run(emu, fast=True) == stock
