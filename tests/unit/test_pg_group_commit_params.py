"""The PostgreSQL group commit (core/ledger/postgres/writes.py) sends a
batch's rows as one JSON parameter (core/ledger/postgres/json_rows.py), not
as a dozen arrays that psycopg dumped string by string in Python: the
strings the client dumps for a group commit do not grow with its batch. And
what JSON cannot carry as the arrays did (a NUL, a text starting with the
stored encoding's mark, a float that is not finite) is stored exactly."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.postgres import text
from reclaim_tui.core.models import Actor, JobSpec, Status, Transition
from reclaim_tui.core.sinks import CallableSink

pytestmark = pytest.mark.postgres

OWNER = "host|1|test"


async def _nowhere(idem: str, result: object) -> None:
    return None


async def _leased(pg_dsn: str, ledger: Any, clock: ManualClock, n: int) -> list[str]:
    """`n` fresh rows, leased to OWNER."""
    specs = [JobSpec(input=f"job number {i}", model="m") for i in range(n)]
    engine = Engine(ledger, FakeBackend(clock=clock), CallableSink(_nowhere))
    await engine.submit(specs, send=False)
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("SET search_path TO reclaim_tui")
        idems = [r[0] for r in conn.execute("SELECT idem FROM jobs WHERE lease_owner IS NULL")]
        conn.execute("UPDATE jobs SET lease_owner = %s WHERE idem = ANY(%s)", (OWNER, idems))
    return idems


async def test_the_strings_dumped_for_a_group_commit_do_not_grow_with_its_batch(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dumped = [0]
    dump = text._Dumper.dump

    def counted(self: Any, obj: str) -> Any:
        dumped[0] += 1
        return dump(self, obj)

    monkeypatch.setattr(text._Dumper, "dump", counted)
    clock = ManualClock()
    ledger = await open_ledger(pg_dsn, clock=clock)
    counts = []
    try:
        for size in (8, 64):
            idems = await _leased(pg_dsn, ledger, clock, size)
            transitions = [
                Transition(i, Status.RESERVING, Status.RESERVING, f"noted {i}", release=False)
                for i in idems
            ]
            dumped[0] = 0
            applied = await ledger.apply(OWNER, Actor.TICK, transitions)
            counts.append(dumped[0])
            assert sorted(applied) == sorted(idems)
    finally:
        await ledger.close()
    # The arrays dumped every key, status and note of every row: 4 strings a row.
    assert counts[0] == counts[1], f"strings dumped for 8 rows, then 64: {counts}"
    assert counts[1] < 16, f"{counts[1]} strings dumped for one group commit of 64 rows"


async def test_what_json_cannot_carry_is_stored_exactly(pg_dsn: str) -> None:
    clock = ManualClock()
    ledger = await open_ledger(pg_dsn, clock=clock)
    try:
        idems = await _leased(pg_dsn, ledger, clock, 3)
        odd = {
            idems[0]: ("a NUL \x00 in a note", "an error \x00 too", float("inf")),
            idems[1]: (text.MARK + "a note that starts with the mark", text.MARK, 5.5),
            idems[2]: ("plain \\u0000 text, Infinity and NaN", "NaN", float("-inf")),
        }
        transitions = [
            Transition(
                idem,
                Status.RESERVING,
                Status.RESERVING,
                note,
                changes={"last_error": error, "next_at": next_at},
                release=False,
            )
            for idem, (note, error, next_at) in odd.items()
        ]
        assert sorted(await ledger.apply(OWNER, Actor.TICK, transitions)) == sorted(idems)
        for idem, (note, error, next_at) in odd.items():
            row = await ledger.get(idem)
            assert row is not None
            assert (row.last_error, row.next_at) == (error, next_at)
            assert (await ledger.events(idem))[-1].note == note
    finally:
        await ledger.close()
