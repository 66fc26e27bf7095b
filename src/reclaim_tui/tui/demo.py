"""`reclaim-tui demo`: the console on the embedded emulator, with seeded jobs
and a trickle of new ones for as long as it runs.

The emulator, the engine, the seeding and the trickle all run in the
console's engine worker process (demo/world.py); this side only builds
the app.
"""

from __future__ import annotations

import functools
import shlex
import tempfile
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.ledger.urls import shown_db
from reclaim_tui.core.models import Actor, OrphanPolicy
from reclaim_tui.demo import DEMO_MODELS, OPENER
from reclaim_tui.runner.process import ProcessHost
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.context import ConsoleConfig

__all__ = ["left_behind", "make_demo_app"]


def make_demo_app(
    db_path: str | None = None,
    jobs: int = 36,
    seed: int = 7,
    *,
    interval: float = 2.0,
    latency: tuple[float, float] = (3.0, 40.0),
    clock: Clock | None = None,
    trickle: tuple[float, float] | None = (3.0, 8.0),
) -> ReclaimApp:
    """The demo console. `trickle`: a new job every (low, high) seconds while
    it runs (None: the seeded jobs only)."""
    workdir = Path(tempfile.mkdtemp(prefix="reclaim-demo-"))
    settings = Settings(
        db=db_path or str(workdir / "demo-ledger.db"),
        out=str(workdir / "articles"),
        model=DEMO_MODELS[0],
        orphan_policy=OrphanPolicy.HOLD,
        emulator_lookup=False,
        actor=Actor.CONSOLE,
    )
    world = {
        "jobs": jobs,
        "seed": seed,
        "latency": list(latency),
        "trickle": None if trickle is None else list(trickle),
    }
    config = ConsoleConfig(
        settings=settings,
        host=ProcessHost(settings, opener=OPENER, args=world),
        interval=interval,
        clock=clock or SystemClock(),
        models=list(DEMO_MODELS),
        subtitle=f"demo · embedded emulator · {shown_db(settings.db)}",
        # `:ledger`: another ledger's engine gets an embedded emulator of its
        # own, with nothing seeded into that ledger and no trickle.
        host_factory=functools.partial(_other_host, world={**world, "jobs": 0, "trickle": None}),
    )
    return ReclaimApp(config)


def _other_host(settings: Settings, world: dict[str, object]) -> ProcessHost:
    return ProcessHost(settings, opener=OPENER, args=world)


def left_behind(settings: Settings) -> str:
    """Where a finished demo left its ledger and articles, and how to look again.

    They are kept, not removed: an operator may want to read the ledger (its
    rows, their timelines) after the demo. Read-only, because the demo's
    emulator ended with it and no other API knows its interactions.
    """
    workdir = Path(settings.out).parent
    # With --db the ledger is the operator's own file: only the temp folder goes.
    own = "them" if Path(settings.db).parent == workdir else "the articles"
    return "\n".join(
        [
            "The demo's files are kept:",
            f"  ledger    {shown_db(settings.db)}",
            f"  articles  {settings.out}",
            "Look again: reclaim-tui console --readonly --db " + shlex.quote(shown_db(settings.db)),
            f"Remove {own}: rm -r {shlex.quote(str(workdir))}",
        ]
    )
