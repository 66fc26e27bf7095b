"""Pictures of the console (pytest-textual-snapshot). Deterministic: a manual
clock, the loop paused, keys derived from fixed prompts, UTC timestamps.

Update after an intended change: pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import TextArea

from reclaim_tui.tui.app import ReclaimApp

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle


def app_for(seeded: Seeded) -> ReclaimApp:
    app = seeded.app()
    app.sub_title = "ledger.db"  # not the temporary path
    return app


def test_main_screen_every_status(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(app_for(seeded), terminal_size=SIZE, run_before=ready)


def test_detail_pane(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "enter")

    assert snap_compare(app_for(seeded), terminal_size=SIZE, run_before=ready)


def test_help_screen(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await press(pilot, "question_mark")

    assert snap_compare(app_for(seeded), terminal_size=(140, 50), run_before=ready)


def test_submit_modal(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await press(pilot, "s")
        pilot.app.screen.query_one(TextArea).text = "Summarise the incident report"
        await settle(pilot)

    assert snap_compare(app_for(seeded), terminal_size=SIZE, run_before=ready)


def test_confirmation(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await press(pilot, "o")

    assert snap_compare(app_for(seeded), terminal_size=SIZE, run_before=ready)


def test_empty_ledger(snap_compare, empty: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(app_for(empty), terminal_size=SIZE, run_before=ready)


def test_filtered_view(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await press(pilot, "slash")
        pilot.app.query_one("#filter").value = "model:pro"  # type: ignore[attr-defined]
        await press(pilot, "enter")

    assert snap_compare(app_for(seeded), terminal_size=SIZE, run_before=ready)


def test_orphans_tab_with_marks(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await press(pilot, "3", "A")

    assert snap_compare(app_for(seeded), terminal_size=SIZE, run_before=ready)
