"""Small steps every console test takes: wait for the workers, pick a row."""

from __future__ import annotations

from textual.pilot import Pilot

from reclaim_tui.tui.app import ReclaimApp

SIZE = (140, 40)


async def settle(pilot: Pilot[None]) -> None:
    """Let workers finish and their messages land (twice: a message may start a worker)."""
    app = pilot.app
    assert isinstance(app, ReclaimApp)
    for _ in range(3):
        await app.settle()
        await pilot.pause()


async def select(pilot: Pilot[None], idem: str) -> None:
    """Put the cursor on the row with this key (it must be in the window)."""
    app = pilot.app
    assert isinstance(app, ReclaimApp)
    keys = [r.idem for r in app.table.rows_shown]
    app.table.move_cursor(row=keys.index(idem), animate=False)
    await settle(pilot)


async def press(pilot: Pilot[None], *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


def shown(pilot: Pilot[None]) -> list[str]:
    app = pilot.app
    assert isinstance(app, ReclaimApp)
    return [r.idem for r in app.table.rows_shown]


async def until(pilot: Pilot[None], predicate: object, limit: float = 3.0) -> bool:
    """Poll `predicate()` while the app runs (for effects that cross threads)."""
    import time

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        await pilot.pause(0.02)
    return bool(predicate())  # type: ignore[operator]
