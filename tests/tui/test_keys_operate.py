"""Pilot tests of every operator key, asserting the ledger afterwards.

Each action must go through the engine with actor "console" (the engine writes
the event), and a refusal (OperatorError) must leave the ledger unchanged.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from textual.widgets import Input, TabbedContent, TextArea

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.tui.screens.adopt import AdoptScreen
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.export import ExportScreen
from reclaim_tui.tui.screens.submit import SubmitScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle, shown, until


async def actors(seeded: Seeded, role: str) -> list[str]:
    return [e.actor for e in await seeded.events(role)]


async def test_r_retries_the_failed_row(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["failed"])
        await press(pilot, "r")
    row = await seeded.get("failed")
    assert row.status == Status.RESERVING and row.attempts == 0 and row.last_error is None
    assert (await actors(seeded, "failed"))[-1] == "console"


async def test_r_on_a_consumed_row_is_refused_and_changes_nothing(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "r")
        assert any("consumed" in n.message for n in app._notifications)
    assert await seeded.snapshot() == before


async def test_space_marks_and_r_retries_every_marked_row(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for role in ("failed", "cancelled"):
            await select(pilot, seeded.keys[role])
            await press(pilot, "space")
        assert app.state.marks == {seeded.keys["failed"], seeded.keys["cancelled"]}
        await press(pilot, "r")
        assert app.state.marks == set()
    assert (await seeded.get("failed")).status == Status.RESERVING
    assert (await seeded.get("cancelled")).status == Status.RESERVING


async def test_A_marks_every_row_matching_tab_and_filter(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "2")  # reserving
        await press(pilot, "A")
        assert app.state.marks == {seeded.keys["orphan"], seeded.keys["reserving"]}
        await press(pilot, "escape")
        assert app.state.marks == set()


async def test_c_cancels_after_confirmation(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "c")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
    row = await seeded.get("submitted")
    assert row.status == Status.CANCELLED
    assert seeded.fake.remotes[row.handle or ""].status == "cancelled"
    assert "console" in await actors(seeded, "submitted")


async def test_c_declined_changes_nothing(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "c")
        await press(pilot, "n")
    assert await seeded.snapshot() == before


async def test_o_recovers_orphans_after_showing_how_many(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "o")
        assert isinstance(app.screen, ConfirmScreen)
        assert "1 orphan row" in app.screen.question
        await press(pilot, "y")
    row = await seeded.get("orphan")
    # The fake can search by label and the dropped create did land: adopted.
    assert row.status == Status.SUBMITTED and not row.inflight
    assert row.handle == seeded.fake.handle_for(seeded.keys["orphan"])
    assert (await actors(seeded, "orphan"))[-1] == "console"


async def test_o_without_lookup_resubmits_and_counts_a_possible_duplicate(
    seeded: Seeded,
) -> None:
    seeded.fake.supports_lookup = False
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "o", "y")
        await settle(pilot)
    row = await seeded.get("orphan")
    assert row.status == Status.RESERVING and not row.inflight and row.duplicates == 1


async def test_R_replays_done_rows_from_the_stored_result(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
    assert (await seeded.get("done")).status == Status.CONSUMED
    assert (seeded.out / f"{seeded.keys['done']}.md").exists()
    assert (await actors(seeded, "done"))[-1] == "console"


async def test_a_adopts_the_interaction_that_landed(seeded: Seeded) -> None:
    handle = seeded.fake.handle_for(seeded.keys["orphan"])
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["orphan"])
        await press(pilot, "a")
        assert isinstance(app.screen, AdoptScreen)
        app.screen.query_one(Input).value = handle
        await press(pilot, "enter")
    row = await seeded.get("orphan")
    assert row.status == Status.SUBMITTED and row.handle == handle
    events = await seeded.events("orphan")
    assert events[-1].actor == "console" and handle in events[-1].note


async def test_a_refuses_an_interaction_labelled_for_another_job(seeded: Seeded) -> None:
    other = seeded.fake.handle_for(seeded.keys["submitted"])
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["orphan"])
        await press(pilot, "a")
        app.screen.query_one(Input).value = other
        await press(pilot, "enter")
        assert any("labelled for job" in n.message for n in app._notifications)
    assert await seeded.snapshot() == before


async def test_s_submits_a_prompt_through_the_engine(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubmitScreen)
        app.screen.query_one(TextArea).text = "Write a haiku about durable ledgers"
        await press(pilot, "ctrl+s")
        assert not isinstance(app.screen, SubmitScreen)
    idem = idempotency_key(JobSpec("Write a haiku about durable ledgers", "gemini-flash-latest"))
    row = (await seeded.snapshot())[idem]
    assert row.status == Status.SUBMITTED and row.handle
    assert (await actors(seeded, idem))[0] == "console"


async def test_s_submits_a_jsonl_file_with_progress(seeded: Seeded, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps({"input": f"job {n}"}) + "\n" for n in range(7)))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        screen = app.screen
        screen.query_one(TabbedContent).active = "file-pane"
        screen.query_one("#path", Input).value = str(jobs)
        bar = screen.query_one("ProgressBar")
        await press(pilot, "ctrl+s")
        assert not isinstance(app.screen, SubmitScreen)
        assert bar.total == 7 and bar.progress == 7  # type: ignore[attr-defined]
    rows = await seeded.snapshot()
    new = [r for r in rows.values() if r.job.input.startswith("job ")]
    assert len(new) == 7 and {r.status for r in new} == {Status.RESERVING}


async def test_s_refuses_a_bad_file_and_reserves_nothing(seeded: Seeded, tmp_path: Path) -> None:
    jobs = tmp_path / "bad.jsonl"
    jobs.write_text('{"input": "fine"}\n{"nope": 1}\n')
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        app.screen.query_one(TabbedContent).active = "file-pane"
        app.screen.query_one("#path", Input).value = str(jobs)
        await press(pilot, "ctrl+s")
        error = app.screen.query_one("#submit-error")
        assert await until(pilot, lambda: "line 2" in str(error.render()))
        assert isinstance(app.screen, SubmitScreen)
    assert await seeded.snapshot() == before


async def test_ctrl_e_exports_the_filtered_rows(seeded: Seeded, tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "4")  # submitted
        await press(pilot, "ctrl+e")
        assert isinstance(app.screen, ExportScreen)
        app.screen.query_one("#export-path", Input).value = str(target)
        await press(pilot, "enter")
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert {d["idem"] for d in lines} == {seeded.keys["submitted"], seeded.keys["submitted2"]}


async def test_ctrl_e_exports_csv(seeded: Seeded, tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+e")
        app.screen.query_one("#csv").value = True  # type: ignore[attr-defined]
        await settle(pilot)
        app.screen.query_one("#export-path", Input).value = str(target)
        await press(pilot, "enter")
    with target.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and rows[0]["idem"]


async def test_P_resumes_the_loop_which_sends_the_reserved_row(seeded: Seeded) -> None:
    app = seeded.app(paused=True, interval=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert (await seeded.get("reserving")).status == Status.RESERVING
        await press(pilot, "P")
        assert not app.state.paused
        for _ in range(50):
            if (await seeded.get("reserving")).status == Status.SUBMITTED:
                break
            await pilot.pause(0.05)
        await press(pilot, "P")
        assert app.state.paused
    row = await seeded.get("reserving")
    assert row.status == Status.SUBMITTED
    assert "console" in await actors(seeded, "reserving")


async def test_paging_past_the_window_edge(seeded: Seeded) -> None:
    app = seeded.app()
    app.config.page_size = 3
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = shown(pilot)
        assert len(first) == 3 and app.table.has_after and not app.table.has_before
        await press(pilot, "down", "down", "down")
        second = shown(pilot)
        assert len(second) == 3 and not set(first) & set(second)
        assert app.table.cursor_row == 0
        await press(pilot, "up")
        assert shown(pilot) == first and app.table.cursor_row == 2
        await press(pilot, "G")
        last = shown(pilot)
        assert len(last) == 3 and not app.table.has_after
        await press(pilot, "g")
        assert shown(pilot) == first
