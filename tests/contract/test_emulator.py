"""The emulator's faults and admin API, seen through GeminiBackend and the real SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.gemini.finder import EmulatorFinder
from reclaim_tui.core.models import JobSpec, RemoteState
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer, FaultConfig
from reclaim_tui.emulator.faults import FaultDice
from reclaim_tui.emulator.request import parse_create
from reclaim_tui.emulator.state import InteractionStore
from reclaim_tui.errors import (
    ConfigError,
    InteractionGoneError,
    MaybeCreatedError,
    NotCreatedError,
    TransientReadError,
)

SPEC = JobSpec(input="hello", model="gemini-3-flash")
IDEM = "9" * 32


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(EmulatorConfig(latency=None, seed=7)) as server:
        yield server


@pytest.fixture
async def backend(emu: EmulatorServer) -> AsyncIterator[GeminiBackend]:
    client = GeminiBackend(emu.api_key, emu.base_url, finder=EmulatorFinder(emu.base_url))
    yield client
    await client.aclose()


async def admin(emu: EmulatorServer, method: str, path: str, body: Any = None) -> Any:
    async with aiohttp.ClientSession() as session:
        async with session.request(method, f"{emu.base_url}/_emulator/{path}", json=body) as r:
            assert r.status == 200, await r.text()
            return await r.json()


async def set_faults(emu: EmulatorServer, **faults: Any) -> None:
    await admin(emu, "POST", "faults", faults)


# -- create faults -------------------------------------------------------------------------
async def test_503_on_create_is_maybe_created_after_exactly_one_post(
    emu: EmulatorServer, backend: GeminiBackend
) -> None:
    await set_faults(emu, create={"rate_503": 1.0})
    with pytest.raises(MaybeCreatedError) as caught:
        await backend.create(SPEC, IDEM)
    assert caught.value.status == 503
    stats = await admin(emu, "GET", "stats")
    assert stats["calls"]["create_posts_received"] == 1  # no hidden SDK retry
    assert stats["creates_total"] == 0


async def test_500_on_create_is_maybe_created(emu: EmulatorServer, backend: GeminiBackend) -> None:
    await set_faults(emu, create={"rate_500": 1.0})
    with pytest.raises(MaybeCreatedError):
        await backend.create(SPEC, IDEM)
    assert emu.store.calls["create_posts_received"] == 1


async def test_429_on_create_is_not_created_and_retryable(
    emu: EmulatorServer, backend: GeminiBackend
) -> None:
    await set_faults(emu, create={"rate_429": 1.0})
    with pytest.raises(NotCreatedError) as caught:
        await backend.create(SPEC, IDEM)
    assert caught.value.retryable and caught.value.status == 429
    assert emu.store.calls["create_posts_received"] == 1


async def test_missing_model_is_not_created_and_not_retryable(backend: GeminiBackend) -> None:
    with pytest.raises(NotCreatedError) as caught:
        await backend.create(JobSpec(input="hello", model=""), IDEM)
    assert not caught.value.retryable
    assert caught.value.status == 400


async def test_unknown_create_parameter_is_not_created(
    emu: EmulatorServer, backend: GeminiBackend
) -> None:
    spec = JobSpec(input="hello", model="m", config={"no_such_parameter": 1})
    with pytest.raises(NotCreatedError) as caught:
        await backend.create(spec, IDEM)
    assert not caught.value.retryable
    assert emu.store.calls["create_posts_received"] == 0


@pytest.mark.parametrize("drop_mode", ["disconnect", "503"])
async def test_dropped_create_hides_an_interaction_that_exists(
    emu: EmulatorServer, backend: GeminiBackend, drop_mode: str
) -> None:
    await set_faults(emu, drop_rate=1.0, drop_mode=drop_mode)
    with pytest.raises(MaybeCreatedError):
        await backend.create(SPEC, IDEM)
    stats = await admin(emu, "GET", "stats")
    assert stats["creates_total"] == 1
    assert stats["creates_per_label"] == {IDEM: 1}
    log = await admin(emu, "GET", "creates")
    assert [(e["idem"], e["dropped"]) for e in log] == [(IDEM, True)]
    found = await backend.find_by_label(IDEM)
    assert found is not None and found.id == log[0]["id"]


async def test_lookup_is_plugged_in_only_for_an_emulator_with_lookup_on(
    emu: EmulatorServer,
) -> None:
    from reclaim_tui.bootstrap import make_backend
    from reclaim_tui.config import Settings

    on = Settings(api_key=emu.api_key, base_url=emu.base_url, emulator_lookup=True)
    built = [make_backend(on), make_backend(on.with_(emulator_lookup=False))]
    built.append(make_backend(on.with_(base_url=None)))  # the real API cannot be searched
    try:
        assert [b.supports_lookup for b in built] == [True, False, False]
        handle = (await built[0].create(SPEC, IDEM)).id
        found = await built[0].find_by_label(IDEM)
        assert found is not None and found.id == handle
        assert await built[1].find_by_label(IDEM) is None
    finally:
        for backend in built:
            await backend.aclose()


async def test_failed_lookup_is_transient_and_never_shows_the_key() -> None:
    from tests.helpers.ports import free_port

    closed = f"http://127.0.0.1:{free_port()}"
    finder = EmulatorFinder(closed, timeout=1.0)
    client = GeminiBackend("secret-key", closed, finder=finder)
    try:
        with pytest.raises(TransientReadError, match=f"lookup {IDEM}") as caught:
            await client.find_by_label(IDEM)
        assert "secret-key" not in str(caught.value)
        assert finder._session is not None
    finally:
        await client.aclose()
    assert finder._session is None, "the backend closes the finder it was given"


def test_core_does_not_import_the_emulator() -> None:
    import subprocess
    import sys

    code = (
        "import sys, reclaim_tui.core.engine.engine, reclaim_tui.core.gemini;"
        "bad = [m for m in sys.modules if m.startswith('reclaim_tui.emulator')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


async def test_wrong_api_key_is_not_created_but_retryable(emu: EmulatorServer) -> None:
    client = GeminiBackend("not-the-key", emu.base_url)
    try:
        with pytest.raises(NotCreatedError) as caught:
            await client.create(SPEC, IDEM)
        assert caught.value.status == 400 and caught.value.retryable
        assert caught.value.cause == "auth"  # the real API: 400 API_KEY_INVALID
        assert "not-the-key" not in str(caught.value)
        with pytest.raises(TransientReadError):
            await client.get("anything")
    finally:
        await client.aclose()
    assert emu.store.creates_log == []


async def test_requests_without_a_key_are_refused(emu: EmulatorServer) -> None:
    async with aiohttp.ClientSession() as session:
        url = f"{emu.base_url}/v1beta/interactions"
        async with session.post(url, json={"model": "m", "input": "x"}) as response:
            assert response.status == 403
            body = await response.json()
        assert body["error"]["status"] == "PERMISSION_DENIED"
        async with session.post(
            url, params={"key": emu.api_key}, json={"model": "m", "input": "x"}
        ) as response:
            assert response.status == 200


async def test_slow_create_with_client_timeout_is_maybe_created(emu: EmulatorServer) -> None:
    # The timeout leaves a loaded machine room to connect (a connect that
    # times out is rightly "not created"); the answer comes well after it.
    await set_faults(emu, slow_rate=1.0, slow_seconds=3.0)
    client = GeminiBackend(emu.api_key, emu.base_url, request_timeout=1.5)
    try:
        with pytest.raises(MaybeCreatedError):
            await client.create(SPEC, IDEM)
    finally:
        await client.aclose()
    assert emu.store.calls["create_posts_received"] == 1
    assert len(emu.store.creates_log) == 1


async def test_connection_refused_is_not_created() -> None:
    from tests.helpers.ports import free_port

    client = GeminiBackend(None, f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(NotCreatedError) as caught:
            await client.create(SPEC, IDEM)
        assert caught.value.retryable
        with pytest.raises(TransientReadError):
            await client.get("x")
    finally:
        await client.aclose()


# -- get faults and statuses -----------------------------------------------------------------
async def test_5xx_and_429_on_get_are_transient(
    emu: EmulatorServer, backend: GeminiBackend
) -> None:
    handle = (await backend.create(SPEC, IDEM)).id
    for rate in ("rate_500", "rate_503", "rate_429"):
        await set_faults(emu, get={rate: 1.0})
        with pytest.raises(TransientReadError):
            await backend.get(handle)
    await set_faults(emu)
    assert (await backend.get(handle)).state is RemoteState.PENDING


async def test_fail_rate_makes_interactions_end_failed() -> None:
    config = EmulatorConfig(latency=0.0, faults=FaultConfig(fail_rate=1.0))
    async with EmulatorServer(config) as server:
        client = GeminiBackend(server.api_key, server.base_url)
        try:
            handle = (await client.create(SPEC, IDEM)).id
            seen = await client.get(handle)
        finally:
            await client.aclose()
    assert seen.state is RemoteState.FAILED and seen.error


async def test_zero_latency_completes_on_the_next_get() -> None:
    async with EmulatorServer(EmulatorConfig(latency=0.0)) as server:
        client = GeminiBackend(server.api_key, server.base_url)
        try:
            created = await client.create(SPEC, IDEM)
            assert created.state is RemoteState.PENDING
            assert (await client.get(created.id)).state is RemoteState.COMPLETED
        finally:
            await client.aclose()


async def test_delete_then_get_is_gone(emu: EmulatorServer, backend: GeminiBackend) -> None:
    handle = (await backend.create(SPEC, IDEM)).id
    await backend._client.aio.interactions.delete(handle)
    with pytest.raises(InteractionGoneError):
        await backend.get(handle)


# -- admin API --------------------------------------------------------------------------------
async def test_stats_count_creates_per_label_and_calls(
    emu: EmulatorServer, backend: GeminiBackend
) -> None:
    first = (await backend.create(SPEC, IDEM)).id
    await backend.create(SPEC, IDEM)
    await backend.create(SPEC, "8" * 32)
    await backend.get(first)
    await backend.cancel(first)
    stats = await admin(emu, "GET", "stats")
    assert stats["creates_total"] == 3
    assert stats["creates_per_label"] == {IDEM: 2, "8" * 32: 1}
    assert stats["calls"] == {
        "create": 3,
        "get": 1,
        "cancel": 1,
        "delete": 0,
        "create_posts_received": 3,
    }
    assert stats["interactions"] == 3
    assert stats["by_status"] == {"cancelled": 1, "in_progress": 2}


async def test_faults_round_trip_and_reject_bad_values(emu: EmulatorServer) -> None:
    await set_faults(emu, create={"rate_429": 0.25}, fail_rate=0.5)
    faults = await admin(emu, "GET", "faults")
    assert faults["create"]["rate_429"] == 0.25 and faults["fail_rate"] == 0.5
    assert faults["get"]["rate_429"] == 0.0
    async with aiohttp.ClientSession() as session:
        url = f"{emu.base_url}/_emulator/faults"
        async with session.post(url, json={"drop_rate": 2}) as response:
            assert response.status == 400


async def test_find_accepts_label_and_idem_queries(
    emu: EmulatorServer, backend: GeminiBackend
) -> None:
    handle = (await backend.create(SPEC, IDEM)).id
    by_label = await admin(emu, "GET", f"find?label=idem:{IDEM}")
    by_idem = await admin(emu, "GET", f"find?idem={IDEM}")
    assert [i["id"] for i in by_label] == [i["id"] for i in by_idem] == [handle]
    assert by_label[0]["labels"] == {"idem": IDEM}


async def test_finish_sets_text_and_reset_clears(
    emu: EmulatorServer, backend: GeminiBackend
) -> None:
    handle = (await backend.create(SPEC, IDEM)).id
    await admin(emu, "POST", f"interactions/{handle}/finish", {"status": "completed", "text": "hi"})
    assert (await backend.get(handle)).output_text == "hi"
    await admin(emu, "POST", "reset")
    stats = await admin(emu, "GET", "stats")
    assert stats["creates_total"] == 0 and stats["interactions"] == 0


def test_latency_range_is_drawn_per_interaction_from_the_seed() -> None:
    def ready_times(seed: int) -> list[float | None]:
        store = InteractionStore(
            FaultConfig(), FaultDice(seed), latency_range=(1.0, 5.0), seed=seed, clock=lambda: 0.0
        )
        request = parse_create({"model": "m", "input": "x", "background": True})
        return [store.create(request).ready_at for _ in range(5)]

    first = ready_times(3)
    assert first == ready_times(3)
    assert first != ready_times(4)
    assert all(t is not None and 1.0 <= t <= 5.0 for t in first)


def test_fault_rolls_are_reproducible_with_a_seed() -> None:
    faults = FaultConfig.uniform(rate_503=0.5).create
    dice_a, dice_b = FaultDice(11), FaultDice(11)
    assert [dice_a.error_status(faults) for _ in range(50)] == [
        dice_b.error_status(faults) for _ in range(50)
    ]


def test_real_api_without_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from reclaim_tui.core.gemini import resolve_api_key

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    assert resolve_api_key(None) is None
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        GeminiBackend(resolve_api_key(None))
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    assert resolve_api_key(None) == "g-key"
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key")
    assert resolve_api_key(None) == "gem-key"
    assert resolve_api_key("flag-key") == "flag-key"
    assert "flag-key" not in repr(GeminiBackend("flag-key"))


async def test_a_429_carries_its_cause_and_retry_after(emu: EmulatorServer) -> None:
    """Issue 10: a rate limit is not the job's fault, and Retry-After is honoured."""
    await set_faults(emu, create={"rate_429": 1.0})
    client = GeminiBackend(emu.api_key, emu.base_url)
    try:
        with pytest.raises(NotCreatedError) as caught:
            await client.create(SPEC, IDEM)
        assert caught.value.status == 429 and caught.value.cause == "rate_limit"
        assert caught.value.retry_after == 1.0
    finally:
        await client.aclose()


def test_flags_reach_the_config() -> None:
    config = EmulatorConfig.from_flags(
        incomplete_rate=0.1,
        budget_exceeded_rate=0.2,
        requires_action_rate=0.3,
        continuation_rate=0.4,
        agent_time_scale=0.01,
        retention=86400.0,
        strict_models=True,
        full_steps=True,
    )
    faults = config.faults
    assert (faults.incomplete_rate, faults.budget_exceeded_rate) == (0.1, 0.2)
    assert (faults.requires_action_rate, faults.continuation_rate) == (0.3, 0.4)
    assert config.agent_time_scale == 0.01 and config.retention_seconds == 86400.0
    assert config.models is not None and "gemini-flash-latest" in config.models
    assert config.full_steps
    assert EmulatorConfig.from_flags().models is None  # any model name, by default


@pytest.mark.parametrize(
    "bad",
    [{"agent_time_scale": -1.0}, {"queued_share": 1.0}, {"retention_seconds": 0.0}],
)
def test_bad_config_values_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        EmulatorConfig(**bad)


async def test_ending_rates_round_trip_through_the_admin_api(emu: EmulatorServer) -> None:
    await set_faults(emu, incomplete_rate=0.5, continuation_rate=1.0)
    faults = await admin(emu, "GET", "faults")
    assert faults["incomplete_rate"] == 0.5 and faults["continuation_rate"] == 1.0
    assert faults["budget_exceeded_rate"] == faults["requires_action_rate"] == 0.0


async def test_a_product_job_on_a_forced_ending_keeps_its_partial_output_and_usage() -> None:
    config = EmulatorConfig(latency=0.0, faults=FaultConfig(budget_exceeded_rate=1.0))
    async with EmulatorServer(config) as server:
        client = GeminiBackend(server.api_key, server.base_url)
        try:
            handle = (await client.create(SPEC, IDEM)).id
            seen = await client.get(handle)
        finally:
            await client.aclose()
    assert seen.api_status == "budget_exceeded" and seen.state is RemoteState.FAILED
    assert seen.usage and seen.usage["total_output_tokens"] > 0
    assert seen.output_text and len(seen.output_text) < len(fake_output_text(SPEC.input))
