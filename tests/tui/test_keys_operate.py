"""Pilot tests of every operator key, asserting the ledger afterwards.

Each action must go through the engine with actor "console" (the engine writes
the event), and a refusal (OperatorError) must leave the ledger unchanged.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from textual.widgets import Input, TabbedContent, TabPane, TextArea

from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, Status, StoredResult
from reclaim_tui.core.sinks import CallableSink
from reclaim_tui.errors import SinkError
from reclaim_tui.tui.screens.ask import AskScreen
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.export import ExportScreen
from reclaim_tui.tui.screens.submit import SubmitScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, select, settle, shown, until


async def actors(seeded: Seeded, role: str) -> list[str]:
    return [e.actor for e in await seeded.events(role)]


def status_of(seeded: Seeded, role: str, status: Status):  # type: ignore[no-untyped-def]
    """A predicate for `until`: the ledger has the row in `status`."""

    async def check() -> bool:
        rows = await seeded.snapshot()
        row = rows.get(seeded.keys.get(role, role))
        return row is not None and row.status == status

    return check


async def test_r_retries_the_failed_row(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["failed"])
        await press(pilot, "r")
        assert isinstance(app.screen, ConfirmScreen)  # it spends: it asks first
        await press(pilot, "y")
        assert await until(pilot, status_of(seeded, "failed", Status.RESERVING))
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
        assert await until(pilot, notified(pilot, "is consumed; retry applies to"))
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
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        assert await until(pilot, status_of(seeded, "cancelled", Status.RESERVING))
        assert await until(pilot, status_of(seeded, "failed", Status.RESERVING))
        assert await until(pilot, lambda: app.state.marks == set())
    assert (await seeded.get("failed")).status == Status.RESERVING
    assert (await seeded.get("cancelled")).status == Status.RESERVING


async def test_r_with_marks_asks_first_and_says_how_many(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for role in ("failed", "cancelled", "consumed"):
            await select(pilot, seeded.keys[role])
            await press(pilot, "space")
        await press(pilot, "r")
        assert isinstance(app.screen, ConfirmScreen)
        question = app.screen.question
        assert "Retry 2 of 3 marked rows?" in question, question
        assert "1 is consumed" in question, question
        await press(pilot, "n")
        assert await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        await settle(pilot)
    assert await seeded.snapshot() == before


async def test_r_on_marked_rows_none_can_retry_is_refused_before_asking(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for role in ("consumed", "submitted"):
            await select(pilot, seeded.keys[role])
            await press(pilot, "space")
        await press(pilot, "r")
        assert not isinstance(app.screen, ConfirmScreen)
        assert await until(pilot, notified(pilot, "none of the 2 marked rows can be retried"))


async def test_c_on_a_consumed_row_is_refused_before_asking(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "c")
        assert not isinstance(app.screen, ConfirmScreen)
        assert await until(pilot, notified(pilot, "is consumed; cancel applies to"))
    assert await seeded.snapshot() == before


async def test_A_marks_every_row_matching_tab_and_filter(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "2")  # reserving
        await press(pilot, "A")
        marked = {seeded.keys["orphan"], seeded.keys["reserving"]}
        assert await until(pilot, lambda: app.state.marks == marked)
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
        handle = (await seeded.get("submitted")).handle or ""
        assert await until(pilot, status_of(seeded, "submitted", Status.CANCELLED))
        # The remote cancel comes after the ledger's; its note is the last event.
        assert await until(pilot, lambda: seeded.fake.remotes[handle].status == "cancelled")
        assert await until(pilot, notified(pilot, "cancelled: 1 row"))
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
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "n")
        assert await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        await settle(pilot)
    assert await seeded.snapshot() == before


async def test_o_recovers_orphans_after_showing_how_many(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "o")
        assert isinstance(app.screen, ConfirmScreen)
        assert "1 orphan row" in app.screen.question
        # The fake's 15 tokens cost less than a hundredth of a cent: "<$0.0001".
        assert "If every one is sent again: Cost: about <$0.0001" in app.screen.question
        await press(pilot, "y")
        assert await until(pilot, status_of(seeded, "orphan", Status.SUBMITTED))
        assert await until(pilot, notified(pilot, "orphan recovery: adopted=1"))
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
        await press(pilot, "o")
        assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await press(pilot, "y")
        assert await until(pilot, notified(pilot, "orphan recovery: resubmitted=1"))
    row = await seeded.get("orphan")
    assert row.status == Status.RESERVING and not row.inflight and row.duplicates == 1


async def backoff_until(seeded: Seeded, idem: str, at: float) -> None:
    """Push a done row's sink back-off out to `at` (as a failing sink would)."""
    con = sqlite3.connect(seeded.db)
    with con:
        con.execute("UPDATE jobs SET next_at = ? WHERE idem = ?", (at, idem))
    con.close()


async def another_done_row(seeded: Seeded, prompt: str) -> str:
    """A second done-but-unconsumed row: completed, and its sink refused it."""

    async def refuse(idem: str, result: StoredResult) -> None:
        raise SinkError("disk full (test)")

    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    engine = Engine(ledger, seeded.fake, CallableSink(refuse, "refuse"), owner="cron|3|x")
    spec = JobSpec(prompt, "gemini-flash-latest")
    await engine.submit([spec])
    seeded.fake.finish(seeded.fake.handle_for(idempotency_key(spec)))
    seeded.clock.advance(5)  # past the first poll
    await engine.reclaim()
    await ledger.close()
    return idempotency_key(spec)


async def test_R_replays_done_rows_now_even_inside_their_sink_backoff(seeded: Seeded) -> None:
    # The sink back-off has an hour left: only a forced replay takes the row.
    await backoff_until(seeded, seeded.keys["done"], seeded.clock.now() + 3600)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        assert isinstance(app.screen, ConfirmScreen)
        question = app.screen.question
        assert "Replay 1 done row now" in question and "back-off go now too" in question
        await press(pilot, "y")
        assert await until(pilot, status_of(seeded, "done", Status.CONSUMED))
        assert await until(pilot, notified(pilot, "replay: consumed=1"))
    assert (seeded.out / f"{seeded.keys['done']}.md").exists()
    assert (await actors(seeded, "done"))[-1] == "console"


async def test_R_with_marks_replays_only_the_marked_rows(seeded: Seeded) -> None:
    other = await another_done_row(seeded, "Summarise the second incident")
    assert (await seeded.get(other)).status == Status.DONE
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "5")  # done (unconsumed)
        assert await until(pilot, lambda: set(shown(pilot)) == {other, seeded.keys["done"]})
        await select(pilot, other)
        await press(pilot, "space")
        await press(pilot, "R")
        assert isinstance(app.screen, ConfirmScreen)
        assert "Replay 1 marked row now" in app.screen.question
        await press(pilot, "y")
        assert await until(pilot, status_of(seeded, other, Status.CONSUMED))
        assert await until(pilot, lambda: app.state.marks == set())
    assert (await seeded.get("done")).status == Status.DONE  # not marked: left alone
    assert (await actors(seeded, other))[-1] == "console"


async def test_R_with_nothing_done_says_so(empty: Seeded) -> None:
    app = empty.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "R")
        assert not isinstance(app.screen, ConfirmScreen)
        assert await until(pilot, notified(pilot, "no done-but-unconsumed rows"))


async def test_a_adopts_the_interaction_that_landed(seeded: Seeded) -> None:
    handle = seeded.fake.handle_for(seeded.keys["orphan"])
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["orphan"])
        await press(pilot, "a")
        assert isinstance(app.screen, AskScreen)
        app.screen.query_one(Input).value = handle
        await press(pilot, "enter")
        assert await until(pilot, status_of(seeded, "orphan", Status.SUBMITTED))
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
        assert await until(pilot, notified(pilot, "labelled for job"))
    assert await seeded.snapshot() == before


async def test_s_submits_a_prompt_through_the_engine(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubmitScreen)
        app.screen.query_one(TextArea).text = "Write a haiku about durable ledgers"
        await press(pilot, "ctrl+s")
        assert await until(pilot, lambda: not isinstance(app.screen, SubmitScreen))
        idem = idempotency_key(
            JobSpec("Write a haiku about durable ledgers", "gemini-flash-latest")
        )
        assert await until(pilot, status_of(seeded, idem, Status.SUBMITTED))
    row = (await seeded.snapshot())[idem]
    assert row.status == Status.SUBMITTED and row.handle
    assert (await actors(seeded, idem))[0] == "console"


async def _open_the_file_pane(pilot: Any) -> None:
    """`s`, then the JSONL tab by keys, once the dialog has settled on its prompt.

    By keys, as an operator does: on the tabs, focus is in neither pane.
    Setting `active` while the prompt is focused hides the focused prompt, and
    Textual moves focus to a sibling in the same, hidden, pane (the model
    field), which pulls that pane back (1 run in 8 or so under load here).
    """
    app = pilot.app
    await press(pilot, "s")
    assert await until(pilot, lambda: getattr(app.focused, "id", None) == "prompt")
    await press(pilot, "shift+tab", "right")
    prompt_pane = app.screen.query_one("#prompt-pane", TabPane)
    assert await until(
        pilot,
        lambda: (
            app.screen.query_one(TabbedContent).active == "file-pane"
            and app.focused is not None
            and prompt_pane not in app.focused.ancestors
        ),
    ), (app.screen.query_one(TabbedContent).active, app.focused)


async def test_a_late_focus_message_from_the_prompt_does_not_pull_its_pane_back(
    seeded: Seeded,
) -> None:
    """CI, loaded: the mount's focus of the prompt reported itself (TabPane.Focused)
    after the operator had chosen the JSONL tab, and Textual brought the prompt's
    pane back: a dialog that will not stay on the tab chosen. A pane comes to the
    front for a focus only while that focus is still inside it."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _open_the_file_pane(pilot)
        prompt_pane = app.screen.query_one("#prompt-pane", TabPane)
        prompt_pane.post_message(TabPane.Focused(prompt_pane))  # the late one
        await settle(pilot)
        assert app.screen.query_one(TabbedContent).active == "file-pane"
        # A focus that is inside the pane still brings it to the front.
        app.screen.query_one("#prompt", TextArea).focus()
        assert await until(
            pilot, lambda: app.screen.query_one(TabbedContent).active == "prompt-pane"
        )


async def test_s_submits_a_jsonl_file_with_progress(seeded: Seeded, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text("".join(json.dumps({"input": f"job {n}"}) + "\n" for n in range(7)))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _open_the_file_pane(pilot)
        screen = app.screen
        screen.query_one("#path", Input).value = str(jobs)
        bar = screen.query_one("ProgressBar")
        await press(pilot, "ctrl+s")
        assert await until(pilot, lambda: not isinstance(app.screen, SubmitScreen))
        assert bar.total == 7 and bar.progress == 7  # type: ignore[attr-defined]
        assert await until(pilot, notified(pilot, "submitted: 7 reserved"))
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
        await _open_the_file_pane(pilot)
        app.screen.query_one("#path", Input).value = str(jobs)
        await press(pilot, "ctrl+s")
        error = app.screen.query_one("#submit-error")
        assert await until(pilot, lambda: "line 2" in str(error.render()))
        assert isinstance(app.screen, SubmitScreen)
    assert await seeded.snapshot() == before


async def _export_tab(seeded: Seeded, tab: str, target: Path, said: str) -> list[Any]:
    """ctrl+e on tab `tab` into `target` (JSON Lines); its lines once `said` is notified."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, tab)
        await press(pilot, "ctrl+e")
        assert isinstance(app.screen, ExportScreen)
        app.screen.query_one("#export-path", Input).value = str(target)
        await press(pilot, "enter")
        assert await until(pilot, notified(pilot, said))
    return [json.loads(line) for line in target.read_text().splitlines()]


async def test_ctrl_e_exports_the_filtered_rows(seeded: Seeded, tmp_path: Path) -> None:
    lines = await _export_tab(seeded, "4", tmp_path / "out.jsonl", "exported 2 rows")  # submitted
    assert {d["idem"] for d in lines} == {seeded.keys["submitted"], seeded.keys["submitted2"]}


async def test_ctrl_e_writes_iso_times_the_spec_as_an_object_and_the_result(
    seeded: Seeded, tmp_path: Path
) -> None:
    """Issue 15, defect 8: timestamps were epoch floats, the spec a JSON string
    inside JSON, and neither the result nor its usage was exported."""
    target = tmp_path / "consumed.jsonl"
    (line,) = await _export_tab(seeded, "6", target, "exported 1 row")  # consumed
    assert line["idem"] == seeded.keys["consumed"]
    for name in ("created_at", "submitted_at", "done_at", "consumed_at", "updated_at"):
        assert isinstance(line[name], str) and line[name].endswith("Z"), (name, line[name])
        datetime.fromisoformat(line[name])
    assert line["spec"]["input"] == "Summarise the Q3 billing migration"
    assert "Summarise the Q3 billing migration" in line["output_text"]
    assert line["usage"]["total_input_tokens"] == 7


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
        assert await until(pilot, notified(pilot, "exported 8 rows"))
    with target.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and rows[0]["idem"]


async def test_P_resumes_the_loop_which_sends_the_reserved_row(seeded: Seeded) -> None:
    app = seeded.app(paused=True, interval=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert (await seeded.get("reserving")).status == Status.RESERVING
        await press(pilot, "P")
        assert not app.pace.paused
        assert await until(pilot, status_of(seeded, "reserving", Status.SUBMITTED))
        await press(pilot, "P")
        assert app.pace.paused
    row = await seeded.get("reserving")
    assert row.status == Status.SUBMITTED
    assert "console-loop" in await actors(seeded, "reserving")  # the loop, not the operator


async def test_paging_past_the_window_edge(seeded: Seeded) -> None:
    app = seeded.app()
    app.config.page_size = 3
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = shown(pilot)
        assert len(first) == 3 and app.table.has_after and not app.table.has_before
        await press(pilot, "down", "down", "down")
        assert await until(pilot, lambda: shown(pilot) != first)
        second = shown(pilot)
        assert len(second) == 3 and not set(first) & set(second)
        assert app.table.cursor_row == 0
        await press(pilot, "up")
        assert await until(pilot, lambda: shown(pilot) == first)
        assert app.table.cursor_row == 2
        await press(pilot, "G")
        assert await until(pilot, lambda: not app.table.has_after)
        last = shown(pilot)
        assert len(last) == 3 and not app.table.has_after
        await press(pilot, "g")
        assert await until(pilot, lambda: shown(pilot) == first)


async def test_s_jsonl_tab_then_tab_reaches_the_path_field(seeded: Seeded, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text(json.dumps({"input": "one job"}) + "\n")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        await press(pilot, "shift+tab", "right")  # to the tabs, then the JSONL one
        assert app.screen.query_one(TabbedContent).active == "file-pane"
        await press(pilot, "tab")
        assert app.focused is app.screen.query_one("#path", Input)
        await pilot.press(*str(jobs))
        await press(pilot, "ctrl+s")
        assert await until(pilot, notified(pilot, "submitted: 1 reserved"))


async def test_s_jsonl_tab_without_a_path_asks_for_one(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _open_the_file_pane(pilot)
        await settle(pilot)
        assert app.screen.query_one(TabbedContent).active == "file-pane"
        bar = app.screen.query_one("ProgressBar")
        assert not bar.display  # nothing is happening: no bar moves
        await press(pilot, "ctrl+s")

        def error() -> str:
            return str(app.screen.query_one("#submit-error").render())

        # On a loaded machine the refusal may be drawn a frame later.
        assert await until(pilot, lambda: "path of a JSONL file" in error()), error()
        assert not bar.display
