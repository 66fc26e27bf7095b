"""The console sends nothing the operator did not ask for (issue 32): with
the loop paused, a prompt submitted with `s` goes out alone."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, Status
from reclaim_tui.core.row_notes import PLAN_READY
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import TransientReadError
from reclaim_tui.tui.launch import _preflight, make_app
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.submit import SubmitScreen

from .conftest import Seeded, spec
from .pilot_helpers import SIZE, notified, press, select, settle, until


async def test_a_submit_while_paused_sends_the_prompt_and_nothing_else(seeded: Seeded) -> None:
    waiting = await seeded.get("reserving")
    assert (waiting.status, waiting.attempts) == (Status.RESERVING, 0)
    app = seeded.app()  # paused
    assert app.pace.paused
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubmitScreen)
        app.screen.query_one(TextArea).text = "Summarise the paused-loop rule"
        await press(pilot, "ctrl+s")
        assert await until(pilot, notified(pilot, ": 1 reserved"))
        await settle(pilot)
    mine = await seeded.get(idempotency_key(spec("Summarise the paused-loop rule")))
    assert mine.status == Status.SUBMITTED and mine.handle
    after = await seeded.get("reserving")
    # The row reserved before stays unsent: the paused loop sends it later.
    assert (after.status, after.attempts, after.handle) == (Status.RESERVING, 0, None)


async def _cancel_pending(seeded: Seeded) -> str:
    """The seeded submitted row, cancelled with the API's cancel failing."""
    idem = seeded.keys["submitted"]
    handle = (await seeded.get("submitted")).handle or ""
    seeded.fake.cancel_faults[handle] = [
        TransientReadError("cancel: connection refused", cause="network")
    ]
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:
        engine = Engine(ledger, seeded.fake, DirectorySink(seeded.out), owner="test|1|1|")
        row = await engine.operator.cancel(idem, actor=Actor.CLI)
    finally:
        await ledger.close()
    assert row.held and (row.last_error or "").startswith("cancel pending")
    return idem


async def test_r_on_a_cancel_pending_row_refuses_and_says_why(seeded: Seeded) -> None:
    """`r` asked with a cost and said nothing of the pending cancel; the old
    interaction was never cancelled and a new create went out."""
    idem = await _cancel_pending(seeded)
    creates = seeded.fake.calls["create"]
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, idem)
        await press(pilot, "r")
        assert await until(pilot, notified(pilot, "cancel pending")), [
            n.message for n in app._notifications
        ]
        assert not isinstance(app.screen, ConfirmScreen)
        await settle(pilot)
    row = await seeded.get(idem)
    assert row.status == Status.CANCELLED and row.held
    assert seeded.fake.calls["create"] == creates


async def _plan_ready(seeded: Seeded) -> str:
    """The seeded submitted row, as a poll that found its research plan leaves it."""
    idem = seeded.keys["submitted"]
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:
        changes = {"held": 1, "last_error": f"{PLAN_READY}1. Search for TPUs."}
        row = await ledger.operator_update(
            idem, (Status.SUBMITTED,), Status.SUBMITTED, "test", "plan", changes, me="t|1|1|"
        )
    finally:
        await ledger.close()
    assert row is not None
    return idem


async def test_c_on_a_plan_asks_to_decline_it_and_the_row_ends_cancelled(seeded: Seeded) -> None:
    """The `w` dialog said "to drop it, cancel the row (c)"; `c` was refused
    ("had already completed … the next tick stores and delivers its result")."""
    idem = await _plan_ready(seeded)
    handle = (await seeded.get(idem)).handle or ""
    seeded.fake.finish(handle)  # a plan's interaction has completed
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, idem)
        await press(pilot, "c")
        assert isinstance(app.screen, ConfirmScreen)
        assert "Decline the research plan" in app.screen.question
        await press(pilot, "y")
        assert await until(pilot, notified(pilot, "cancelled: 1 row")), [
            n.message for n in app._notifications
        ]
        await settle(pilot)
    row = await seeded.get(idem)
    assert (row.status, row.held) == (Status.CANCELLED, 0)
    notes = [e.note or "" for e in await seeded.events(idem)]
    assert any("declined the research plan" in n for n in notes), notes


async def test_a_console_that_started_a_new_ledger_says_so_first(tmp_path: Path) -> None:
    """A console started in an empty folder opened a new empty ledger silently."""
    settings = Settings(db=str(tmp_path / "fresh.db"), out=str(tmp_path / "articles"))
    clock = ManualClock(1_800_000_000.0)
    app = make_app(settings, backend=FakeBackend(clock=clock), clock=clock, paused=True)
    app.config.created_note = await _preflight(settings, False)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert notified(pilot, f"created a new ledger at {settings.db}")()
        await settle(pilot)


async def test_a_clean_exit_leaves_the_ledger_whole_in_its_db_file(seeded: Seeded) -> None:
    """The WAL was left beside the ledger at exit (33.8 MB beside 864 KB):
    a copy of `*.db` was not the ledger."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        app.screen.query_one(TextArea).text = "Write something to the WAL"
        await press(pilot, "ctrl+s")
        assert await until(pilot, notified(pilot, ": 1 reserved"))
        await settle(pilot)
        wal = Path(f"{seeded.db}-wal")
        assert wal.exists() and wal.stat().st_size > 0  # the console's writes are there now
        await app.action_quit()
        await settle(pilot)
    assert not wal.exists() or wal.stat().st_size == 0, wal.stat().st_size
