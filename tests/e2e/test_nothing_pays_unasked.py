"""Nothing is sent, or paid for, that the operator did not ask for (issue 32),
through the real CLI in fresh processes against the emulator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.core.models import Actor, OrphanPolicy
from reclaim_tui.emulator.demo import DEMO_MODELS, open_demo_engine
from tests.e2e.test_demo_trickle import Gate, _live_rows, _until
from tests.helpers.procs import Workspace, write_jobs


def test_submit_file_sends_only_that_files_jobs(
    make_workspace: Callable[..., Workspace], tmp_path: Path
) -> None:
    ws = make_workspace()
    other = write_jobs(tmp_path / "other.jsonl", [{"input": "held back", "key": "other-1"}])
    one = write_jobs(tmp_path / "one.jsonl", [{"input": "send me", "key": "one-1"}])
    first = ws.cli("submit", str(other), "--no-send")
    assert first.returncode == 0, first.stderr
    second = ws.cli("submit", str(one), "--json")
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert (report["counts"].get("inserted"), report["counts"].get("sent")) == (1, 1), report
    rows = ws.view().rows()
    assert rows["one-1"]["status"] == "submitted"
    # The --no-send file's job is left for a pass: not sent, no attempt spent.
    assert (rows["other-1"]["status"], rows["other-1"]["attempts"]) == ("reserving", 0)
    # Submitting that file itself sends it (a job of FILE, already reserved).
    again = ws.cli("submit", str(other), "--json")
    assert json.loads(again.stdout)["counts"].get("sent") == 1, again.stdout


async def test_the_demo_trickle_is_the_demos_and_waits_for_the_loop(tmp_path: Path) -> None:
    """The trickle's jobs were sent at once, under the operator's actor
    `console`: `P` did not stop them. They are reserved as `demo` and left to
    the loop's passes."""
    settings = Settings(
        db=str(tmp_path / "demo.db"),
        out=str(tmp_path / "articles"),
        model=DEMO_MODELS[0],
        orphan_policy=OrphanPolicy.HOLD,
        emulator_lookup=False,
        actor=Actor.CONSOLE,
    )
    gate = Gate()
    async with open_demo_engine(
        settings, actor=Actor.CONSOLE, jobs=2, seed=7, latency=(0.2, 0.5), sleep=gate.sleep
    ) as engine:
        ledger = engine.ledger
        gate.release(3)

        async def three_arrived() -> bool:
            return len(await _live_rows(ledger)) == 3

        assert await _until(three_arrived)
        statuses = await ledger.select("SELECT status, attempts FROM jobs")
        assert {tuple(r) for r in statuses} == {("reserving", 0)}, statuses
        actors = await ledger.select("SELECT DISTINCT actor FROM events")
        assert [r[0] for r in actors] == ["demo"]
