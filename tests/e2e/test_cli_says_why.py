"""The CLI says what it knows and what it does not (issue 32, item 14):
`recover KEY` on a row that is no orphan says why (exit 5), `costs` says
unknown (never $0.0000) for rows with no result, `show` keeps its timeline
aligned whatever the actor and prints the row's cost. Real processes."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, JobSpec
from reclaim_tui.core.sinks import DirectorySink
from tests.helpers import run_cli

MODEL = "gemini-flash-latest"


def _ledger(db: Path) -> tuple[str, str]:
    """A consumed row (sent by `tick`, its passes by `console-loop`) and a
    reserving one."""
    done = JobSpec(input="a finished job", model=MODEL)
    waiting = JobSpec(input="never sent", model="gemini-pro-latest")

    async def build() -> None:
        clock = ManualClock(time.time())
        fake = FakeBackend(clock=clock, latency=None)
        ledger = await open_ledger(db, clock=clock)
        try:
            engine = Engine(ledger, fake, DirectorySink(db.parent / "out"))
            loop = engine.acting_as(Actor.CONSOLE_LOOP)
            await engine.submit([done])  # `tick`, then the loop's passes
            fake.finish(fake.handle_for(idempotency_key(done)))
            clock.advance(60)
            await loop.tick()
            await engine.submit([waiting], send=False)
        finally:
            await ledger.close()

    asyncio.run(build())
    return idempotency_key(done), idempotency_key(waiting)


def test_recover_of_a_row_that_is_no_orphan_says_why(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    done, waiting = _ledger(db)
    for key, what in ((done, "is consumed, not an orphan"), (waiting, "waiting to be sent")):
        out = run_cli(["recover", "--db", str(db), "--api-key", "k", key])
        assert out.returncode == 5, (out.stdout, out.stderr)
        assert what in out.stderr, out.stderr
        assert "idle" not in out.stdout


def test_costs_says_unknown_for_rows_without_a_result(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    _ledger(db)
    text = run_cli(["costs", "--db", str(db), "--by", "status"])
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.startswith("reserving"))
    assert line.split()[-1] == "unknown" and "$0.0000" not in line, line
    assert "1 row without a result yet" in text.stdout
    data = json.loads(run_cli(["costs", "--db", str(db), "--json"]).stdout)
    groups = {g["key"]: g for g in data["groups"]}
    assert groups["reserving"]["usd"] is None
    assert groups["consumed"]["usd"] > 0


def test_show_keeps_its_timeline_aligned_and_prints_the_cost(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    done, waiting = _ledger(db)
    out = run_cli(["show", "--db", str(db), done])
    assert out.returncode == 0, out.stderr
    timeline = out.stdout.split("timeline:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert any("console-loop" in line for line in timeline), timeline
    assert {"tick", "console-loop"} <= {line.split()[2] for line in timeline}, timeline
    # The status column starts at one place on every line, whoever the actor.
    starts = {len(re.match(r"^\s+\S+ \S+\s+\S+\s+", line).group(0)) for line in timeline}  # type: ignore[union-attr]
    assert len(starts) == 1, timeline
    cost = re.search(r"^\s+cost: (.*)$", out.stdout, re.M)
    assert cost and re.match(r"<?\$[0-9.]+ \(prices as of", cost.group(1)), out.stdout
    assert json.loads(run_cli(["show", "--db", str(db), "--json", done]).stdout)["cost_usd"] > 0
    unsent = run_cli(["show", "--db", str(db), waiting])
    assert re.search(r"^\s+cost: unknown", unsent.stdout, re.M), unsent.stdout
