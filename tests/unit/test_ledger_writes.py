"""The ledger's batched write path (issue 27, item 4), on both engines.

A group commit of hundreds of transitions of several shapes applies exactly
the compare-and-sets that hold (lease owner and expected status), writes one
event per state change and each result against the right job; a key given
twice in one batch moves from where its first transition left it; a batch
that fails writes nothing. On SQLite a group commit takes as many
statements for 400 rows as for 5.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.models import Actor, RemoteInteraction, RemoteState, Status, Transition
from reclaim_tui.errors import LedgerError

ME, OTHER = "me|1|a", "other|2|b"


async def _sent(ledger: Ledger, n: int, prefix: str = "k") -> list[str]:
    """n rows claimed by ME and marked sending (reserving, in flight)."""
    spec = json.dumps({"input": "x", "model": "m"})
    keys = [f"{prefix}{i:04d}" for i in range(n)]
    await ledger.insert_jobs([(k, spec, "m") for k in keys], "test")
    claim = await ledger.claim_sendable(ME, limit=n, lease_seconds=60)
    assert sorted(r.idem for r in claim.rows) == keys
    marked, _ = await ledger.write_batch(ME, Actor.TICK, sending=keys)
    assert sorted(marked) == keys and all(r.attempts == 1 for r in marked.values())
    return keys


def _submitted(idem: str, now: float) -> Transition:
    return Transition(
        idem,
        Status.RESERVING,
        Status.SUBMITTED,
        "created",
        {"handle": f"h-{idem}", "inflight": 0, "submitted_at": now, "next_at": now},
        release=False,
    )


def _done(idem: str, now: float) -> Transition:
    remote = RemoteInteraction(
        f"h-{idem}", RemoteState.COMPLETED, "completed", output_text=f"out {idem}", raw={"i": idem}
    )
    return Transition(
        idem, Status.SUBMITTED, Status.DONE, "completed", {"done_at": now}, result=remote
    )


async def test_a_large_mixed_batch_applies_exactly_the_compare_and_sets_that_hold(
    ledger: Ledger, clock: ManualClock
) -> None:
    keys = await _sent(ledger, 300)
    now = clock.now()
    # 0–259 move to submitted (and keep their lease), 260–279 are asked to
    # move from the wrong status, 280–299 are no longer ME's.
    lost = keys[280:]
    assert await ledger.release(ME, lost) == 20
    taken = await ledger.claim_orphans(OTHER, limit=50, lease_seconds=60, force=True)
    assert sorted(r.idem for r in taken.rows) == lost
    todo = [_submitted(k, now) for k in keys[:260]]
    todo += [_done(k, now) for k in keys[260:280]]
    todo += [_submitted(k, now) for k in lost]
    _, applied = await ledger.write_batch(ME, Actor.TICK, transitions=todo)
    assert applied == keys[:260]
    # A second batch of another shape, with results, over some of them.
    clock.advance(5)
    applied = await ledger.apply(ME, Actor.TICK, [_done(k, clock.now()) for k in keys[:130]])
    assert applied == keys[:130]
    rows = await ledger.get_many(keys)
    assert [k for k in keys if rows[k].status == Status.DONE] == keys[:130]
    assert [k for k in keys if rows[k].status == Status.SUBMITTED] == keys[130:260]
    assert all(rows[k].status == Status.RESERVING for k in keys[260:])
    assert all(rows[k].lease_owner is None for k in keys[:130])  # released with the move
    assert all(rows[k].lease_owner == ME for k in keys[130:260])
    assert rows[keys[7]].handle == f"h-{keys[7]}"
    results = await ledger.results(keys)
    assert sorted(results) == keys[:130]
    assert all(r.output_text == f"out {k}" for k, r in results.items())
    # One event per state change, on the row it names, in order.
    for k in (keys[0], keys[129], keys[200], keys[270], keys[299]):
        moves = [(e.from_status, e.to_status) for e in await ledger.events(k)]
        want: list[tuple[str | None, str | None]] = [
            (None, "reserving"),
            ("reserving", "reserving"),
        ]
        if k in keys[:260]:
            want.append(("reserving", "submitted"))
        if k in keys[:130]:
            want.append(("submitted", "done"))
        assert moves == want, k
    total = await ledger.select("SELECT COUNT(*) FROM events")
    assert total == [(300 + 300 + 260 + 130,)]


async def test_a_key_twice_in_one_batch_moves_from_where_the_first_left_it(
    ledger: Ledger, clock: ManualClock
) -> None:
    [key, other] = await _sent(ledger, 2)
    now = clock.now()
    twice = [_submitted(key, now), _submitted(key, now), _submitted(other, now)]
    _, applied = await ledger.write_batch(ME, Actor.TICK, transitions=twice)
    # The second reserving → submitted of `key` finds it submitted: no move.
    assert sorted(applied) == [key, other] and len(applied) == 2
    [row] = (await ledger.get_many([key])).values()
    assert row.status == Status.SUBMITTED
    follow = [_submitted(key, now), _done(key, now)]
    _, applied = await ledger.write_batch(ME, Actor.TICK, transitions=follow)
    assert applied == [key]
    [row] = (await ledger.get_many([key])).values()
    assert row.status == Status.DONE
    assert [e.to_status for e in await ledger.events(key)][-2:] == ["submitted", "done"]


async def test_a_batch_that_fails_writes_nothing(ledger: Ledger, clock: ManualClock) -> None:
    keys = await _sent(ledger, 3)
    now = clock.now()
    bad = Transition(keys[2], Status.RESERVING, Status.SUBMITTED, "x", {"no_such_column": 1})
    with pytest.raises(LedgerError):
        await ledger.write_batch(
            ME, Actor.TICK, transitions=[_submitted(keys[0], now), _submitted(keys[1], now), bad]
        )
    rows = await ledger.get_many(keys)
    assert all(r.status == Status.RESERVING for r in rows.values())
    assert [e.to_status for e in await ledger.events(keys[0])] == ["reserving", "reserving"]
    # The ledger is usable at once: nothing was left open.
    _, applied = await ledger.write_batch(ME, Actor.TICK, transitions=[_submitted(keys[0], now)])
    assert applied == [keys[0]]


async def test_a_group_commits_statements_do_not_grow_with_the_batch(tmp_path: Any) -> None:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    assert isinstance(ledger, SqliteLedger)
    db = ledger.connection
    calls: list[str] = []
    original = db._execute

    async def counted(fn: Any, *args: Any, **kw: Any) -> Any:
        calls.append(getattr(fn, "__name__", "call"))
        return await original(fn, *args, **kw)

    db._execute = counted  # type: ignore[method-assign]
    try:
        hand_overs = []
        for size, prefix in ((5, "a"), (400, "b")):
            keys = await _sent(ledger, size, prefix)
            now = clock.now()
            calls.clear()
            _, applied = await ledger.write_batch(
                ME, Actor.TICK, sending=[], transitions=[_submitted(k, now) for k in keys]
            )
            assert applied == keys
            hand_overs.append(len(calls))
            clock.advance(1)
            calls.clear()
            _, applied = await ledger.write_batch(
                ME, Actor.TICK, transitions=[_done(k, clock.now()) for k in keys]
            )
            assert applied == keys
            hand_overs.append(len(calls))
    finally:
        db._execute = original  # type: ignore[method-assign]
        await ledger.close()
    # BEGIN, the move, its fetch, the events, (the results,) COMMIT: the
    # same for 5 rows as for 400.
    assert hand_overs[:2] == hand_overs[2:] and hand_overs[0] <= 6 and hand_overs[1] <= 7
