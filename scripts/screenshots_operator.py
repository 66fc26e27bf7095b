"""Regenerate the screenshots of the daily operator's features (issue 25):
sort by a column, a structured filter, discard's confirmation, the
glossary on the detail pane, the help (actions first), a paste the table
ignored, `:ledger` on another ledger, each at 160×48 and at 80×24, from the
demo console.

    python scripts/screenshots_operator.py [--seconds 40] [--out screenshots]

It runs the demo (scripts/screenshots.py's) for a while first, so every
state has rows; ages and counts vary a little from run to run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from screenshots import (
    SIZE,
    SMALL,
    cursor_to,
    demo_app,
    fresh_run_dir,
    shoot,
    shutdown_race,
    type_keys,
)
from textual import events
from textual.keys import _character_to_key

from reclaim_tui.core.models import Status
from reclaim_tui.tui.app import ReclaimApp


async def main(seconds: float, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    app = demo_app(fresh_run_dir("operator"))
    done: list[bool] = []
    with shutdown_race(done):
        await _shots(app, out, seconds, done)


def _other_ledger(run: Path) -> Path:
    """A second ledger for `:ledger`: three jobs reserved by the CLI."""
    db = run / "other.db"
    jobs = run / "other.jsonl"
    lines = [json.dumps({"input": f"another team job {i}"}) + "\n" for i in range(3)]
    jobs.write_text("".join(lines))
    subprocess.run(
        [sys.executable, "-m", "reclaim_tui", "submit", str(jobs), "--no-send", "--db", str(db)],
        check=True,
    )
    return db


async def _shots(app: ReclaimApp, out: Path, seconds: float, done: list[bool]) -> None:
    other = _other_ledger(Path(app.config.settings.db).parent)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            await pilot.pause(1.0)
        for size, suffix in ((SIZE, ""), (SMALL, "-80x24")):
            await pilot.resize_terminal(*size)
            await pilot.press("1")
            # Sorted by model, descending (M twice): the bar names the sort.
            await pilot.press("M", "M")
            await shoot(app, pilot, out, f"sort{suffix}", wait=0.8)
            await pilot.press("t", "t", "t", "t")  # back to age in state
            # A structured filter: model, attempts and a time range together.
            await pilot.press("slash")
            await type_keys(pilot, "model:flash updated<10m attempts<2")
            await pilot.press("enter")
            await shoot(app, pilot, out, f"filter-words{suffix}", wait=0.8)
            await pilot.press("escape")  # clear the filter
            # Discard a consumed row: the confirmation (answered no).
            if await cursor_to(app, pilot, lambda r: r.status == Status.CONSUMED):
                await pilot.press("x")
                await shoot(app, pilot, out, f"discard{suffix}", wait=0.5)
                await pilot.press("n")
            # :fleet has its own script, with real processes on several
            # hosts: scripts/screenshots_fleet.py.
            # ? on the detail pane of a job in flight: its words first.
            if await cursor_to(app, pilot, lambda r: r.status == Status.SUBMITTED):
                await pilot.press("enter", "question_mark")
                await shoot(app, pilot, out, f"glossary{suffix}", wait=0.5)
                await pilot.press("escape", "escape")
            # ? on the table: the actions first.
            await pilot.press("question_mark")
            await shoot(app, pilot, out, f"help-actions{suffix}", wait=0.5)
            await pilot.press("escape")
            # A paste without bracketing: keys in one go, ignored and said.
            for ch in "an unbracketed paste of a prompt, read as keys":
                app.post_message(events.Key(_character_to_key(ch), ch))
            await shoot(app, pilot, out, f"paste-ignored{suffix}", wait=0.8, toasts=True)
            # :ledger on another ledger, then back.
            here = app.config.settings.db
            await pilot.press("colon")
            await type_keys(pilot, f"ledger {other}")
            await pilot.press("enter")
            await shoot(app, pilot, out, f"ledger-switch{suffix}", wait=1.5, toasts=True)
            await pilot.press("colon")
            await type_keys(pilot, f"ledger {here}")
            await pilot.press("enter")
            await pilot.pause(1.5)
        done.append(True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0, help="how long the demo runs first")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "screenshots")
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.out))
