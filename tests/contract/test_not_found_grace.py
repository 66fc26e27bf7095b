"""A 404 is not proof of loss (issue 24, point 9).

In September 2026 the real API answered 404 to every GET of freshly created
background interactions of one agent for about two days, then served them
again (googleapis/python-genai issue 2985). Through the real SDK against the
emulator's `vanish` fault, on an injected clock: a fresh interaction that
answers 404 is polled again, not resubmitted, and collected once it comes
back; past `gone_grace` it is held for an operator (and still collected if it
comes back); only past the API's retention does `--on-gone` apply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.retention import attention
from reclaim_tui.core.models import Actor, GonePolicy, JobSpec, Status
from reclaim_tui.core.row_notes import NOT_FOUND
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer, FaultConfig
from reclaim_tui.emulator.state import InteractionStore
from reclaim_tui.errors import InteractionGoneError, OperatorError

HOUR = 3600.0
DAY = 86400.0


@dataclass
class World:
    clock: ManualClock
    ledger: Ledger
    engine: Engine
    store: InteractionStore

    async def run_for(self, seconds: float, step: float = 60.0) -> None:
        """Tick every `step` seconds of the injected clock for `seconds`."""
        end = self.clock.now() + seconds
        while self.clock.now() < end:
            self.clock.advance(step)
            await self.engine.tick()


async def _world(
    tmp_path: Path, faults: FaultConfig, config: EngineConfig, latency: float | None = 30.0
) -> AsyncIterator[World]:
    clock = ManualClock()
    emu_config = EmulatorConfig(latency=latency, clock=clock.now, faults=faults)
    async with EmulatorServer(emu_config) as emu:
        backend = GeminiBackend(emu.api_key, emu.base_url)
        ledger = await open_ledger(str(tmp_path / "ledger.db"), clock=clock)
        engine = Engine(ledger, backend, DirectorySink(tmp_path / "out"), config=config)
        try:
            yield World(clock, ledger, engine, emu.store)
        finally:
            await ledger.close()
            await backend.aclose()


@pytest.fixture
async def hiccup(tmp_path: Path) -> AsyncIterator[World]:
    """Every interaction answers 404 for its first 3 hours (grace: 6 h)."""
    faults = FaultConfig(vanish_rate=1.0, vanish_seconds=3 * HOUR)
    async for world in _world(tmp_path, faults, EngineConfig()):
        yield world


@pytest.fixture
async def long_hiccup(tmp_path: Path) -> AsyncIterator[World]:
    """Every interaction answers 404 for its first 10 hours (grace: 6 h)."""
    faults = FaultConfig(vanish_rate=1.0, vanish_seconds=10 * HOUR)
    async for world in _world(tmp_path, faults, EngineConfig()):
        yield world


SPEC = JobSpec(input="a fresh interaction that answers 404 for a while", model="m")
IDEM = idempotency_key(SPEC)


async def test_a_fresh_404_is_polled_again_not_resubmitted_and_collected_when_back(
    hiccup: World,
) -> None:
    world = hiccup
    await world.engine.tick([SPEC])
    await world.run_for(HOUR)
    row = await world.ledger.get(IDEM)
    assert row is not None and row.status == Status.SUBMITTED and not row.held
    assert (row.last_error or "").startswith(NOT_FOUND)
    assert world.store.creates_per_label[IDEM] == 1 and row.duplicates == 0
    seen = await attention(world.ledger, 55.0)
    assert (seen.not_found, seen.not_found_held) == (1, 0)
    await world.run_for(2.5 * HOUR)  # the interaction comes back at 3 h
    row = await world.ledger.get(IDEM)
    assert row is not None and row.status == Status.CONSUMED, row.last_error
    assert world.store.creates_per_label[IDEM] == 1 and row.duplicates == 0
    assert (await world.ledger.result(IDEM)) is not None


async def test_past_the_grace_it_is_held_and_still_collected_when_back(
    long_hiccup: World,
) -> None:
    world = long_hiccup
    await world.engine.tick([SPEC])
    await world.run_for(6.5 * HOUR, step=300.0)
    row = await world.ledger.get(IDEM)
    assert row is not None and row.status == Status.SUBMITTED and row.held
    assert (row.last_error or "").startswith(NOT_FOUND)
    assert world.store.creates_per_label[IDEM] == 1 and row.duplicates == 0
    seen = await attention(world.ledger, 55.0)
    assert (seen.not_found, seen.not_found_held) == (0, 1)
    notes = [e.note for e in await world.ledger.events(IDEM)]
    assert any("held for an operator" in n for n in notes)
    await world.run_for(4 * HOUR, step=300.0)  # back at 10 h
    row = await world.ledger.get(IDEM)
    assert row is not None and row.status == Status.CONSUMED and not row.held
    assert world.store.creates_per_label[IDEM] == 1


@pytest.mark.parametrize("policy", list(GonePolicy))
async def test_past_retention_the_on_gone_policy_applies(
    tmp_path: Path, policy: GonePolicy
) -> None:
    # Free tier: the API keeps an interaction 1 day. The emulator's never ends
    # by itself (latency None) and answers 404 from its create on.
    faults = FaultConfig(vanish_rate=1.0, vanish_seconds=30 * DAY)
    config = replace(EngineConfig(), retention=DAY, on_gone=policy)
    async for world in _world(tmp_path, faults, config, latency=None):
        await world.engine.tick([SPEC])
        await world.run_for(DAY - HOUR, step=1800.0)
        row = await world.ledger.get(IDEM)
        assert row is not None and row.status == Status.SUBMITTED and row.held
        assert world.store.creates_per_label[IDEM] == 1
        await world.run_for(2 * HOUR, step=1800.0)
        row = await world.ledger.get(IDEM)
        assert row is not None
        if policy == GonePolicy.RESUBMIT:
            assert row.duplicates == 1 and world.store.creates_per_label[IDEM] == 2
        else:
            assert (row.status, row.held, row.inflight) == (Status.RESERVING, True, True)
            assert world.store.creates_per_label[IDEM] == 1


async def test_the_vanish_fault_is_set_by_the_admin_api_and_the_interaction_comes_back() -> None:
    clock = ManualClock()
    async with EmulatorServer(EmulatorConfig(latency=1.0, clock=clock.now)) as emu:
        backend = GeminiBackend(emu.api_key, emu.base_url)
        async with aiohttp.ClientSession() as session:
            faults = {"vanish_rate": 1.0, "vanish_seconds": 600.0}
            async with session.post(f"{emu.base_url}/_emulator/faults", json=faults) as answer:
                assert answer.status == 200
                assert (await answer.json())["vanish_seconds"] == 600.0
            bad = {"vanish_rate": 1.0, "vanish_seconds": -1}
            async with session.post(f"{emu.base_url}/_emulator/faults", json=bad) as answer:
                assert answer.status == 400
        try:
            created = await backend.create(SPEC, IDEM)
            clock.advance(60)
            with pytest.raises(InteractionGoneError):
                await backend.get(created.id)
            clock.advance(600)
            back = await backend.get(created.id)
            assert back.id == created.id and back.api_status == "completed"
        finally:
            await backend.aclose()


async def test_the_operator_resends_a_held_404_row_by_cancel_then_retry(long_hiccup: World) -> None:
    world = long_hiccup
    await world.engine.tick([SPEC])
    await world.run_for(6.5 * HOUR, step=600.0)
    row = await world.ledger.get(IDEM)
    assert row is not None and row.held and row.status == Status.SUBMITTED
    with pytest.raises(OperatorError, match="not waiting for an answer"):
        await world.engine.operator.answer(IDEM, "hello?", actor=Actor.CLI)
    await world.engine.operator.cancel(IDEM, actor=Actor.CLI)
    await world.engine.operator.retry(IDEM, actor=Actor.CLI)
    await world.engine.tick()
    row = await world.ledger.get(IDEM)
    assert row is not None and row.status == Status.SUBMITTED and not row.held
    assert world.store.creates_per_label[IDEM] == 2
