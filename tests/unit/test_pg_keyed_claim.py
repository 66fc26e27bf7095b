"""A PostgreSQL claim among named keys (the send pass right after a submit
claims among the keys it just reserved) reads rows in proportion to the
keys, not to the due rows outside them. Found through the due index and
filtered by the key list, each claim of 64 read and dropped every due row
outside the list first (thousands per claim in benchmarks/ledger_only.py at
10,000 jobs): over a submit, the square of its size. Counted from EXPLAIN
ANALYZE of the statement the ledger sent: the rows every plan node produced
or filtered out, and the index it walked. And the claim's rules kept: the
first due first, within the keys, a row another transaction holds skipped."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any, cast

import psycopg
import psycopg.sql
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.postgres.session import PgSession
from reclaim_tui.core.ledger.postgres.writes import PLAN
from reclaim_tui.core.models import Actor, JobSpec
from reclaim_tui.core.sinks import CallableSink

pytestmark = pytest.mark.postgres

JOBS = 4000
KEYS = 128
LIMIT = 64
OWNER = "bench|1|x"


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node] + [n for child in node.get("Plans", []) for n in _nodes(child)]


def _read(node: dict[str, Any]) -> int:
    """Rows a node produced or filtered out, over all its loops."""
    per_loop = int(node.get("Actual Rows", 0)) + int(node.get("Rows Removed by Filter", 0))
    return per_loop * int(node.get("Actual Loops", 1))


#: The settings a claim may be planned under: alone; in a group commit's
#: transaction (writes.PLAN); and both as the plan a prepared statement may
#: settle on (a generic plan, which cannot see the parameters' values).
_GENERIC = "SET LOCAL plan_cache_mode = force_generic_plan"
_SETTINGS = {
    "default": (),
    "group commit": (PLAN,),
    "generic": (_GENERIC,),
    "generic group commit": (PLAN, _GENERIC),
}


async def _compared(
    dsn: str, search_path: str, sql: str, args: Sequence[Any]
) -> dict[str, tuple[int, int, int]]:
    """Under each of _SETTINGS, from the claim's plan: pairs of rows a join
    compared and dropped (`Rows Removed by Join Filter`), rows of jobs read,
    and sequential scans; each run rolled back."""
    compared = {}
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        for name, settings in _SETTINGS.items():
            async with conn.transaction(force_rollback=True):
                await conn.execute(f"SET LOCAL search_path TO {search_path}")
                for setting in settings:
                    await conn.execute(setting)
                if _GENERIC in settings:
                    # EXPLAIN plans a statement with its parameters' values;
                    # a prepared one's plan is what the setting chooses.
                    numbered = re.sub(r"%s", lambda _, n=itertools.count(1): f"${next(n)}", sql)
                    await conn.execute(f"PREPARE claim AS {numbered}")
                    values = psycopg.sql.SQL(", ").join(map(psycopg.sql.Literal, args))
                    explain = psycopg.sql.SQL(
                        "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE claim({})"
                    ).format(values)
                    cur = await conn.execute(explain)
                else:
                    cur = await conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, args)
                (plan,) = (await cur.fetchall())[0]
                if _GENERIC in settings:
                    await conn.execute("DEALLOCATE claim")
            nodes = _nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
            compared[name] = (
                sum(
                    int(n.get("Rows Removed by Join Filter", 0)) * int(n.get("Actual Loops", 1))
                    for n in nodes
                ),
                sum(_read(n) for n in nodes if n.get("Relation Name") == "jobs"),
                sum(1 for n in nodes if n["Node Type"] == "Seq Scan"),
            )
    return compared


async def _nowhere(idem: str, result: object) -> None:
    return None


async def _claim(ledger: Any, how: str, keys: Sequence[str]) -> list[str]:
    if how == "claim":
        claim = await ledger.claim_sendable(OWNER, limit=LIMIT, lease_seconds=60.0, idems=keys)
    else:
        _, _, claim = await ledger.write_and_claim_sendable(
            OWNER, Actor.TICK, limit=LIMIT, lease_seconds=60.0, idems=keys
        )
    return [row.idem for row in claim.rows]


@pytest.mark.parametrize("how", ["claim", "write_and_claim"])
async def test_a_claim_among_keys_reads_rows_in_proportion_to_the_keys(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    clock = ManualClock()
    ledger = await open_ledger(pg_dsn, clock=clock)
    sent: list[tuple[str, Sequence[Any]]] = []
    run = PgSession.run

    send = PgSession.send

    async def recording(session: PgSession, sql: str, params: Sequence[Any], *, wait: bool) -> Any:
        sent.append((str(getattr(sql, "postgres", sql)), params))
        return await run(session, sql, params, wait=wait)

    async def sending(session: PgSession, text: str, params: Any) -> Any:
        sent.append((text, params))
        return await send(session, text, params)

    try:
        specs = [JobSpec(input=f"job number {i}", model="m") for i in range(JOBS)]
        await Engine(ledger, FakeBackend(clock=clock), CallableSink(_nowhere)).submit(
            specs, send=False
        )
        idems = sorted(r[0] for r in await cast(Any, ledger)._fetchall("SELECT idem FROM jobs"))
        keys = idems[:: JOBS // KEYS][:KEYS]
        # Every row outside the keys is due before them; the keys are due in
        # the order of their position in `ranked`.
        ranked = sorted(keys, key=lambda k: k[::-1])
        async with ledger.write() as db:
            await db.execute("UPDATE jobs SET next_at = next_at - 1000")
            for i, key in enumerate(ranked):
                await db.execute(
                    "UPDATE jobs SET next_at = next_at + %s WHERE idem = %s", (500 + i, key)
                )
        clock.advance(1)
        # Another transaction holds the first due key: skipped, not waited for.
        async with await psycopg.AsyncConnection.connect(pg_dsn) as other:
            await other.execute(f"SET search_path TO {cast(Any, ledger)._search_path}")
            await other.execute("SELECT 1 FROM jobs WHERE idem = %s FOR UPDATE", (ranked[0],))
            monkeypatch.setattr(PgSession, "run", recording)
            monkeypatch.setattr(PgSession, "send", sending)
            claimed = await _claim(ledger, how, keys)
            monkeypatch.undo()
        assert claimed and set(claimed) <= set(keys)
        assert sorted(claimed, key=ranked.index) == ranked[1 : LIMIT + 1]
        (sql, args), *_ = [(s, a) for s, a in sent if "lease_until" in s and "RETURNING" in s]
        assert await ledger.release(OWNER, claimed) == LIMIT
        compared = await _compared(pg_dsn, cast(Any, ledger)._search_path, sql, args)
        async with ledger.write() as db:
            async with db.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, args) as cur:
                (plan,) = (await cur.fetchall())[0]
    finally:
        await ledger.close()
    nodes = _nodes((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
    walked = sorted({n["Index Name"] for n in nodes if "Index Name" in n})
    assert "jobs_due" not in walked, f"the claim walked the due index: {walked}"
    assert not [n for n in nodes if n["Node Type"] == "Seq Scan"], "the claim read the table"
    read = sum(_read(n) for n in nodes if n.get("Relation Name") == "jobs")
    # Each key looked up twice (its order, its lock), the rows taken updated:
    # a few times the keys. Through the due index: every due row outside them.
    assert read <= 4 * KEYS, f"the claim read {read} rows of jobs for {KEYS} keys of {JOBS} due"
    locked = sum(_read(n) for n in nodes if n["Node Type"] == "LockRows")
    assert locked == LIMIT, f"the claim locked {locked} rows to take {LIMIT}"
    # The rows taken put back in the claim's order by their place among the
    # keys taken, not by a join to the whole window: under a group commit's
    # plan settings (hash joins off) that join compared every pair.
    assert {name: pairs for name, (pairs, _, _) in compared.items()} == dict.fromkeys(
        _SETTINGS, 0
    ), f"pairs compared: {compared}"
    # And as planned under the other settings: in proportion to the keys.
    for name, (_, rows, scans) in compared.items():
        assert rows <= 4 * KEYS and scans == 0, f"{name}: {rows} rows read, {scans} table scans"
