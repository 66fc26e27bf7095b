"""Pictures of the views of one job (pytest-textual-snapshot): the follow
view at 80×24 and the raw JSON. Deterministic as test_snapshots.py is.

Update after an intended change: pytest tests/tui/test_snapshots_follow.py --snapshot-update
"""

from __future__ import annotations

from textual.pilot import Pilot

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle
from .test_snapshots import app_for


def test_follow_view_80x24(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "f")

    assert snap_compare(app_for(seeded), terminal_size=(80, 24), run_before=ready)


def test_raw_json_view(snap_compare, seeded: Seeded) -> None:  # type: ignore[no-untyped-def]
    async def ready(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "v")

    assert snap_compare(app_for(seeded), terminal_size=SIZE, run_before=ready)
