"""Every status has one documented outcome (issue 11), on the fake backend:

- past its deadline a job is cancelled, the row says why, its partial output is stored;
- `requires_action` holds the row for an operator, who answers it with a
  follow-up interaction (`previous_interaction_id`) or cancels it;
- a 404 for a created interaction is never a silent resubmission
  (`--on-gone resubmit` counts a possible duplicate; `hold` waits for an operator);
- failed / incomplete / budget_exceeded keep the raw interaction and usage.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, GonePolicy, JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import JobsFileError, OperatorError

CONFIG = EngineConfig(first_poll=2.0)


@pytest.fixture
async def world(tmp_path: Path, db_url: str):  # type: ignore[no-untyped-def]
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=None)  # runs until a test ends it
    yield clock, ledger, fake, DirectorySink(tmp_path / "out")
    await ledger.close()


async def test_past_its_deadline_a_job_is_cancelled_and_its_partial_output_kept(world) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, fake, sink = world
    engine = Engine(ledger, fake, sink, config=CONFIG)
    agent = JobSpec(input="research", model="", agent="deep-research-preview-04-2026")
    own = JobSpec(input="short leash", model="m", deadline=60.0)
    free = JobSpec(input="no deadline", model="m")
    await engine.submit([agent, own, free])
    clock.advance(61)
    await engine.tick()
    rows = {r.idem: r async for r in ledger.iter_rows()}
    cut = rows[idempotency_key(own)]
    assert cut.status == Status.CANCELLED and "deadline of 60s passed" in (cut.last_error or "")
    assert await ledger.result(cut.idem) is not None  # what it produced is stored
    assert rows[idempotency_key(free)].status == Status.SUBMITTED
    assert rows[idempotency_key(agent)].status == Status.SUBMITTED  # 4 h for agents
    clock.advance(4 * 3600)
    await engine.tick()
    assert (await ledger.get(idempotency_key(agent))).status == Status.CANCELLED  # type: ignore[union-attr]
    assert (await ledger.get(idempotency_key(free))).status == Status.SUBMITTED  # type: ignore[union-attr]


async def test_a_job_that_completes_as_it_is_cancelled_is_kept(world) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, fake, sink = world
    engine = Engine(ledger, fake, sink, config=CONFIG)
    spec = JobSpec(input="just in time", model="m", deadline=10.0)
    await engine.submit([spec])
    handle = fake.handle_for(idempotency_key(spec))
    real_cancel = fake.cancel

    async def finishing_cancel(h: str):  # type: ignore[no-untyped-def]
        fake.finish(h)  # it finished before the cancel reached it
        return await real_cancel(h)

    fake.cancel = finishing_cancel  # type: ignore[method-assign]
    clock.advance(11)
    await engine.tick()
    row = await ledger.get(idempotency_key(spec))
    assert row is not None and row.status == Status.CONSUMED and row.handle == handle


async def test_requires_action_waits_for_an_operator_who_answers(world) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, fake, sink = world
    engine = Engine(ledger, fake, sink, config=CONFIG)
    spec = JobSpec(input="plan a study", model="", agent="deep-research-preview-04-2026")
    idem = idempotency_key(spec)
    await engine.submit([spec])
    first = fake.handle_for(idem)
    fake.fail(first, status="requires_action", error="")
    clock.advance(3)
    await engine.tick()
    row = await ledger.get(idem)
    assert row is not None and row.status == Status.SUBMITTED and row.held
    assert (row.last_error or "").startswith("requires action")
    with pytest.raises(OperatorError, match="must not be empty"):
        await engine.operator.answer(idem, "  ", actor=Actor.CLI)
    row = await engine.operator.answer(idem, "Go ahead with the plan.", actor=Actor.CLI)
    assert row.handle != first and not row.held
    follow = fake.remotes[row.handle]  # type: ignore[index]
    assert follow.spec.config["previous_interaction_id"] == first
    assert follow.spec.agent == spec.agent and follow.spec.input == "Go ahead with the plan."
    fake.finish(row.handle)  # type: ignore[arg-type]
    clock.advance(3)
    await engine.tick()
    assert (await ledger.get(idem)).status == Status.CONSUMED  # type: ignore[union-attr]
    with pytest.raises(OperatorError, match="not waiting for an answer"):
        await engine.operator.answer(idem, "again", actor=Actor.CLI)


@pytest.mark.parametrize("policy", list(GonePolicy))
async def test_a_404_after_a_create_is_never_a_silent_resubmission(world, policy) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, fake, sink = world
    # retention=0: past the API's retention (inside it: test_not_found_grace.py)
    engine = Engine(ledger, fake, sink, config=replace(CONFIG, on_gone=policy, retention=0.0))
    spec = JobSpec(input="kept past retention", model="m")
    idem = idempotency_key(spec)
    await engine.submit([spec])
    fake.forget(fake.handle_for(idem))  # the API dropped it (retention, or a bug)
    clock.advance(3)
    await engine.tick()
    row = await ledger.get(idem)
    assert row is not None
    if policy == GonePolicy.RESUBMIT:
        assert row.duplicates == 1 and fake.creates_per_label[idem] == 2
        notes = [e.note for e in await ledger.events(idem)]
        assert any("possible duplicate spend" in n for n in notes)
    else:
        assert (row.status, row.held, row.inflight) == (Status.RESERVING, True, True)
        assert fake.creates_per_label[idem] == 1 and row.duplicates == 0


@pytest.mark.parametrize("status", ["failed", "incomplete", "budget_exceeded"])
async def test_paid_partial_results_are_kept(world, status: str) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, fake, sink = world
    engine = Engine(ledger, fake, sink, config=CONFIG)
    spec = JobSpec(input=f"ends {status}", model="m")
    await engine.submit([spec])
    fake.fail(fake.handle_for(idempotency_key(spec)), status=status, error="")
    clock.advance(3)
    await engine.tick()
    row = await ledger.get(idempotency_key(spec))
    assert row is not None and row.status == Status.FAILED
    stored = await ledger.result(row.idem)
    assert stored is not None and stored.raw["status"] == status


async def test_a_chain_sends_its_follow_up_once_the_previous_job_is_done(world) -> None:  # type: ignore[no-untyped-def]
    """Issue 11: `previous` (another job's key) sends the follow-up with
    previous_interaction_id once that job is done; a job whose previous one
    failed, or is unknown, fails with the reason."""
    clock, ledger, fake, sink = world
    engine = Engine(ledger, fake, sink, config=CONFIG)
    first = JobSpec(input="draft an outline", model="m", key="outline")
    second = JobSpec(input="now write it", model="m", key="article", previous="outline")
    orphan = JobSpec(input="continue nothing", model="m", key="lost", previous="nope")
    with pytest.raises(JobsFileError, match="'nope' is the key of no job"):
        await engine.submit([first, second, orphan])  # refused whole: nothing reserved
    assert [r async for r in ledger.iter_rows()] == []
    await engine.submit([first, second])
    # A row whose previous job is gone (reserved unchecked by an earlier
    # version, or its previous pruned) fails with the reason when sent.
    await ledger.insert_jobs([(idempotency_key(orphan), orphan.to_json(), orphan.target)], "t")
    await engine.send_reserved()
    rows = {r.idem: r async for r in ledger.iter_rows()}
    assert rows["article"].status == Status.RESERVING and rows["article"].attempts == 0
    assert "waiting for previous job outline" in (rows["article"].last_error or "")
    assert rows["lost"].status == Status.FAILED and "not in the ledger" in rows["lost"].last_error  # type: ignore[operator]
    outline_handle = fake.handle_for("outline")
    fake.finish(outline_handle)
    clock.advance(31)
    await engine.tick()  # the outline completes and is delivered
    clock.advance(31)
    await engine.tick()  # the article goes out as its follow-up
    follow = fake.remotes[fake.handle_for("article")]
    assert follow.spec.config["previous_interaction_id"] == outline_handle
    waits = [e.note for e in await ledger.events("article") if "waiting" in e.note]
    assert len(waits) == 1  # said once, not at every look


async def test_rows_past_the_apis_retention_are_warned_about(tmp_path: Path, db_url: str) -> None:
    """Issue 11: interactions live 55 days (paid) or 1 day (free tier); a
    submitted row older than that is warned about by `status`."""
    import asyncio
    import json as json_module
    import sys
    import time

    from reclaim_tui.core.ledger.retention import FREE_TIER_DAYS, past_retention

    clock = ManualClock(time.time() - 60 * 86400)  # submitted 60 days ago
    ledger = await open_ledger(db_url, clock=clock)
    try:
        fake = FakeBackend(clock=clock, latency=None)
        engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=CONFIG)
        await engine.submit([JobSpec(input="left behind", model="m")])
        assert (await past_retention(ledger, FREE_TIER_DAYS)).count == 0
        clock.advance(2 * 86400)
        assert (await past_retention(ledger, FREE_TIER_DAYS)).count == 1
    finally:
        await ledger.close()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "reclaim_tui",
        "status",
        "--db",
        db_url,
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err
    data = json_module.loads(out)
    at_risk = data["past_retention"]
    assert at_risk["count"] == 1 and at_risk["retention_days"] == 55
    assert data["asking"]["count"] == 0 and data["unknown_status"]["count"] == 0
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "reclaim_tui",
        "status",
        "--db",
        db_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert b"older than the API's retention (55 days)" in err


async def test_rows_asking_or_in_an_unknown_status_are_counted_for_status(world) -> None:  # type: ignore[no-untyped-def]
    """Issue 11: `requires_action` → a state an operator sees; `idle`/unknown
    → polled, visible in `status`. Both counted by `attention`."""
    from reclaim_tui.core.ledger.retention import PAID_TIER_DAYS, attention

    clock, ledger, fake, sink = world
    engine = Engine(ledger, fake, sink, config=CONFIG)
    jobs = [JobSpec(input=f"job {n}", model="m") for n in range(4)]
    await engine.submit(jobs)
    handles = [fake.handle_for(idempotency_key(j)) for j in jobs]
    fake.fail(handles[0], status="requires_action", error="")
    fake.fail(handles[1], status="idle", error="")
    fake.fail(handles[2], status="some_future_status", error="")
    clock.advance(3)
    await engine.tick()
    seen = await attention(ledger, PAID_TIER_DAYS)
    assert (seen.asking, seen.unknown_status, seen.past_retention.count) == (1, 2, 0)
    assert seen.any
    rows = {r.idem: r async for r in ledger.iter_rows()}
    assert all(r.status == Status.SUBMITTED for r in rows.values())  # none failed
