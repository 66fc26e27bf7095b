"""The state machine's edges as pure functions, and the orphan rule spelled once.

`core.transitions` reads no clock, ledger or network: each edge is checked
by calling it. The orphan rule exists in SQL (the ledger's claims and
counts) and in Python (`Row.is_orphan`, the console's marker); a property
test checks that both spellings agree on every kind of row.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine import polling, transitions
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.engine.transitions import EngineConfig, Transition
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.schema import ORPHAN_SQL
from reclaim_tui.core.models import (
    Actor,
    JobSpec,
    OrphanPolicy,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
)
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import (
    InteractionGoneError,
    MaybeCreatedError,
    NotCreatedError,
    OperatorError,
    TransientReadError,
)

NOW = 1_800_000_000.0
CONFIG = EngineConfig(max_attempts=3, first_poll=2.0)


def _row(status: Status = Status.RESERVING, **kw: object) -> Row:
    values: dict[str, object] = dict(
        idem="k" * 32,
        spec=JobSpec(input="hi", model="m").to_json(),
        model="m",
        status=status,
        handle=None,
        attempts=1,
        polls=0,
        inflight=True,
        held=False,
        duplicates=0,
        error_streak=0,
        prev_owner=None,
        lease_owner="me",
        lease_until=NOW + 60,
        next_at=NOW,
        last_error=None,
        created_at=NOW,
        state_since=NOW,
        submitted_at=None,
        done_at=None,
        consumed_at=None,
        updated_at=NOW,
    )
    values.update(kw)
    return Row(**values)  # type: ignore[arg-type]


def _remote(state: RemoteState, api_status: str = "completed") -> RemoteInteraction:
    return RemoteInteraction("int-1", state, api_status, output_text="done")


# -- reserving ------------------------------------------------------------------
def test_created_moves_to_submitted_with_the_handle() -> None:
    t = transitions.after_create(_row(), _remote(RemoteState.PENDING, "in_progress"), CONFIG, NOW)
    assert (t.expect, t.to, t.tally) == (Status.RESERVING, Status.SUBMITTED, "sent")
    assert t.changes["handle"] == "int-1" and t.changes["inflight"] == 0
    assert t.changes["next_at"] == NOW + CONFIG.first_poll and t.error is None


def test_maybe_created_stays_in_flight_as_a_possible_orphan() -> None:
    t = transitions.after_create(_row(), MaybeCreatedError("timeout"), CONFIG, NOW)
    assert t.to == Status.RESERVING and "inflight" not in t.changes
    assert t.tally == "maybe_created" and t.error and "timeout" in t.error


def test_not_created_retries_then_fails_when_attempts_run_out() -> None:
    again = transitions.after_create(
        _row(attempts=1), NotCreatedError("429", 429, retryable=True), CONFIG, NOW
    )
    assert again.to == Status.RESERVING and again.changes["inflight"] == 0
    assert again.changes["next_at"] == NOW + CONFIG.backoff(1)
    spent = transitions.after_create(
        _row(attempts=3), NotCreatedError("429", 429, retryable=True), CONFIG, NOW
    )
    assert spent.to == Status.FAILED and "3 attempts" in spent.note
    refused = transitions.after_create(
        _row(attempts=1), NotCreatedError("bad", 400, retryable=False), CONFIG, NOW
    )
    assert refused.to == Status.FAILED and "not retryable" in refused.note


# -- submitted ------------------------------------------------------------------
def test_completed_stores_the_result_and_keeps_the_lease() -> None:
    row = _row(Status.SUBMITTED, handle="int-1", inflight=False, submitted_at=NOW - 10)
    t = polling.after_poll(row, _remote(RemoteState.COMPLETED), CONFIG, NOW)
    assert t.to == Status.DONE and t.result is not None and t.release is False


def test_still_running_writes_no_event_and_polls_on_the_grid() -> None:
    row = _row(Status.SUBMITTED, handle="int-1", inflight=False, submitted_at=NOW - 1, polls=0)
    t = polling.after_poll(row, _remote(RemoteState.PENDING, "in_progress"), CONFIG, NOW)
    assert t.to == Status.SUBMITTED and t.note == ""
    assert t.changes["next_at"] == CONFIG.next_poll(NOW - 1, 1, NOW)


def test_gone_resubmits_until_attempts_run_out_and_read_errors_back_off() -> None:
    # Past the API's retention (inside it a 404 is polled again: test_not_found_grace.py).
    old = NOW - CONFIG.retention - 1
    row = _row(Status.SUBMITTED, handle="int-1", inflight=False, attempts=1, submitted_at=old)
    gone = polling.after_poll(row, InteractionGoneError("404", 404), CONFIG, NOW)
    assert gone.to == Status.RESERVING and gone.changes["handle"] is None
    spent = polling.after_poll(
        replace(row, attempts=3), InteractionGoneError("404", 404), CONFIG, NOW
    )
    assert spent.to == Status.FAILED
    flaky = polling.after_poll(row, TransientReadError("503", 503), CONFIG, NOW)
    assert flaky.to == Status.SUBMITTED and flaky.changes["error_streak"] == 1


# -- done -----------------------------------------------------------------------
def test_sink_outcomes() -> None:
    assert transitions.delivered("k", NOW).to == Status.CONSUMED
    failed = transitions.sink_failed("k", 2, OSError("disk full"), CONFIG, NOW)
    assert failed.to == Status.DONE and failed.changes["error_streak"] == 3
    assert failed.changes["next_at"] == NOW + CONFIG.backoff(3)


# -- orphans --------------------------------------------------------------------
def test_orphan_settlement_by_policy_and_evidence() -> None:
    orphan = _row(attempts=1, inflight=True, sent_at=NOW - 5)
    adopted = transitions.settle_orphan(
        orphan, _remote(RemoteState.PENDING), CONFIG, NOW, force=False, looked_up=True
    )
    assert adopted.to == Status.SUBMITTED and adopted.changes["handle"] == "int-1"
    unknown = transitions.settle_orphan(orphan, None, CONFIG, NOW, force=False, looked_up=False)
    assert unknown.changes["duplicates"] == 1 and "possible duplicate" in unknown.note
    # A lookup that finds nothing is no proof while the create may still land:
    # wait out the window, look again, and even then count the resend.
    early = transitions.settle_orphan(orphan, None, CONFIG, NOW, force=False, looked_up=True)
    assert early.to == Status.RESERVING and early.changes == {
        "next_at": NOW - 5 + CONFIG.lookup_window
    }
    late = transitions.settle_orphan(
        orphan, None, CONFIG, NOW + CONFIG.lookup_window, force=False, looked_up=True
    )
    assert late.changes["duplicates"] == 1 and "not found by label" in late.note
    hold = replace(CONFIG, orphan_policy=OrphanPolicy.HOLD)
    held = transitions.settle_orphan(orphan, None, hold, NOW, force=False, looked_up=False)
    assert held.changes == {"held": 1, "last_error": "orphan: outcome of create unknown"}


def test_transitions_are_frozen_values() -> None:
    t = Transition("k", Status.RESERVING, Status.FAILED, "x", {"a": 1})
    try:
        t.note = "y"  # type: ignore[misc]
    except AttributeError:
        return
    raise AssertionError("a Transition must not be mutable")


# -- the orphan rule: SQL and Python agree ---------------------------------------
_owner = st.sampled_from([None, "me", "gone-host|1|1"])


@settings(max_examples=60, deadline=None)
@given(
    status=st.sampled_from(list(Status)),
    inflight=st.booleans(),
    held=st.booleans(),
    owner=_owner,
    lease_offset=st.sampled_from([-10.0, 0.0, 10.0]),
    dead=st.sampled_from([(), ("gone-host|1|1",)]),
)
def test_orphan_rule_in_sql_matches_row_is_orphan(
    status: Status,
    inflight: bool,
    held: bool,
    owner: str | None,
    lease_offset: float,
    dead: tuple[str, ...],
) -> None:
    # SQLite in memory, no ledger: cheap enough for hypothesis. Every row kind
    # on both engines, through a ledger: the next test.
    import sqlite3

    from reclaim_tui.core.ledger.sqlite.schema import MIGRATIONS

    db = sqlite3.connect(":memory:")
    for migration in MIGRATIONS:
        db.executescript(migration)
    db.execute(
        Sql(
            lambda d: (
                "INSERT INTO jobs(idem, spec, model, status, inflight, held, lease_owner,"
                " lease_until,"
                f" created_at, state_since, updated_at) VALUES ('k', '{{}}', 'm', {d.p}, {d.p},"
                f" {d.p}, {d.p}, {d.p}, 0, 0, 0)"
            )
        ),
        (status.value, int(inflight), int(held), owner, NOW + lease_offset),
    )
    in_sql = db.execute(
        "SELECT COUNT(*) FROM jobs WHERE " + ORPHAN_SQL, (NOW, json.dumps(list(dead)))
    ).fetchone()[0]
    row = _row(
        status, inflight=inflight, held=held, lease_owner=owner, lease_until=NOW + lease_offset
    )
    assert bool(in_sql) == row.is_orphan(NOW, dead)


async def test_orphan_rule_in_sql_matches_row_is_orphan_on_every_engine(db_url: str) -> None:
    """The same agreement for every row kind the property test draws from,
    all at once in one ledger: the rule as the engine's server reads it."""
    import itertools

    ledger = await open_ledger(db_url, clock=ManualClock(NOW))
    try:
        owners = [None, "me", "gone-host|1|1"]
        bools = (False, True)
        kinds = list(itertools.product(list(Status), bools, bools, owners, [-10.0, 0.0, 10.0]))
        async with ledger.write() as db:
            await db.executemany(
                Sql(
                    lambda d: (
                        "INSERT INTO jobs(idem, spec, model, status, inflight, held, lease_owner,"
                        " lease_until, created_at, state_since, updated_at)"
                        f" VALUES ({d.p}, '{{}}', 'm', {d.p}, {d.p}, {d.p}, {d.p}, {d.p}, 0, 0, 0)"
                    )
                ),
                [
                    (f"k{n}", status.value, int(inflight), int(held), owner, NOW + offset)
                    for n, (status, inflight, held, owner, offset) in enumerate(kinds)
                ],
            )
        for dead in ((), ("gone-host|1|1",)):
            found = await ledger.select(
                "SELECT idem FROM jobs WHERE " + ORPHAN_SQL, (NOW, json.dumps(list(dead)))
            )
            in_sql = {idem for (idem,) in found}
            expected = {
                f"k{n}"
                for n, (status, inflight, held, owner, offset) in enumerate(kinds)
                if _row(
                    status,
                    inflight=inflight,
                    held=held,
                    lease_owner=owner,
                    lease_until=NOW + offset,
                ).is_orphan(NOW, dead)
            }
            assert in_sql == expected, (dead, sorted(in_sql ^ expected))
    finally:
        await ledger.close()


# -- adopt: a handle already used is an OperatorError, found by type ----------------
async def test_adopting_a_handle_another_job_holds_is_refused(tmp_path: Path, db_url: str) -> None:
    clock = ManualClock(NOW)
    ledger = await open_ledger(db_url, clock=clock)
    backend = FakeBackend(clock, latency=None)  # still running, so it can be cancelled
    engine = Engine(ledger, backend, DirectorySink(tmp_path / "out"), config=CONFIG)
    try:
        await engine.submit([JobSpec(input="a", model="m"), JobSpec(input="b", model="m")])
        rows = [r async for r in ledger.iter_rows()]
        first, second = sorted(rows, key=lambda r: r.handle or "")
        assert first.handle and second.handle
        await engine.operator.cancel(second.idem, actor=Actor.CLI)
        await engine.operator.retry(second.idem, actor=Actor.CLI)
        # Past the label check (the interaction says it is the second job's),
        # so only the ledger's UNIQUE handle can refuse it.
        backend.remotes[first.handle].idem = second.idem
        try:
            await engine.operator.adopt(second.idem, first.handle, actor=Actor.CLI)
        except OperatorError as exc:
            assert "already the handle of another job" in str(exc)
        else:
            raise AssertionError("adopting another job's handle must be refused")
        after = await ledger.get(second.idem)
        assert after is not None and after.status == Status.RESERVING
    finally:
        await ledger.close()
