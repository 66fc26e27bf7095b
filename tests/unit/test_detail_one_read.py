"""The detail of a row, read on every console key that lands on a row, is
ONE call to SQLite's connection thread (the row, its result, its events,
when its interaction's event came, whether the inbox is used), not one a
read: each call costs the console's event loop a hand-off and a wake-up on
the key's path (issue 39, item 5). A row that follows another one up reads
that one after. The detail is the same as the port's own reads give, on
both engines. A window read again from its first row (the console's look
every second) reads whether a row comes before it in the same call."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import Page, View
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import DirectorySink
from tests.helpers.thread_calls import count_thread_calls

JOB = JobSpec(input="the first", model="m")
FOLLOW_UP = JobSpec(input="the second", model="m", previous=idempotency_key(JOB))


async def _world(tmp_path: Path, db_url: str) -> ManualClock:
    """Two rows done (the second follows the first up), the first's
    interaction with an inbox event."""
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    try:
        fake = FakeBackend(clock=clock, latency=None, supports_lookup=False)
        config = EngineConfig(webhooks=True, first_poll=120.0)
        engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config, owner="t|1|x")
        await engine.tick([JOB])
        handle = fake.handle_for(idempotency_key(JOB))
        fake.finish(handle)
        event = inbox.InboxEvent(
            "msg_1", clock.now(), "interaction.completed", handle, idempotency_key(JOB),
            "completed", "hmac", None,
        )  # fmt: skip
        await inbox.record(ledger, event)
        clock.advance(200)
        await engine.tick()
        await engine.tick([FOLLOW_UP])
        fake.finish(fake.handle_for(idempotency_key(FOLLOW_UP)))
        clock.advance(200)
        await engine.tick()
    finally:
        await ledger.close()
    return clock


async def test_a_rows_detail_is_one_call_to_sqlites_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "ledger.db")
    clock = await _world(tmp_path, db)
    reader = await ConsoleReader.open(db, clock=clock)
    try:
        conn = reader._fast.connection
        calls = count_thread_calls(conn, monkeypatch)
        detail = await reader.detail(idempotency_key(JOB))
        assert detail is not None and detail.result is not None and detail.events
        assert detail.event_at is not None and detail.inbox_used
        assert sum(calls.values()) == 1, calls
        calls.clear()
        # A follow-up reads the row it follows up after: two calls.
        follow = await reader.detail(idempotency_key(FOLLOW_UP))
        assert follow is not None and follow.previous is not None
        assert sum(calls.values()) == 2, calls
        calls.clear()
        assert await reader.detail("no-such-row") is None
        assert sum(calls.values()) == 1, calls
    finally:
        await reader.close()


async def test_a_window_read_again_from_its_first_row_is_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The once-a-second look at the window (from its first row) reads the
    rows and whether one comes before them together."""
    db = str(tmp_path / "ledger.db")
    clock = await _world(tmp_path, db)
    reader = await ConsoleReader.open(db, clock=clock)
    try:
        view = View()
        top = await reader.page(view)
        assert len(top.rows) == 2 and not top.has_before
        conn = reader._fast.connection
        calls = count_thread_calls(conn, monkeypatch)
        again = await reader.page(view, view.key_of(top.rows[1]), "from")
        assert sum(calls.values()) == 1, calls
        assert again == Page(top.rows[1:], has_before=True, has_after=False)
        calls.clear()
        assert await reader.page(view, view.key_of(top.rows[0]), "from") == top
        assert sum(calls.values()) == 1, calls
    finally:
        await reader.close()


async def test_the_detail_is_what_the_ports_own_reads_give(tmp_path: Path, db_url: str) -> None:
    clock = await _world(tmp_path, db_url)
    reader = await ConsoleReader.open(db_url, clock=clock)
    try:
        port = reader._fast
        for spec in (JOB, FOLLOW_UP):
            idem = idempotency_key(spec)
            detail = await reader.detail(idem)
            assert detail is not None
            row = await port.get(idem)
            assert row is not None
            assert detail.row == row
            assert detail.result == await port.result(idem)
            assert detail.events == await port.events(idem)
            assert detail.inbox_used is True
            handle = row.handle
            assert handle is not None
            received = await port.select(
                Sql(lambda d: f"SELECT MIN(received_at) FROM inbox WHERE interaction = {d.p}"),
                (handle,),
            )
            assert detail.event_at == received[0][0]
            previous = await port.get(spec.previous) if spec.previous else None
            assert detail.previous == previous
        assert (await reader.detail(idempotency_key(JOB))).event_at is not None  # type: ignore[union-attr]
        assert (await reader.detail(idempotency_key(FOLLOW_UP))).event_at is None  # type: ignore[union-attr]
    finally:
        await reader.close()
