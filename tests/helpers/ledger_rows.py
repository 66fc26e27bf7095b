"""Rows put into a ledger through its own API (claims, compare-and-set
transitions), each ending in a chosen status with a chosen usage, at the
times a ManualClock gives: what costs and charts are computed from."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.transitions import Transition, delivered
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Actor, RemoteInteraction, RemoteState, Status

__all__ = ["put_row"]

_numbers = itertools.count(1)
_OWNER = "helper|1|a|x"


async def put_row(
    ledger: Ledger,
    clock: ManualClock,
    *,
    model: str = "gemini-flash-latest",
    agent: bool = False,
    end: Status = Status.CONSUMED,
    usage: Mapping[str, Any] | None = None,
    runs: float = 10.0,
) -> str:
    """A new job on `model` walked to `end` (reserving, submitted, done,
    consumed, failed); `runs` seconds pass between its create and its end.
    Returns its key."""
    n = next(_numbers)
    idem = f"row{n:05d}"
    spec: dict[str, Any] = {"input": f"prompt {n}"}
    spec["agent" if agent else "model"] = model
    await ledger.insert_jobs([(idem, json.dumps(spec), model)], "test")
    if end == Status.RESERVING:
        return idem
    await _send(ledger, idem)
    await _apply(ledger, idem, Status.RESERVING, Status.SUBMITTED, {"handle": f"h-{idem}",
                 "inflight": 0, "submitted_at": clock.now(), "next_at": clock.now()})  # fmt: skip
    if end == Status.SUBMITTED:
        return idem
    clock.advance(runs)
    remote = RemoteInteraction(
        f"h-{idem}",
        RemoteState.FAILED if end == Status.FAILED else RemoteState.COMPLETED,
        "failed" if end == Status.FAILED else "completed",
        output_text="text",
        usage=usage,
        raw={"id": f"h-{idem}", "usage": usage},
    )
    to = Status.FAILED if end == Status.FAILED else Status.DONE
    changes = {"done_at": clock.now(), "next_at": clock.now()} if to == Status.DONE else {}
    await _apply(ledger, idem, Status.SUBMITTED, to, changes, result=remote)
    if end == Status.CONSUMED:
        await _claim(ledger, idem, Status.DONE)
        await ledger.apply(_OWNER, Actor.TICK, [delivered(idem, clock.now())])
    return idem


async def _claim(ledger: Ledger, idem: str, status: Status) -> None:
    claim = {
        Status.RESERVING: ledger.claim_sendable,
        Status.SUBMITTED: ledger.claim_pollable,
        Status.DONE: ledger.claim_undelivered,
    }[status]
    got = await claim(_OWNER, limit=1000, lease_seconds=60)
    keys = {r.idem for r in got.rows}
    assert idem in keys
    await ledger.release(_OWNER, keys - {idem})


async def _send(ledger: Ledger, idem: str) -> None:
    await _claim(ledger, idem, Status.RESERVING)
    await ledger.write_batch(_OWNER, Actor.TICK, sending=[idem])


async def _apply(
    ledger: Ledger,
    idem: str,
    expect: Status,
    to: Status,
    changes: dict[str, Any],
    result: RemoteInteraction | None = None,
) -> None:
    if expect != Status.RESERVING:
        await _claim(ledger, idem, expect)
    note = f"{expect.value} → {to.value}"
    applied = await ledger.apply(
        _OWNER, Actor.TICK, [Transition(idem, expect, to, note, changes, result=result)]
    )
    assert applied == [idem]
