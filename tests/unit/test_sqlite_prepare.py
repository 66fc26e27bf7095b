"""What the SQLite group commit's preparation on the event loop costs a
transition, counted (never timed): no dict of columns per transition, no
Python-level JSON encoder per stored result (with the same columns, values
and texts as the shared statements, core/ledger/compare_and_set.py), and
few coroutine frames per row sent."""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from reclaim_tui.core.engine.batching import GroupCommit
from reclaim_tui.core.ledger.compare_and_set import result_params, transition_columns
from reclaim_tui.core.ledger.sqlite import thread_writes
from reclaim_tui.core.models import (
    JobSpec,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
    Transition,
)
from tests.helpers.fake_engine import engine_on_fakes
from tests.helpers.python_calls import python_calls

JOBS = 200


async def _tick_calls(tmp_path: Path) -> Counter[tuple[str, str]]:
    """The Python calls of a tick that takes JOBS jobs through every state."""
    engine, clock = await engine_on_fakes(tmp_path)
    ledger = engine.ledger
    try:
        await engine.submit([JobSpec(input=f"job {i}", model="m") for i in range(JOBS)])
        clock.advance(5)
        with python_calls() as seen:
            report = await engine.tick()
        assert report.counts["consumed"] == JOBS
        assert seen[("thread_writes.py", "prepare")] > 0  # the writes went this way
        return seen
    finally:
        await ledger.close()


async def test_a_group_commit_builds_no_dict_of_columns_per_transition(tmp_path: Path) -> None:
    seen = await _tick_calls(tmp_path)
    # The transitions a job takes (sent, done, consumed): their columns picked
    # by a function made once per shape, not a dict built per transition.
    assert seen[("compare_and_set.py", "transition_columns")] == 0


async def test_a_stored_result_is_encoded_without_a_python_encoder(tmp_path: Path) -> None:
    seen = await _tick_calls(tmp_path)
    # Each result's JSON and its usage's: one C encoder made once, not
    # json's Python `encode` and `iterencode` (a new C encoder) per text;
    # what is left is a few a batch (its lists of keys), none a row.
    assert seen[("encoder.py", "iterencode")] < JOBS // 4


def _result() -> RemoteInteraction:
    raw = {"id": "i-1", "status": "completed", "usage": {"b": 2, "a": "é"}}
    return RemoteInteraction(
        "i-1", RemoteState.COMPLETED, "completed", "text", {"b": 2, "a": "é"}, None, raw
    )


TRANSITIONS = [
    Transition("k1", Status.RESERVING, Status.SUBMITTED, "sent", {"handle": "h", "inflight": 0}),
    Transition("k2", Status.SUBMITTED, Status.SUBMITTED, "", {"polls": 3}, release=False),
    Transition("k3", Status.SUBMITTED, Status.DONE, "done", {"polls": 1}, _result(), False),
    Transition("k4", Status.DONE, Status.CONSUMED, "ok", {"last_error": None, "status": "x"}),
    Transition("k5", Status.DONE, Status.DONE, "again", {"updated_at": 1.0, "next_at": 9.0}),
    Transition("k1", Status.SUBMITTED, Status.DONE, "twice", {"polls": 1}, release=False),
]


@pytest.mark.parametrize("t", TRANSITIONS, ids=lambda t: t.idem + t.note)
def test_a_transition_writes_the_columns_the_shared_statements_write(t: Transition) -> None:
    batch = thread_writes.prepare("me", "tick", [], [t], 42.0)
    [(sql, params, moving)] = batch.moves
    cols = transition_columns(t, 42.0)
    names = sorted(cols)
    assert params == [*(cols[n] for n in names), t.idem, t.expect.value, "me"]
    assert f"SET {', '.join(f'{n} = v.column{i + 1}' for i, n in enumerate(names))} " in sql
    event = (t.expect.value, t.to.value, t.note) if t.note or t.expect != t.to else None
    result = None if t.result is None else result_params(t.idem, t.result, 42.0)
    assert moving == [(t.idem, event, result)]


def test_a_key_twice_and_shapes_apart_make_their_own_statements() -> None:
    batch = thread_writes.prepare("me", "tick", [], TRANSITIONS, 42.0)
    keys = [[idem for idem, _, _ in moving] for _, _, moving in batch.moves]
    # k3 and the second k1 write the same columns, k1 once per statement.
    assert sorted(map(sorted, keys)) == [["k1"], ["k1", "k3"], ["k2"], ["k4"], ["k5"]]


def test_a_stored_results_texts_are_json_dumps_texts() -> None:
    result = _result()
    _, _, _, usage, raw, _ = result_params("k", result, 1.0)
    assert usage == json.dumps(result.usage, sort_keys=True)
    assert raw == json.dumps(result.raw, sort_keys=True, ensure_ascii=False)


async def test_a_row_sent_runs_in_few_coroutine_frames(tmp_path: Path) -> None:
    engine, _ = await engine_on_fakes(tmp_path)
    ledger = engine.ledger
    entered: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and code.co_flags & inspect.CO_COROUTINE:
            if Path(code.co_filename).name in ("sending.py", "batching.py"):
                entered[code.co_name] += 1

    try:
        jobs = [JobSpec(input=f"job {i}", model="m") for i in range(JOBS)]
        sys.setprofile(profile)
        try:
            report = await engine.submit(jobs)
        finally:
            sys.setprofile(None)
        assert report.counts["sent"] == JOBS
        # A coroutine frame entered (started or resumed) is a frame object
        # and a resumption through every frame below it. A row's send: its
        # own coroutine (3 entries a row: started, resumed when each of its
        # writes is durable); its two writes are futures it awaits, not
        # coroutines of their own, and so is its handle's.
        assert entered["apply"] == entered["mark_sending"] == entered["_submit"] == 0
        assert entered["_committed"] == 0
        assert entered["_send_one"] == 3 * JOBS
        assert sum(entered.values()) <= 5 * JOBS, entered
    finally:
        await ledger.close()


async def test_a_batch_reads_its_rows_keys_without_a_python_call(tmp_path: Path) -> None:
    seen = await _tick_calls(tmp_path)
    # `each` asks every row of every batch for its key: an attrgetter, not
    # a lambda of batch_pass.py called for every row of every batch.
    assert seen[("batch_pass.py", "<lambda>")] == 0


async def test_the_writes_of_a_group_commit_share_one_future(tmp_path: Path) -> None:
    engine, _ = await engine_on_fakes(tmp_path)
    ledger = engine.ledger
    handed: list[object] = []  # kept: a future's id is not reused meanwhile
    commits = [0]

    def handing(name: str) -> Any:
        real = getattr(GroupCommit, name)

        def hand(self: GroupCommit, *args: Any, **kw: Any) -> Any:
            future = real(self, *args, **kw)
            handed.append(future)
            return future

        return hand

    def counting(real: Any) -> Any:
        async def commit(*args: Any, **kw: Any) -> Any:
            commits[0] += 1
            return await real(*args, **kw)

        return commit

    try:
        jobs = [JobSpec(input=f"job {i}", model="m") for i in range(JOBS)]
        with pytest.MonkeyPatch.context() as patch:
            for name in ("mark_sending", "apply"):
                patch.setattr(GroupCommit, name, handing(name))
            for name in ("write_batch", "write_and_claim_sendable"):
                patch.setattr(ledger, name, counting(getattr(ledger, name)))
            report = await engine.submit(jobs)
        assert report.counts["sent"] == JOBS
        assert len(handed) == 2 * JOBS  # a row's attempt and its handle
        # One future a commit, which its writers read their outcomes from,
        # not one a write.
        assert len({id(f) for f in handed}) <= commits[0] < JOBS // 4, commits
    finally:
        await ledger.close()


async def test_a_writer_cancelled_leaves_the_others_their_commit(tmp_path: Path) -> None:
    engine, _ = await engine_on_fakes(tmp_path)
    ledger = engine.ledger
    await engine.submit([JobSpec(input=f"job {i}", model="m") for i in range(2)], send=False)
    claim = await ledger.claim_sendable(engine.parts.owner, limit=2, lease_seconds=60)
    first, second = (r.idem for r in claim.rows)
    commit = GroupCommit(ledger, engine.parts.owner, engine.parts.config.actor)
    ends: dict[str, object] = {}

    async def mark(idem: str) -> None:
        try:
            ends[idem] = (await commit.mark_sending(idem)).marked.get(idem)
        except asyncio.CancelledError:
            ends[idem] = "cancelled"
            raise

    try:
        one, two = asyncio.create_task(mark(first)), asyncio.create_task(mark(second))
        await asyncio.sleep(0)  # both wait on the same commit
        one.cancel()
        await asyncio.gather(one, two, return_exceptions=True)
        assert ends[first] == "cancelled"
        marked = ends[second]
        assert isinstance(marked, Row) and marked.inflight
        row = await ledger.get(first)
        assert row is not None and row.inflight  # its write went in the commit all the same
    finally:
        await ledger.close()


async def test_a_shutdown_that_cancels_every_task_ends_a_commits_writers(tmp_path: Path) -> None:
    # A shutdown (asyncio.run's clean-up, the console's worker host) cancels every task
    # in one turn of the loop: the drain task of a commit may be cancelled before its
    # first step. Its writers must end, not wait on a commit that will never run.
    engine, _ = await engine_on_fakes(tmp_path)
    ledger = engine.ledger
    commit = GroupCommit(ledger, engine.parts.owner, engine.parts.config.actor)

    async def mark(idem: str) -> None:
        await commit.mark_sending(idem)

    try:
        writer = asyncio.create_task(mark("k"))
        await asyncio.sleep(0)  # the writer has asked; the drain task has not started
        drain = commit._task
        assert drain is not None and not drain.done()
        writer.cancel()
        drain.cancel()
        turns = 0
        while not writer.done() and turns < 50:
            await asyncio.sleep(0)
            turns += 1
        assert writer.done() and writer.cancelled(), f"the writer still waits after {turns} turns"
        assert commit._task is None
        # and the next write starts a commit of its own
        await engine.submit([JobSpec(input="after", model="m")], send=False)
        claim = await ledger.claim_sendable(engine.parts.owner, limit=1, lease_seconds=60)
        (row,) = claim.rows
        written = await commit.mark_sending(row.idem)
        assert row.idem in written.marked
    finally:
        if commit._next is not None:  # the failure above: free the writer for the teardown
            commit._next.abandon()
        await ledger.close()
