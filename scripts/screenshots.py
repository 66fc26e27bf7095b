"""Regenerate screenshots/*.svg: the demo console (`./dev demo`: the embedded
emulator, seeded jobs, a trickle of new ones with agents among them) as an
operator sees it, then screenshots/demo.svg, the animated capture
(scripts/animate.py).

One demo runs for `--seconds` (at least; more until it has consumed, failed
and orphaned rows), long enough for the charts to have a few minutes of
completions, then the script walks the console with Textual's Pilot and
saves a picture of each view:

    main (160×48)  detail (enter)  follow (f)  raw-json (v)  costs ($)
    charts (S)  help (?)  command-line (: typed)  prune (:prune 1s, its
    confirmation)  retry-cost (failed rows marked, r: the confirmation with
    its cost)  orphans (3)  main-80x24

Nothing is changed by the walk: both confirmations are answered "no".
Deterministic where the code allows: seeded jobs, faults and trickle, a
fixed ledger path and no settings file of the operator's ($RECLAIM_CONFIG
points into the run's own folder); the emulator and the engine run on the
wall clock in the demo's worker process, so ages and counts vary a little.

    python scripts/screenshots.py [--seconds 150] [--out screenshots] [--no-animation]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from textual.worker import WorkerFailed

from reclaim_tui.core.models import Row, Status
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.demo import make_demo_app

#: The pictures' terminal: a roomy one, then the smallest the console is made for.
SIZE = (160, 48)
SMALL = (80, 24)
#: Where the run keeps its ledger: a fixed path, so the header's subtitle is
#: the same from run to run (emptied first).
RUN_DIR = Path(tempfile.gettempdir()) / "reclaim-screenshots"
#: Shorter jobs than the interactive demo's (3–40 s) and a livelier trickle, so
#: a run of a couple of minutes shows every state.
LATENCY = (2.0, 15.0)
TRICKLE = (2.0, 5.0)


def fresh_run_dir(name: str) -> Path:
    """An empty folder for one run, with $RECLAIM_CONFIG pointing into it (the
    operator's own settings — theme, hidden panels — must not change the pictures)."""
    run = RUN_DIR / name
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    os.environ["RECLAIM_CONFIG"] = str(run / "settings.toml")
    return run


def demo_app(run: Path, *, seed: int = 7, interval: float = 1.0) -> ReclaimApp:
    app = make_demo_app(
        db_path=str(run / "demo.db"),
        jobs=48,
        seed=seed,
        interval=interval,
        latency=LATENCY,
        trickle=TRICKLE,
    )
    app.animation_level = "none"
    return app


async def settle(app: ReclaimApp, pilot, wait: float = 0.3, toasts: bool = False) -> None:  # type: ignore[no-untyped-def]
    await app.settle()
    await pilot.pause(wait)
    if not toasts:  # a picture of a feature keeps the toast it is about
        app.clear_notifications()
    await pilot.pause(0.1)


async def shoot(
    app: ReclaimApp, pilot, out: Path, name: str, wait: float = 0.3, toasts: bool = False
) -> None:  # type: ignore[no-untyped-def]
    await settle(app, pilot, wait, toasts)
    path = out / f"{name}.svg"
    path.write_text(app.export_screenshot(title=f"reclaim-tui demo — {name}"))
    print(f"wrote {path}", flush=True)


def counts(app: ReclaimApp) -> dict[str, int]:
    return app.state.counts


def interesting(app: ReclaimApp) -> bool:
    """Every state worth a picture is on the ledger."""
    c = counts(app)
    return (
        c.get(Status.CONSUMED.value, 0) >= 20
        and c.get(Status.FAILED.value, 0) >= 2
        and c.get(Status.SUBMITTED.value, 0) >= 1
    )


async def cursor_to(app: ReclaimApp, pilot, want: Callable[[Row], bool]) -> Row | None:  # type: ignore[no-untyped-def]
    """Put the table's cursor on the first shown row `want` accepts."""
    await settle(app, pilot, 0.1)
    rows = app.table.rows_shown
    for index, row in enumerate(rows):
        if want(row):
            app.table.move_cursor(row=index, animate=False)
            await settle(app, pilot, 0.2)
            return row
    return None


async def type_keys(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press(*("space" if ch == " " else ch for ch in text))


TERMINAL = (Status.CONSUMED, Status.FAILED, Status.CANCELLED)


async def follow_to_end(app: ReclaimApp, pilot, limit: float = 30.0) -> Status | None:  # type: ignore[no-untyped-def]
    """In the follow view: wait until its job is consumed, failed or cancelled."""
    status = None
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        await pilot.pause(1.0)
        row = app.screen.job_row() if hasattr(app.screen, "job_row") else None
        status = row.status if row is not None else None
        if status in TERMINAL:
            break
    return status


@contextlib.contextmanager
def shutdown_race(done: list[bool]):  # type: ignore[no-untyped-def]
    """Let the demo end even if the app fails on its way out, once every
    picture is taken: its reclaim loop may redraw the loop bar while the
    screen is being torn down (NoMatches 'LoopBar'; an app bug, see the report)."""
    try:
        yield
    except WorkerFailed as exc:
        if not done:
            raise
        print(f"note: the console failed while closing: {exc}", file=sys.stderr, flush=True)


def is_agent(row: Row) -> bool:
    return row.model.startswith("deep-research")


async def main(seconds: float, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    run = fresh_run_dir("stills")
    app = demo_app(run)
    done: list[bool] = []
    with shutdown_race(done):
        await _stills(app, out, seconds, done)


async def _stills(app: ReclaimApp, out: Path, seconds: float, done: list[bool]) -> None:
    async with app.run_test(size=SIZE) as pilot:
        started = time.monotonic()
        orphans_shot = False
        while True:
            await pilot.pause(1.0)
            elapsed = time.monotonic() - started
            # An orphan lasts until a webhook event names it (seconds): catch it when seen.
            if not orphans_shot and app.state.orphans >= 1 and elapsed >= 4:
                await pilot.press("3")
                await shoot(app, pilot, out, "orphans", wait=0.5)
                await pilot.press("1")
                orphans_shot = True
            if elapsed >= seconds and interesting(app) and orphans_shot:
                break
            if elapsed >= seconds * 2:
                break
        print(f"demo ran {time.monotonic() - started:.0f}s: {counts(app)}", flush=True)
        app.main.action_refresh()

        # The main screen as it runs: cursor on a job in flight, so the detail pane has a timeline.
        await cursor_to(app, pilot, lambda r: r.status == Status.SUBMITTED and not is_agent(r))
        await shoot(app, pilot, out, "main")

        # Full-screen detail of a consumed row (its whole story).
        if await cursor_to(app, pilot, lambda r: r.status == Status.CONSUMED):
            await pilot.press("enter")
            await shoot(app, pilot, out, "detail")
            await pilot.press("escape")

        # Raw JSON of the same stored interaction.
        if await cursor_to(app, pilot, lambda r: r.status == Status.CONSUMED):
            await pilot.press("v")
            await shoot(app, pilot, out, "raw-json", wait=0.8)
            await pilot.press("escape")

        # Follow a model job in flight until it ends (● marks what arrived
        # meanwhile); one that fails is left for another, up to three.
        for _ in range(3):
            row = await cursor_to(
                app, pilot, lambda r: r.status == Status.SUBMITTED and not is_agent(r)
            )
            if row is None:
                await pilot.pause(2.0)
                continue
            await pilot.press("f")
            status = await follow_to_end(app, pilot)
            if status == Status.CONSUMED:
                break
            await pilot.press("escape")
        else:
            await cursor_to(app, pilot, lambda r: r.status == Status.CONSUMED)
            await pilot.press("f")
        await shoot(app, pilot, out, "follow", wait=1.2)
        await pilot.press("escape")

        await pilot.press("dollar_sign")
        await shoot(app, pilot, out, "costs", wait=1.0)
        await pilot.press("escape")

        await pilot.press("S")
        await shoot(app, pilot, out, "charts", wait=1.5)
        await pilot.press("escape")

        await pilot.press("question_mark")
        await shoot(app, pilot, out, "help")
        await pilot.press("escape")

        # The command line open, a command typed (not yet entered).
        await pilot.press("colon")
        await type_keys(pilot, "model pro")
        await shoot(app, pilot, out, "command-line")
        await pilot.press("escape")

        # `:prune 1s`: the confirmation with its count; answered no.
        await pilot.press("colon")
        await type_keys(pilot, "prune 1s")
        await pilot.press("enter")
        await shoot(app, pilot, out, "prune", wait=0.8)
        await pilot.press("n")

        # Failed rows marked, r: the bulk retry's confirmation with its cost; answered no.
        await pilot.press("7")
        await settle(app, pilot, 0.5)
        app.table.move_cursor(row=0, animate=False)
        marks = min(3, len(app.table.rows_shown))
        for _ in range(marks):
            await pilot.press("space")
        await pilot.press("r")
        await shoot(app, pilot, out, "retry-cost", wait=0.8)
        await pilot.press("n")
        await settle(app, pilot, 0.2)
        await pilot.press("escape")  # clear the marks

        if not orphans_shot:  # none seen during the run: the tab as it is
            await pilot.press("3")
            await shoot(app, pilot, out, "orphans", wait=0.5)

        await pilot.press("1")
        await pilot.resize_terminal(*SMALL)
        await cursor_to(app, pilot, lambda r: r.status == Status.SUBMITTED)
        await shoot(app, pilot, out, "main-80x24", wait=0.5)
        done.append(True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=150.0, help="how long the demo runs first")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "screenshots")
    parser.add_argument("--no-animation", action="store_true", help="skip screenshots/demo.svg")
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.out))
    if not args.no_animation:
        sys.path.insert(0, str(Path(__file__).parent))
        import animate

        asyncio.run(animate.main(args.out / "demo.svg"))
