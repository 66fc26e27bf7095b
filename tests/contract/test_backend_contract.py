"""One contract, two backends: FakeBackend in memory, and GeminiBackend through the
real google-genai SDK over HTTP to the in-process emulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import pytest

from reclaim_tui.core.backend import Backend
from reclaim_tui.core.fakes import FakeBackend, fake_output_text
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.gemini.finder import EmulatorFinder
from reclaim_tui.core.models import JobSpec, RemoteState
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.errors import InteractionGoneError


class Driver(Protocol):
    """The remote side of a backend, as tests move it."""

    async def finish(self, handle: str) -> None: ...
    async def end(self, handle: str, status: str, error: str | None = None) -> None: ...
    async def forget(self, handle: str) -> None: ...


@dataclass
class FakeDriver:
    fake: FakeBackend

    async def finish(self, handle: str) -> None:
        self.fake.finish(handle)

    async def end(self, handle: str, status: str, error: str | None = None) -> None:
        self.fake.fail(handle, status=status, error=error or "model error")

    async def forget(self, handle: str) -> None:
        self.fake.forget(handle)


@dataclass
class EmulatorDriver:
    emu: EmulatorServer
    session: aiohttp.ClientSession

    async def _post(self, handle: str, body: dict[str, Any]) -> None:
        url = f"{self.emu.base_url}/_emulator/interactions/{handle}/finish"
        async with self.session.post(url, json=body) as response:
            assert response.status == 200, await response.text()

    async def finish(self, handle: str) -> None:
        await self._post(handle, {"status": "completed"})

    async def end(self, handle: str, status: str, error: str | None = None) -> None:
        await self._post(handle, {"status": status, "error": error})

    async def forget(self, handle: str) -> None:
        url = f"{self.emu.base_url}/v1beta/interactions/{handle}"
        headers = {"x-goog-api-key": self.emu.api_key or ""}
        async with self.session.delete(url, headers=headers) as response:
            assert response.status == 200


@pytest.fixture(params=["fake", "emulator"])
async def backend_and_driver(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[Backend, Driver]]:
    if request.param == "fake":
        fake = FakeBackend(latency=None)
        yield fake, FakeDriver(fake)
        return
    async with EmulatorServer(EmulatorConfig(latency=None)) as emu:
        backend = GeminiBackend(emu.api_key, emu.base_url, finder=EmulatorFinder(emu.base_url))
        async with aiohttp.ClientSession() as session:
            yield backend, EmulatorDriver(emu, session)
        await backend.aclose()


SPEC = JobSpec(input="Summarise the plot of Hamlet in one line.", model="gemini-3-flash")


async def test_backend_satisfies_the_protocol(backend_and_driver: tuple[Backend, Driver]) -> None:
    backend, _ = backend_and_driver
    assert isinstance(backend, Backend)


async def test_create_returns_a_pending_handle(backend_and_driver: tuple[Backend, Driver]) -> None:
    backend, _ = backend_and_driver
    created = await backend.create(SPEC, "a" * 32)
    assert created.id
    assert created.state is RemoteState.PENDING
    assert created.raw["labels"] == {"idem": "a" * 32}


async def test_completed_interaction_carries_output_and_usage(
    backend_and_driver: tuple[Backend, Driver],
) -> None:
    backend, driver = backend_and_driver
    handle = (await backend.create(SPEC, "b" * 32)).id
    assert (await backend.get(handle)).state is RemoteState.PENDING
    await driver.finish(handle)
    done = await backend.get(handle)
    assert done.state is RemoteState.COMPLETED
    assert done.api_status == "completed"
    assert done.output_text == fake_output_text(SPEC.input)
    assert done.usage and done.usage["total_output_tokens"] > 0
    assert done.raw["steps"][-1]["type"] == "model_output"


async def test_failed_interaction_carries_its_error(
    backend_and_driver: tuple[Backend, Driver],
) -> None:
    backend, driver = backend_and_driver
    handle = (await backend.create(SPEC, "c" * 32)).id
    await driver.end(handle, "failed", "quota of thoughts exceeded")
    failed = await backend.get(handle)
    assert failed.state is RemoteState.FAILED
    assert failed.error and "quota of thoughts exceeded" in failed.error


async def test_unknown_status_maps_to_unknown(backend_and_driver: tuple[Backend, Driver]) -> None:
    backend, driver = backend_and_driver
    handle = (await backend.create(SPEC, "d" * 32)).id
    await driver.end(handle, "weird_status")
    seen = await backend.get(handle)
    assert seen.state is RemoteState.UNKNOWN
    assert seen.api_status == "weird_status"


@pytest.mark.parametrize(
    ("status", "state"),
    [("requires_action", RemoteState.ACTION), ("requires_continuation", RemoteState.PENDING)],
)
async def test_statuses_that_wait_or_go_on(
    backend_and_driver: tuple[Backend, Driver], status: str, state: RemoteState
) -> None:
    backend, driver = backend_and_driver
    handle = (await backend.create(SPEC, "f" * 32)).id
    await driver.end(handle, status)
    seen = await backend.get(handle)
    assert seen.state is state and seen.api_status == status


@pytest.mark.parametrize("status", ["incomplete", "budget_exceeded"])
async def test_statuses_nobody_can_continue_map_to_failed(
    backend_and_driver: tuple[Backend, Driver], status: str
) -> None:
    backend, driver = backend_and_driver
    handle = (await backend.create(SPEC, "e" * 32)).id
    await driver.end(handle, status)
    seen = await backend.get(handle)
    assert seen.state is RemoteState.FAILED
    assert seen.api_status == status


async def test_get_of_unknown_id_is_gone(backend_and_driver: tuple[Backend, Driver]) -> None:
    backend, _ = backend_and_driver
    with pytest.raises(InteractionGoneError) as caught:
        await backend.get("no-such-interaction")
    assert caught.value.status == 404


async def test_forgotten_interaction_is_gone(backend_and_driver: tuple[Backend, Driver]) -> None:
    backend, driver = backend_and_driver
    handle = (await backend.create(SPEC, "f" * 32)).id
    await driver.forget(handle)
    with pytest.raises(InteractionGoneError):
        await backend.get(handle)


async def test_cancel_of_pending_interaction(backend_and_driver: tuple[Backend, Driver]) -> None:
    backend, _ = backend_and_driver
    handle = (await backend.create(SPEC, "0" * 32)).id
    cancelled = await backend.cancel(handle)
    assert cancelled.state is RemoteState.CANCELLED
    assert (await backend.get(handle)).state is RemoteState.CANCELLED


async def test_cancel_of_unknown_id_is_gone(backend_and_driver: tuple[Backend, Driver]) -> None:
    backend, _ = backend_and_driver
    with pytest.raises(InteractionGoneError):
        await backend.cancel("no-such-interaction")


async def test_find_by_label_finds_the_created_interaction(
    backend_and_driver: tuple[Backend, Driver],
) -> None:
    backend, driver = backend_and_driver
    assert backend.supports_lookup
    handle = (await backend.create(SPEC, "1" * 32)).id
    await driver.finish(handle)
    found = await backend.find_by_label("1" * 32)
    assert found is not None
    assert found.id == handle
    assert found.state is RemoteState.COMPLETED
    assert await backend.find_by_label("2" * 32) is None
