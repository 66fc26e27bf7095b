"""An engine for counting tests: a fresh SQLite ledger, the fake backend
answering at once, a sink that keeps nothing, a clock that moves when told."""

from __future__ import annotations

from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.sinks import CallableSink

__all__ = ["engine_on_fakes"]


async def _noop(idem: str, result: StoredResult) -> None:
    return None


async def engine_on_fakes(folder: Path, concurrency: int = 16) -> tuple[Engine, ManualClock]:
    """(engine, its clock); the caller closes `engine.ledger`."""
    clock = ManualClock()
    ledger = await open_ledger(folder / "ledger.db", clock=clock)
    engine = Engine(
        ledger,
        FakeBackend(clock=clock, latency=0.0),
        CallableSink(_noop),
        owner="test|1|a",
        config=EngineConfig(concurrency=concurrency),
    )
    return engine, clock
