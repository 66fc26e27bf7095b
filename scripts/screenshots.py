"""Regenerate screenshots/*.svg: the demo console (embedded emulator) as an
operator sees it after a short run, at 160×48 and (main-80x24) at 80×24.
Deterministic-ish: seeded jobs and faults, but the emulator runs on the wall
clock, so ages and counts vary a little.

    python scripts/screenshots.py [--seconds 25] [--out screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from reclaim_tui.core.models import Status
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.demo import make_demo_app

#: The pictures' terminal: a roomy one, then the smallest the console is made for.
SIZE = (160, 48)
SMALL = (80, 24)


async def shoot(app: ReclaimApp, pilot, out: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    await app.settle()
    await pilot.pause(0.2)
    app.clear_notifications()
    await pilot.pause(0.1)
    path = out / f"{name}.svg"
    path.write_text(app.export_screenshot(title=f"reclaim-tui demo — {name}"))
    print(f"wrote {path}")


def interesting(app: ReclaimApp) -> bool:
    counts = app.state.counts
    return (
        counts.get(Status.CONSUMED.value, 0) >= 10
        and app.state.orphans >= 1
        and counts.get(Status.FAILED.value, 0) >= 1
    )


async def main(seconds: float, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    db = Path(tempfile.mkdtemp(prefix="reclaim-shots-")) / "demo.db"
    # Shorter jobs than the interactive demo (3–40 s) so a run fits in seconds.
    app = make_demo_app(db_path=str(db), jobs=48, seed=7, interval=1.0, latency=(2.0, 15.0))
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not interesting(app):
            await pilot.pause(0.5)
        app.action_toggle_pause()  # freeze the picture (the ledger keeps its state)
        app.main.action_refresh()
        await shoot(app, pilot, out, "main")
        consumed = next((r for r in app.table.rows_shown if r.status == Status.CONSUMED), None)
        if consumed is not None:
            app.table.move_cursor(row=app.table.rows_shown.index(consumed), animate=False)
            await app.settle()
            await pilot.press("enter")
            await shoot(app, pilot, out, "detail")
            await pilot.press("escape")
        await pilot.press("question_mark")
        await shoot(app, pilot, out, "help")
        await pilot.press("escape")
        await pilot.press("3")
        await shoot(app, pilot, out, "orphans")
        await pilot.press("1")
        await pilot.resize_terminal(*SMALL)
        await shoot(app, pilot, out, "main-80x24")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "screenshots")
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.out))
