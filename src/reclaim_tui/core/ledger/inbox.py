"""The webhook inbox's side of the ledger: verified deliveries, kept once.

The inbox server (`reclaim_tui/inbox/`) verifies a delivery, then calls
`record` before it answers 2xx: the event is in the ledger, once by its
`webhook-id`, and in the same transaction the row it concerns is made due
at once — the submitted row whose handle is the event's interaction, or
the reserving row its `user_metadata` names (a create whose answer was
lost). The engine does the rest on its next pass, with one `get`:

- `named(ledger, idem)`: orphan recovery adopts the interaction an event
  named the job by (recorded, no second create);
- `wake(ledger, handles)`: a create answered after its job's event arrived
  (a fast job) is polled at once instead of at its fallback poll.

No API call happens on the request path, and nothing here trusts an event
that was not verified: the server refuses those before calling `record`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import attempt_tag

__all__ = [
    "ATTEMPT_FIELD",
    "KEY_FIELD",
    "InboxEvent",
    "InboxStats",
    "count",
    "event_from_payload",
    "held_named",
    "named",
    "record",
    "stats",
    "wake",
]

#: The `user_metadata` field naming the job: sent with every create that
#: carries a `webhook_config`, returned by the API with every event.
KEY_FIELD = "reclaim_key"
#: The `user_metadata` field naming the attempt (the create's `idem_attempt`
#: label, `models.attempt_tag`) the interaction was created for.
ATTEMPT_FIELD = "reclaim_attempt"
_TEXT_LIMIT = 256


@dataclass(frozen=True, slots=True)
class InboxEvent:
    """One verified delivery, as the ledger keeps it (never the body itself)."""

    webhook_id: str
    received_at: float
    type: str
    interaction: str | None
    job: str | None
    api_status: str | None
    #: "hmac" (a static webhook's secret) or "jwt" (a dynamic webhook's token)
    signed_by: str
    #: the attempt its metadata names (not kept: `record` keeps `job` only
    #: when this is the job's current attempt)
    attempt: str | None = None


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value and len(value) <= _TEXT_LIMIT:
        return value
    return None


def event_from_payload(
    webhook_id: str, payload: Any, received_at: float, signed_by: str
) -> InboxEvent:
    """The event a verified body describes; ValueError for a body that is not
    one (`{type, data: {id, status?, user_metadata?}}`)."""
    if not isinstance(payload, Mapping):
        raise ValueError("the body is not a JSON object")
    kind = _text(payload.get("type"))
    if kind is None:
        raise ValueError("the event has no type")
    data = payload.get("data")
    data = data if isinstance(data, Mapping) else {}
    metadata = data.get("user_metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    job = _text(metadata.get(KEY_FIELD))
    interaction = _text(data.get("id")) if kind.startswith("interaction.") else None
    return InboxEvent(
        webhook_id=webhook_id,
        received_at=received_at,
        type=kind,
        interaction=interaction,
        job=job,
        api_status=_text(data.get("status")),
        signed_by=signed_by,
        attempt=_text(metadata.get(ATTEMPT_FIELD)),
    )


async def record(ledger: Ledger, event: InboxEvent) -> bool:
    """Keep `event` and make its row due, in one transaction; False when its
    `webhook-id` was kept before (a redelivery: nothing changes).

    The event keeps the job it names only when it names that job's *current*
    attempt (or follow-up turn): an event of an earlier attempt (the failed
    one an operator retried), of a pruned job whose key a new job took, or
    of a key no row has, is no news of any orphan and must never be adopted
    as one. The row's attempt is committed before its create is
    sent (rule 3), so an event for it always finds it current or past. An
    event without an attempt (an interaction created by an older version) names
    no attempt and is kept without its job, like a stale one: such an
    orphan falls to --orphan-policy (a resend recorded as a possible
    duplicate, or a hold), never to a guess.
    """
    at = event.received_at
    async with ledger.write() as db:
        job = None
        if event.job is not None and event.attempt is not None:
            async with db.execute(
                Sql(lambda d: f"SELECT attempts, sent_at FROM jobs WHERE idem = {d.p}"),
                (event.job,),
            ) as cur:
                found = list(await cur.fetchall())
            if found and attempt_tag(found[0][0], found[0][1]) == event.attempt:
                job = event.job
        cursor = await db.execute(
            Sql(
                lambda d: (
                    "INSERT INTO inbox"
                    "(webhook_id, received_at, type, interaction, job, api_status, signed_by)"
                    f" VALUES ({d.marks(7)}) ON CONFLICT (webhook_id) DO NOTHING"
                )
            ),
            (
                event.webhook_id,
                at,
                event.type,
                event.interaction,
                job,
                event.api_status,
                event.signed_by,
            ),
        )
        if cursor.rowcount == 0:
            return False
        if event.interaction is not None:
            await db.execute(
                Sql(
                    lambda d: (
                        f"UPDATE jobs SET next_at = {d.p} WHERE handle = {d.p}"
                        f" AND status = 'submitted' AND next_at > {d.p}"
                    )
                ),
                (at, event.interaction, at),
            )
        if job is not None and event.interaction is not None:
            # Only an orphan (its create in flight, outcome unknown; or a
            # follow-up turn's): a row waiting out a refusal's Retry-After
            # stays as it is.
            await db.execute(
                Sql(
                    lambda d: (
                        f"UPDATE jobs SET next_at = {d.p} WHERE idem = {d.p} AND inflight = 1"
                        f" AND status IN ('reserving', 'submitted') AND next_at > {d.p}"
                    )
                ),
                (at, job, at),
            )
    return True


async def named(ledger: Ledger, idem: str, limit: int = 5) -> list[InboxEvent]:
    """Events whose metadata names the job `idem`, one per interaction,
    newest first: candidates only — an event can be replayed, mis-routed or
    name an interaction since gone, so the engine confirms one with a `get`
    (its label must be this job's) before adopting it."""
    rows = await ledger.select(
        Sql(
            lambda d: (
                "SELECT webhook_id, received_at, type, interaction, job, api_status, signed_by"
                f" FROM inbox AS i WHERE job = {d.p} AND interaction IS NOT NULL AND NOT EXISTS"
                " (SELECT 1 FROM inbox AS n WHERE n.job = i.job AND n.interaction = i.interaction"
                " AND (n.received_at > i.received_at"
                " OR (n.received_at = i.received_at AND n.webhook_id > i.webhook_id)))"
                f" ORDER BY received_at DESC LIMIT {d.p}"
            )
        ),
        (idem, limit),
    )
    return [InboxEvent(*r) for r in rows]


async def held_named(ledger: Ledger, limit: int = 500) -> list[str]:
    """Orphans held for an operator (`--orphan-policy hold`, or past the
    grace) that an event has named *since* they were held (their last
    update): recovery may look at them without waiting for the operator.
    An event older than the hold is what the hold already knew (a 404 with
    `--on-gone hold` after the interaction's own event), not news."""
    rows = await ledger.select(
        Sql(
            lambda d: (
                "SELECT DISTINCT jobs.idem FROM inbox JOIN jobs ON jobs.idem = inbox.job"
                " WHERE jobs.status = 'reserving' AND jobs.inflight = 1 AND jobs.held = 1"
                " AND inbox.interaction IS NOT NULL AND inbox.received_at > jobs.updated_at"
                f" LIMIT {d.p}"
            )
        ),
        (limit,),
    )
    return [r[0] for r in rows]


async def wake(ledger: Ledger, handles: Sequence[str], now: float) -> int:
    """Make due the submitted rows among `handles` whose event already came
    (it arrived before the create's answer was committed)."""
    if not handles:
        return 0
    async with ledger.write() as db:
        cursor = await db.execute(
            Sql(
                lambda d: (
                    f"UPDATE jobs SET next_at = {d.p} WHERE status = 'submitted'"
                    f" AND next_at > {d.p}"
                    " AND handle IN (SELECT interaction FROM inbox"
                    f" WHERE interaction IN (SELECT value FROM {d.each()}))"
                )
            ),
            (now, now, json.dumps(list(handles))),
        )
        return int(cursor.rowcount)


async def count(ledger: Ledger, counts: Mapping[str, int], now: float) -> None:
    """Add to the inbox's counters (refused deliveries, by reason)."""
    if not counts:
        return
    async with ledger.write() as db:
        await db.executemany(
            Sql(
                lambda d: (
                    f"INSERT INTO inbox_counters(name, value, updated_at) VALUES ({d.marks(3)})"
                    " ON CONFLICT(name) DO UPDATE SET"
                    " value = inbox_counters.value + excluded.value,"
                    " updated_at = excluded.updated_at"
                )
            ),
            [(name, n, now) for name, n in counts.items() if n],
        )


@dataclass(frozen=True, slots=True)
class InboxStats:
    """What the console shows of the inbox."""

    last_minute: int
    last_at: float | None
    refused: int
    refused_at: float | None


async def stats(ledger: Ledger, now: float) -> InboxStats:
    """Events kept in the last minute, the last one's time, and deliveries
    refused (bad signature, stale, malformed, too big, too fast). Index
    reads only: the console asks with every count."""
    rows = await ledger.select(
        Sql(
            lambda d: (
                f"SELECT (SELECT COUNT(*) FROM inbox WHERE received_at > {d.p}),"
                " (SELECT MAX(received_at) FROM inbox),"
                " (SELECT COALESCE(SUM(value), 0) FROM inbox_counters"
                f" WHERE name {d.like} 'refused{d.pct}'),"
                " (SELECT MAX(updated_at) FROM inbox_counters"
                f" WHERE name {d.like} 'refused{d.pct}')"
            )
        ),
        (now - 60.0,),
    )
    minute, last, refused, refused_at = rows[0]
    return InboxStats(int(minute), last, int(refused), refused_at)
