"""The PostgreSQL ledger in psycopg's pipeline mode (issue 27 item 5): a
group commit, a claim's transaction and a read cost the round trips they
must, counted from the wire (libpq's protocol trace: every Sync or Flush the
client sends is a wait for the server); the set-based group commit
(core/ledger/postgres/writes.py) writes what the shared statements write on
SQLite, row for row and event for event; an error mid-pipeline rolls the
whole transaction back and leaves the connection usable."""

from __future__ import annotations

import asyncio
import itertools
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import RemoteInteraction, RemoteState, Status, Transition
from reclaim_tui.errors import LedgerConflictError
from tests.helpers.pgbouncer import PgBouncer, started_bouncer
from tests.helpers.postgres import PostgresServer

pytestmark = pytest.mark.postgres

OWNER = "host-a|1|1|boot"


@asynccontextmanager
async def round_trips(ledger: Ledger) -> AsyncIterator[list[int]]:
    """Count the round trips on the ledger's connection while the block
    runs: in libpq's protocol trace, each turn from what the client sent
    (F) to what the server answered (B) is one wait for the server. And
    check that no statement was prepared on the server unless the
    connection is the server's own session."""
    conn = cast(Any, ledger).connection
    counted: list[int] = []
    fd, name = tempfile.mkstemp(prefix="pgtrace-")
    try:
        conn.pgconn.trace(fd)
        try:
            yield counted
        finally:
            conn.pgconn.untrace()
        lines = Path(name).read_text().splitlines()
        # No named (server-side prepared) statement but on the server's own
        # session (connect.dial): a transaction pooler hands the next
        # transaction to another server connection.
        named = [line for line in lines if '\tParse\t "_' in line]
        assert conn.prepare_threshold is not None or named == []
        sides = [line.split("\t")[1] for line in lines]
        counted.append(sum(1 for a, b in itertools.pairwise(sides) if (a, b) == ("F", "B")))
    finally:
        os.close(fd)
        os.unlink(name)


async def _ledger_with_claimed(url: str, n: int) -> tuple[Ledger, list[str]]:
    ledger = await open_ledger(url, clock=ManualClock())
    jobs = [(f"k{i:02d}", f'{{"input": "job {i}"}}', "m") for i in range(n)]
    await ledger.insert_jobs(jobs, "test")
    claim = await ledger.claim_sendable(OWNER, limit=n, lease_seconds=60)
    return ledger, sorted(r.idem for r in claim.rows)


def _done(idem: str) -> RemoteInteraction:
    return RemoteInteraction(
        id=f"h-{idem}",
        state=RemoteState.COMPLETED,
        api_status="completed",
        output_text=f"out {idem}\x00nul",
        usage={"total_tokens": 3},
        raw={"id": f"h-{idem}", "status": "completed"},
    )


async def _batches(ledger: Ledger, keys: list[str]) -> list[Any]:
    """A sequence of group commits as the engine makes them, and what each returned."""
    a, b, c, d, e, f = keys
    out: list[Any] = []
    out.append(await ledger.write_batch(OWNER, "engine", sending=[a, b, c, "nope"]))
    sent = [
        Transition(a, Status.RESERVING, Status.SUBMITTED, "created", {"handle": "h-" + a,
                   "inflight": False, "submitted_at": 1.5}, release=False),
        Transition(b, Status.RESERVING, Status.SUBMITTED, "created", {"handle": "h-" + b,
                   "inflight": False, "submitted_at": 1.5}, release=False),
        # expects a status the row does not have: nothing written, no event
        Transition(c, Status.SUBMITTED, Status.DONE, "wrong", {"done_at": 9.0}),
        # a poll that changes nothing and says nothing: no event
        Transition(d, Status.RESERVING, Status.RESERVING, "", {"next_at": 5.0}, release=False),
    ]  # fmt: skip
    out.append(await ledger.write_batch(OWNER, "engine", sending=[e], transitions=sent))
    done = [
        Transition(a, Status.SUBMITTED, Status.DONE, "completed", {"done_at": 2.0, "polls": 1},
                   result=_done(a), release=False),
        Transition(b, Status.SUBMITTED, Status.FAILED, "failed: boom", {"last_error": "bo'om%s",
                   "held": True}),
        Transition(f, Status.RESERVING, Status.RESERVING, "held for review", {"held": 1}),
    ]  # fmt: skip
    out.append(await ledger.apply(OWNER, "engine", done))
    out.append(await ledger.apply("host-b|2|2|boot", "engine", [
        Transition(d, Status.RESERVING, Status.FAILED, "not mine", {}),
    ]))  # fmt: skip
    return out


async def _state(ledger: Ledger, keys: list[str]) -> tuple[Any, ...]:
    rows = await ledger.get_many(keys)
    results = await ledger.results(keys)
    events = {k: [(e.actor, e.from_status, e.to_status, e.note) for e in await ledger.events(k)]
              for k in keys}  # fmt: skip
    return rows, {k: (r.output_text, r.usage, r.raw_json) for k, r in results.items()}, events


async def test_the_group_commit_writes_what_the_shared_statements_write(
    pg_dsn: str, tmp_path: Path
) -> None:
    """The same group commits on SQLite (the shared statements,
    compare_and_set.py) and on PostgreSQL (core/ledger/postgres/writes.py): the same answers,
    rows, results and events, a text with a NUL and quotes included."""
    seen = []
    for url in (str(tmp_path / "ledger.db"), pg_dsn):
        ledger, keys = await _ledger_with_claimed(url, 6)
        try:
            answers = await _batches(ledger, keys)
            seen.append((answers, await _state(ledger, keys)))
        finally:
            await ledger.close()
    (sqlite_answers, sqlite_state), (pg_answers, pg_state) = seen
    assert pg_answers == sqlite_answers
    assert pg_state == sqlite_state
    assert pg_answers[1][1] == ["k00", "k01", "k03"]  # not k02 (wrong status)
    assert pg_answers[3] == []  # another owner changes nothing
    events = pg_state[2]
    assert [e[3] for e in events["k00"]] == [
        "reserved", "attempt 1: sending create", "created", "completed",
    ]  # fmt: skip
    assert [e[3] for e in events["k03"]] == ["reserved"]


async def test_a_group_commit_is_one_round_trip(pg_dsn: str) -> None:
    """BEGIN, the settings, the marked rows, the transitions, their results
    and events, and COMMIT: one wait for the server."""
    ledger, keys = await _ledger_with_claimed(pg_dsn, 6)
    try:
        async with round_trips(ledger) as counted:
            marked, applied = await ledger.write_batch(
                OWNER,
                "engine",
                sending=keys[:3],
                transitions=[
                    Transition(k, Status.RESERVING, Status.FAILED, "given up", {"last_error": "x"})
                    for k in keys[3:]
                ],
            )
        assert sorted(marked) == keys[:3] and applied == keys[3:]
        assert counted == [1]
    finally:
        await ledger.close()


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        pytest.param(lambda led, keys: led.get(keys[0]), 1, id="a read"),
        pytest.param(lambda led, keys: led.counts(), 1, id="counts"),
        # reads the keys it still holds inside the transaction, then commits
        pytest.param(lambda led, keys: led.renew(OWNER, keys, 60), 2, id="a renewal"),
        # the holders (a read, with BEGIN), then the claim and its COMMIT
        pytest.param(
            lambda led, keys: led.claim_pollable(OWNER, limit=5, lease_seconds=60), 2, id="a claim"
        ),
    ],
)
async def test_reads_and_shared_writes_wait_only_for_what_they_read(
    pg_dsn: str, call: Callable[[Ledger, list[str]], Awaitable[Any]], expected: int
) -> None:
    """BEGIN and the settings go with the first statement, and a read's
    COMMIT too: a transaction waits once per result it reads, plus COMMIT's."""
    ledger, keys = await _ledger_with_claimed(pg_dsn, 6)
    try:
        async with round_trips(ledger) as counted:
            await call(ledger, keys)
        assert counted == [expected]
    finally:
        await ledger.close()


async def test_an_error_mid_pipeline_rolls_back_the_batch_and_the_ledger_goes_on(
    pg_dsn: str,
) -> None:
    """Two rows given one handle (unique): the error arrives with the COMMIT's
    sync; nothing of the batch is written (the marked row neither), and the
    next write on the same connection works."""
    ledger, keys = await _ledger_with_claimed(pg_dsn, 6)
    try:
        clash = [
            Transition(k, Status.RESERVING, Status.SUBMITTED, "created", {"handle": "same"})
            for k in keys[1:3]
        ]
        with pytest.raises(LedgerConflictError, match="conflicts"):
            await ledger.write_batch(OWNER, "engine", sending=[keys[0]], transitions=clash)
        rows = await ledger.get_many(keys[:3])
        assert {r.status for r in rows.values()} == {Status.RESERVING}
        assert [r.attempts for r in rows.values()] == [0, 0, 0]
        assert [len(await ledger.events(k)) for k in keys[:3]] == [1, 1, 1]
        marked, _ = await ledger.write_batch(OWNER, "engine", sending=[keys[0]])
        assert list(marked) == [keys[0]] and marked[keys[0]].attempts == 1
    finally:
        await ledger.close()


async def test_two_hosts_pipelining_through_one_pooled_server_connection(
    pg_server: PostgresServer, pg_dsn: str
) -> None:
    """PgBouncer 1.18 in transaction mode with ONE server connection: two
    hosts' group commits and reads, pipelined and at once, take turns on it
    (a pipeline is one transaction, its Syncs inside it; no prepared
    statement is left on the connection for the other host to meet)."""
    with started_bouncer(PgBouncer(pg_server, pool_mode="transaction", pool_size=1)) as bouncer:
        url = bouncer.via(pg_dsn)
        hosts = [await open_ledger(url, clock=ManualClock()) for _ in range(2)]
        await hosts[0].insert_jobs([(f"k{i:02d}", "{}", "m") for i in range(40)], "test")
        owners = ["host-a|1|1|boot", "host-b|2|2|boot"]
        claimed = [
            sorted(r.idem for r in (await h.claim_sendable(o, limit=20, lease_seconds=60)).rows)
            for h, o in zip(hosts, owners, strict=True)
        ]

        async def work(ledger: Ledger, owner: str, keys: list[str]) -> list[str]:
            applied: list[str] = []
            for start in range(0, len(keys), 4):
                batch = keys[start : start + 4]
                marked, _ = await ledger.write_batch(owner, "engine", sending=batch[:2])
                assert sorted(marked) == batch[:2]
                _, done = await ledger.write_batch(
                    owner,
                    "engine",
                    transitions=[
                        Transition(k, Status.RESERVING, Status.FAILED, "given up", {})
                        for k in batch
                    ],
                )
                applied += done
                assert (await ledger.get(batch[0])) is not None
            return applied

        done = await asyncio.gather(
            *(work(h, o, k) for h, o, k in zip(hosts, owners, claimed, strict=True))
        )
        assert done == claimed
        counts = await hosts[1].counts()
        assert counts["failed"][0] == 40
        events = [len(await hosts[0].events(k)) for k in claimed[0] + claimed[1]]
        # reserved, the sending attempt (two of each four), given up
        assert events == [3, 3, 2, 2] * 10
        for ledger in hosts:
            await ledger.close()
