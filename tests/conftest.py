"""Shared fixtures: a temporary ledger on a manual clock, the fake backend, an engine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger import Ledger
from reclaim_tui.core.sinks import DirectorySink


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock) -> FakeBackend:
    return FakeBackend(clock=clock, latency=None)


@pytest.fixture
async def ledger(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Ledger]:
    led = await Ledger.open(tmp_path / "ledger.db", clock=clock)
    yield led
    await led.close()


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    return tmp_path / "articles"


@pytest.fixture
def engine(ledger: Ledger, fake: FakeBackend, out_dir: Path) -> Engine:
    return Engine(ledger, fake, DirectorySink(out_dir), config=EngineConfig(), owner="test|1|a")
