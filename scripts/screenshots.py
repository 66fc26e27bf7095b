"""Regenerate screenshots/*.svg, the console's pictures, in one of three walks:

    python scripts/screenshots.py demo [--seconds 150] [--out screenshots] [--no-animation]
    python scripts/screenshots.py operator [--seconds 40] [--out screenshots]
    python scripts/screenshots.py fleet [--out screenshots]

demo: the demo console (`./dev demo`: the embedded
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

operator: the screenshots of the daily operator's features:
sort by a column, a structured filter, discard's confirmation, the
glossary on the detail pane, the help (actions first), a paste the table
ignored, `:ledger` on another ledger, each at 160×48 and at 80×24, from the
demo console.

fleet: the fleet's screenshots, at 160×48 and at 80×24: a
ledger real processes work on, each as its own "host" (RECLAIM_OWNER_HOST,
the host of its owner string), as a fleet would on PostgreSQL:

    cron-01    a cron `tick` (it passed once and stopped)
    batch-02   a `run` service, up, passing every 5 s
    edge-01    the webhook `inbox`
    here       a service killed with SIGKILL (gone: no clean exit) and the
               console's own engine

all on an emulator (`reclaim-tui emulator`), then the console's `:fleet`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from textual import events
from textual.keys import _character_to_key
from textual.worker import WorkerFailed

from reclaim_tui.config import Settings
from reclaim_tui.core.models import Row, Status
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.demo import make_demo_app
from reclaim_tui.tui.launch import make_app

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


async def demo_main(seconds: float, out: Path) -> None:
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


# The daily operator's views.


async def operator_main(seconds: float, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    app = demo_app(fresh_run_dir("operator"))
    done: list[bool] = []
    with shutdown_race(done):
        await _operator_shots(app, out, seconds, done)


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


async def _operator_shots(app: ReclaimApp, out: Path, seconds: float, done: list[bool]) -> None:
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


# The fleet: real processes as hosts.


KEY = "fleet-shots"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "reclaim_tui", *args]


def _env(host: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RECLAIM_OWNER_HOST", None)
    if host:
        env["RECLAIM_OWNER_HOST"] = host
    return env


def _wait(predicate: Callable[[], bool], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the fleet's processes did not start")
        time.sleep(0.1)


def _jobs(path: Path, what: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"input": f"{what} {i}"}) + "\n" for i in range(n)))
    return path


def _passed(log: Path) -> bool:
    return log.exists() and '"event":"pass"' in log.read_text()


def _start(procs: list[subprocess.Popen[bytes]], args: list[str], host: str | None, log: Path):  # type: ignore[no-untyped-def]
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, env=_env(host), stdout=out, stderr=subprocess.STDOUT)
    procs.append(proc)
    return proc


def fleet_main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    run = fresh_run_dir("fleet")
    db = str(run / "ledger.db")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        emulator_log = run / "emulator.log"
        _start(procs, _cli("emulator", "--port", "0", "--latency", "3"), None, emulator_log)
        _wait(lambda: "emulator on http" in emulator_log.read_text())
        found = re.search(r"emulator on (http://\S+)", emulator_log.read_text())
        assert found is not None
        api = ["--base-url", found[1], "--api-key", KEY, "--db", db, "--out", str(run / "out")]
        subprocess.run(
            _cli("tick", *api, "--jobs", str(_jobs(run / "cron.jsonl", "nightly digest", 4))),
            env=_env("cron-01"),
            check=True,
            capture_output=True,
        )
        batch = run / "batch-02.log"
        service = _cli("run", *api, "--idle-sleep", "5")
        jobs = _jobs(run / "batch.jsonl", "catalogue summary", 12)
        _start(procs, [*service, "--jobs", str(jobs), "--log", str(batch)], "batch-02", batch)
        inbox = _cli(
            "inbox", "--db", db, "--listen", "127.0.0.1:0", "--secret", "whsec_" + "A" * 32
        )
        _start(procs, inbox, "edge-01", run / "edge-01.log")
        doomed_log = run / "doomed.log"
        doomed = _start(procs, [*service, "--log", str(doomed_log)], None, doomed_log)
        _wait(lambda: _passed(batch) and _passed(doomed_log))
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        settings = Settings(db=db, out=str(run / "out"), base_url=found[1], api_key=KEY)
        asyncio.run(_fleet_shots(settings, out))
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)


async def _fleet_shots(settings: Settings, out: Path) -> None:
    """The console on that ledger (its own engine registers too): `:fleet`."""
    app = make_app(settings, interval=2.0)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(4.0)  # the console's engine up, a pass or two
        for size, suffix in ((SIZE, ""), (SMALL, "-80x24")):
            await pilot.resize_terminal(*size)
            await pilot.press("colon")
            await type_keys(pilot, "fleet")
            await pilot.press("enter")
            await shoot(app, pilot, out, f"fleet{suffix}", wait=1.0)
            await pilot.press("escape")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    walks = parser.add_subparsers(dest="walk", required=True)
    default_out = Path(__file__).parent.parent / "screenshots"
    demo = walks.add_parser("demo", help="the demo console's views, then the animation")
    demo.add_argument("--seconds", type=float, default=150.0, help="how long the demo runs first")
    demo.add_argument("--out", type=Path, default=default_out)
    demo.add_argument("--no-animation", action="store_true", help="skip screenshots/demo.svg")
    operator = walks.add_parser("operator", help="the daily operator's views, also at 80x24")
    operator.add_argument(
        "--seconds", type=float, default=40.0, help="how long the demo runs first"
    )
    operator.add_argument("--out", type=Path, default=default_out)
    fleet = walks.add_parser("fleet", help=":fleet over real processes on several hosts")
    fleet.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()
    if args.walk == "demo":
        asyncio.run(demo_main(args.seconds, args.out))
        if not args.no_animation:
            sys.path.insert(0, str(Path(__file__).parent))
            import animate

            asyncio.run(animate.main(args.out / "demo.svg"))
    elif args.walk == "operator":
        asyncio.run(operator_main(args.seconds, args.out))
    else:
        fleet_main(args.out)


if __name__ == "__main__":
    main()
