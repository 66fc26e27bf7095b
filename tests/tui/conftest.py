"""A ledger with rows in every status, built through the engine on a manual clock.

The console under test is `launch.make_app` — the CLI's own factory — on that
ledger with the same FakeBackend (so adopt/cancel see the remote side) and the
same ManualClock (so ages in pictures never move).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig, OrphanPolicy
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, Event, JobSpec, Row, StoredResult
from reclaim_tui.core.sinks import CallableSink, DirectorySink
from reclaim_tui.errors import MaybeCreatedError, NotCreatedError, SinkError
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.launch import make_app

START = 1_800_000_000.0
SEED_OWNER = "seed-host|1|seed"


def spec(text: str, model: str = "gemini-flash-latest") -> JobSpec:
    return JobSpec(input=text, model=model)


@dataclass
class Seeded:
    """Keys of the seeded rows by role, plus the shared fake and clock."""

    db: Path
    out: Path
    clock: ManualClock
    fake: FakeBackend
    keys: dict[str, str] = field(default_factory=dict)

    def settings(self, **changes: object) -> Settings:
        base = Settings(db=str(self.db), out=str(self.out), orphan_policy=OrphanPolicy.HOLD)
        return base.with_(**changes)

    def app(self, **kwargs: object) -> ReclaimApp:
        kwargs.setdefault("paused", True)
        kwargs.setdefault("interval", 3600.0)
        if kwargs.get("readonly"):
            app = make_app(self.settings(), clock=self.clock, **kwargs)  # type: ignore[arg-type]
        else:
            app = make_app(self.settings(), backend=self.fake, clock=self.clock, **kwargs)  # type: ignore[arg-type]
        # Pilot waits for animations after each key; the tab underline's would
        # cost 0.3 s a press and show nothing a test checks.
        app.animation_level = "none"
        # Toasts expire by the wall clock (5 s): on a loaded machine one could
        # vanish before a test (or a snapshot) looks. Here they stay.
        app.NOTIFICATION_TIMEOUT = 3600.0  # type: ignore[misc]
        return app

    async def get(self, role: str) -> Row:
        """The row as the ledger has it now (a connection of the test's own)."""
        return (await self.snapshot())[self.keys.get(role, role)]

    async def snapshot(self) -> dict[str, Row]:
        ledger = await open_ledger(self.db, clock=self.clock)
        try:
            return {r.idem: r async for r in ledger.iter_rows()}
        finally:
            await ledger.close()

    async def events(self, role: str) -> list[Event]:
        ledger = await open_ledger(self.db, clock=self.clock)
        try:
            return await ledger.events(self.keys.get(role, role))
        finally:
            await ledger.close()


async def _seed(seeded: Seeded) -> None:
    clock, fake = seeded.clock, seeded.fake
    ledger = await open_ledger(seeded.db, clock=clock)
    refuse: set[str] = set()

    def sink_fn(idem: str, result: StoredResult) -> None:
        if idem in refuse:
            raise SinkError("disk full (test)")

    directory = DirectorySink(seeded.out)

    async def deliver(idem: str, result: StoredResult) -> None:
        sink_fn(idem, result)
        await directory.deliver(idem, result)

    config = EngineConfig(max_attempts=5, orphan_policy=OrphanPolicy.HOLD, actor=Actor.TICK)
    engine = Engine(ledger, fake, CallableSink(deliver, "test"), config=config, owner=SEED_OWNER)
    roles = {
        "consumed": spec("Summarise the Q3 billing migration"),
        "done": spec("Translate the release notes into French", "gemini-pro-latest"),
        "submitted": spec("Write a product description for a solar pump"),
        "submitted2": spec("Explain how the on-call rotation works", "gemini-pro-latest"),
        "failed": spec("List the risks of a Postgres upgrade"),
        "cancelled": spec("Draft a follow-up email about the outage"),
        "orphan": spec("Classify feedback about the mobile app"),
        "reserving": spec("Extract dates from the supplier contract"),
    }
    seeded.keys = {role: idempotency_key(s) for role, s in roles.items()}
    refuse.add(seeded.keys["done"])
    order = ["consumed", "done", "submitted", "submitted2", "failed", "cancelled", "orphan"]
    fake.create_faults = [
        None,
        None,
        None,
        None,
        NotCreatedError("400 bad request: model not found", 400, retryable=False),
        None,
        (MaybeCreatedError("connection reset after the request was sent"), True),
    ]
    for role in order:
        await engine.submit([roles[role]])
        clock.advance(7)
    for role in ("consumed", "done"):
        fake.finish(fake.handle_for(seeded.keys[role]))
    clock.advance(30)
    await engine.reclaim()
    await engine.operator.cancel(seeded.keys["cancelled"], actor=Actor.CLI)
    clock.advance(45)
    await engine.submit([roles["reserving"]], send=False)
    clock.advance(20)
    await ledger.close()


@pytest.fixture
def seeded(tmp_path: Path) -> Seeded:
    clock = ManualClock(START)
    fake = FakeBackend(clock=clock, latency=None)
    s = Seeded(tmp_path / "ledger.db", tmp_path / "articles", clock, fake)
    asyncio.run(_seed(s))
    return s


@pytest.fixture
def empty(tmp_path: Path) -> Seeded:
    clock = ManualClock(START)
    s = Seeded(tmp_path / "empty.db", tmp_path / "articles", clock, FakeBackend(clock=clock))

    async def create() -> None:
        await (await open_ledger(s.db, clock=clock)).close()

    asyncio.run(create())
    return s
