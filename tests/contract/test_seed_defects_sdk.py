"""Defects 5 and 6 of the original design (DESIGN.md §3), shown with the real SDK.

Each test first shows the original behaviour (so it would fail had the
design been kept) and then that reclaim-tui's backend does not have it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from google import genai
from google.genai import types

from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.models import JobSpec, RemoteState
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.errors import MaybeCreatedError

SPEC = JobSpec(input="hello", model="gemini-flash-latest")


@pytest.fixture
async def first_post_503() -> AsyncIterator[tuple[str, list[str]]]:
    """A server that accepts every create but loses the FIRST response (503)."""
    posts: list[str] = []

    async def create(request: web.Request) -> web.Response:
        posts.append(await request.text())
        if len(posts) == 1:
            return web.json_response(
                {"error": {"code": "UNAVAILABLE", "message": "lost", "status": "UNAVAILABLE"}},
                status=503,
            )
        return web.json_response({"id": f"int-{len(posts)}", "status": "in_progress"})

    app = web.Application()
    app.router.add_post("/{version}/interactions", create)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", posts
    await runner.cleanup()


async def test_defect_05_no_hidden_sdk_retries_on_create(
    first_post_503: tuple[str, list[str]],
) -> None:
    base_url, posts = first_post_503
    # The original design: a default client silently sends the create again.
    stock = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=base_url))
    created = await stock.aio.interactions.create(
        model=SPEC.model, input="hello", background=True, labels={"idem": "a" * 32}
    )
    assert created.id == "int-2" and len(posts) == 2  # two interactions paid for
    posts.clear()
    # reclaim-tui: exactly one POST; the ambiguity is reported, not hidden.
    backend = GeminiBackend("k", base_url)
    try:
        with pytest.raises(MaybeCreatedError):
            await backend.create(SPEC, "b" * 32)
    finally:
        await backend.aclose()
    assert len(posts) == 1


async def test_defect_06_only_real_api_members_are_used() -> None:
    client = genai.Client(api_key="k")
    # What the original called does not exist in the SDK ...
    assert not hasattr(client.aio.interactions, "list")
    async with EmulatorServer(EmulatorConfig(latency=0.0)) as emu:
        backend = GeminiBackend(emu.api_key, emu.base_url)
        try:
            created = await backend.create(SPEC, "c" * 32)
            got = await backend.get(created.id)
        finally:
            await backend.aclose()
        raw_client = genai.Client(
            api_key=emu.api_key, http_options=types.HttpOptions(base_url=emu.base_url)
        )
        interaction = await raw_client.aio.interactions.get(created.id)
    for missing in ("name", "done", "response", "metadata"):
        assert not hasattr(interaction, missing), missing
    # ... and what reclaim-tui uses does, end to end through the real SDK.
    assert got.state == RemoteState.COMPLETED and got.output_text
