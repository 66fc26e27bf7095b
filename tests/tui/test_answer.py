"""Issue 11: a row whose interaction requires action is shown as such
(detail: what it asks; loop bar: counted) and answered with `w`, through the
engine, as a follow-up interaction with previous_interaction_id."""

from __future__ import annotations

from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import OrphanPolicy
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.tui.screens.ask import AskScreen
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.loop_bar import LoopBar

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, select, settle, until


async def _hold_for_an_answer(seeded: Seeded, role: str) -> str:
    """The role's interaction now requires action; one pass holds its row."""
    handle = seeded.fake.handle_for(seeded.keys[role])
    seeded.fake.fail(handle, status="requires_action", error="")
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:
        config = EngineConfig(orphan_policy=OrphanPolicy.HOLD)
        engine = Engine(ledger, seeded.fake, DirectorySink(seeded.out), config=config)
        seeded.clock.advance(3600)
        await engine.reclaim()
    finally:
        await ledger.close()
    return handle


def _text(widget: object) -> str:
    return str(widget.render())  # type: ignore[attr-defined]


async def test_w_answers_a_row_whose_interaction_requires_action(seeded: Seeded) -> None:
    first = await _hold_for_an_answer(seeded, "submitted")
    row = await seeded.get("submitted")
    assert row.held
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.main.query_one(LoopBar)
        assert await until(pilot, lambda: "1 asking" in _text(bar))
        await select(pilot, seeded.keys["submitted2"])
        await press(pilot, "w")
        assert not isinstance(app.screen, AskScreen)
        assert await until(pilot, notified(pilot, "not waiting for an answer"))
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "enter")
        body = app.main.query_one(DetailPane).query_one("#detail-body")
        assert await until(pilot, lambda: "requires action" in _text(body))
        await press(pilot, "w")
        assert isinstance(app.screen, AskScreen)
        await pilot.press(*"Go ahead")
        await press(pilot, "enter")

        async def answered() -> bool:
            return (await seeded.get("submitted")).handle != first

        assert await until(pilot, answered)
    row = await seeded.get("submitted")
    assert not row.held and row.handle != first
    follow = seeded.fake.remotes[row.handle]  # type: ignore[index]
    assert follow.spec.config["previous_interaction_id"] == first
    assert follow.spec.input == "Go ahead"
    events = await seeded.events("submitted")
    assert events[-1].actor == "console" and "answered" in events[-1].note


def test_the_detail_shows_an_agent_job_its_labels_deadline_and_chain() -> None:
    """Issue 11: a chain (`previous`) is shown in the console."""
    import dataclasses

    from reclaim_tui.core.ledger.console.views import Detail
    from reclaim_tui.core.models import JobSpec, Status
    from reclaim_tui.tui.widgets.detail_pane import render_detail

    from .test_actors import _cancelled_row

    job = JobSpec(
        input="write it up",
        model="",
        agent="deep-research-preview-04-2026",
        labels={"team": "docs"},
        deadline=7200.0,
        previous="outline",
    )
    row = dataclasses.replace(_cancelled_row(), spec=job.to_json())
    before = dataclasses.replace(
        _cancelled_row(), idem="outline", status=Status.DONE, handle="int-1"
    )
    text = render_detail(Detail(row, None, [], None, before), 3.0).plain
    assert "agent deep-research-preview-04-2026" in text
    assert "labels team=docs" in text and "deadline 2h00m after submit" in text
    assert "follows outline (done, interaction int-1)" in text
    alone = render_detail(Detail(row, None, [], None, None), 3.0).plain
    assert "follows outline (not in the ledger)" in alone


async def _plan_ready(seeded: Seeded, role: str, plan: str) -> str:
    """The role's row as a collaborative-planning job whose turn completed with `plan`
    (what core/engine/polling.py's plan-ready transition records)."""
    import json
    import sqlite3

    from reclaim_tui.core.row_notes import PLAN_READY

    handle = seeded.fake.handle_for(seeded.keys[role])
    with sqlite3.connect(seeded.db) as conn:
        (spec,) = conn.execute(
            "SELECT spec FROM jobs WHERE idem = ?", (seeded.keys[role],)
        ).fetchone()
        job = json.loads(spec)
        job["config"] = {"agent_config": {"type": "deep-research", "collaborative_planning": True}}
        conn.execute(
            "UPDATE jobs SET spec = ?, held = 1, last_error = ? WHERE idem = ?",
            (json.dumps(job), PLAN_READY + plan, seeded.keys[role]),
        )
    return handle


async def test_w_on_a_plan_shows_it_whole_and_ctrl_r_asks_for_a_new_one(seeded: Seeded) -> None:
    """Issue 24/25: the console could approve a plan but not refine it (the CLI's
    `answer --refine` only), and the dialog cut a long plan with "…"."""
    from reclaim_tui.tui.screens.ask import PlanScreen

    steps = "\n".join(f"{n}. Read source {n} on the topic." for n in range(1, 41))
    first = await _plan_ready(seeded, "submitted", steps + "\nLAST STEP: write the report.")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "w")
        assert isinstance(app.screen, PlanScreen)
        shown = "".join(_text(s) for s in app.screen.query("#ask-explained Static"))
        assert "LAST STEP: write the report." in shown and "40. Read source 40" in shown
        await press(pilot, "ctrl+r")  # nothing typed: stays open, nothing sent
        assert isinstance(app.screen, PlanScreen)
        await pilot.press(*"Only peer-reviewed sources")
        await press(pilot, "ctrl+r")

        async def answered() -> bool:
            return (await seeded.get("submitted")).handle != first

        assert await until(pilot, answered)
    row = await seeded.get("submitted")
    follow = seeded.fake.remotes[row.handle]  # type: ignore[index]
    assert follow.spec.config["previous_interaction_id"] == first
    assert follow.spec.config["agent_config"]["collaborative_planning"] is True  # plan again
    assert follow.spec.input == "Only peer-reviewed sources"


async def test_enter_on_a_plan_approves_it(seeded: Seeded) -> None:
    first = await _plan_ready(seeded, "submitted", "1. Search. 2. Write.")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "w")
        await pilot.press(*"Go")
        await press(pilot, "enter")

        async def answered() -> bool:
            return (await seeded.get("submitted")).handle != first

        assert await until(pilot, answered)
    row = await seeded.get("submitted")
    follow = seeded.fake.remotes[row.handle]  # type: ignore[index]
    assert follow.spec.config["agent_config"]["collaborative_planning"] is False  # approved


async def test_w_reads_a_long_plan_whole_from_its_stored_interaction(seeded: Seeded) -> None:
    """Issue 25, 8: the dialog showed only what the row's note keeps of a plan
    (its first 2,000 characters, cut with "…"); the plan is whole in the
    interaction stored with the row, and the dialog reads it from there."""
    import json
    import sqlite3

    from reclaim_tui.core.outputs import action_summary
    from reclaim_tui.tui.screens.ask import PlanScreen

    plan = "\n".join(f"{n}. Read and compare source {n} on the topic." for n in range(1, 200))
    plan += "\nTHE LAST STEP: write the report."
    raw = {"id": "int-plan", "status": "completed", "output_text": plan}
    note = action_summary(raw, limit=2000)  # what the plan-ready transition records
    assert "THE LAST STEP" not in note
    await _plan_ready(seeded, "submitted", note)
    idem = seeded.keys["submitted"]
    with sqlite3.connect(seeded.db) as conn:
        (job,) = conn.execute("SELECT id FROM jobs WHERE idem = ?", (idem,)).fetchone()
        conn.execute(
            "INSERT OR REPLACE INTO results(job, idem, interaction_id, output_text, usage,"
            " raw_json, stored_at) VALUES (?, ?, ?, ?, NULL, ?, 0)",
            (job, idem, "int-plan", plan, json.dumps(raw)),
        )
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, idem)
        await press(pilot, "w")
        assert isinstance(app.screen, PlanScreen)

        def shown() -> str:
            return "".join(_text(s) for s in app.screen.query("#ask-explained Static"))

        assert await until(pilot, lambda: "THE LAST STEP: write the report." in shown())
        assert "199. Read and compare source 199" in shown()
