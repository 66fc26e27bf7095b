"""The webhook inbox (issue 12): every delivery verified before anything is
written; kept once by webhook-id; forged, replayed, stale, oversized and
flooding deliveries refused. In process, over real HTTP (aiohttp)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest
import standardwebhooks
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from reclaim_tui.core.clock import SystemClock
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.registry import BEAT
from reclaim_tui.core.models import attempt_tag
from reclaim_tui.inbox.command import keep_registered
from reclaim_tui.inbox.limits import RateLimit
from reclaim_tui.inbox.server import InboxServer
from reclaim_tui.inbox.verify import Verifier

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"x" * 32).decode()


def event_body(
    interaction: str = "int-1",
    key: str | None = "job-1",
    kind: str = "interaction.completed",
    attempt: str | None = None,
) -> bytes:
    data: dict[str, Any] = {"id": interaction, "status": "completed"}
    if key is not None:
        data["user_metadata"] = {inbox.KEY_FIELD: key}
        if attempt is not None:
            data["user_metadata"][inbox.ATTEMPT_FIELD] = attempt
    payload = {"type": kind, "version": "v1", "timestamp": "2026-12-03T00:00:00Z", "data": data}
    return json.dumps(payload, separators=(",", ":")).encode()


def hmac_headers(
    body: bytes, wid: str, secret: str = SECRET, at: float | None = None
) -> dict[str, str]:
    stamp = datetime.fromtimestamp(at if at is not None else time.time(), tz=UTC)
    signature = standardwebhooks.Webhook(secret).sign(wid, stamp, body.decode())
    return {
        "webhook-id": wid,
        "webhook-timestamp": str(int(stamp.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }


@dataclass
class Keys:
    private: rsa.RSAPrivateKey
    kid: str


def make_keys(kid: str) -> Keys:
    return Keys(rsa.generate_private_key(public_exponent=65537, key_size=2048), kid)


def jwt_headers(body: bytes, wid: str, keys: Keys, **claims: Any) -> dict[str, str]:
    now = int(time.time())
    payload = {
        "iss": "test",
        "iat": now,
        "exp": now + 300,
        "sub": wid,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        **claims,
    }
    payload = {k: v for k, v in payload.items() if v is not None}
    token = jwt.encode(payload, keys.private, algorithm="RS256", headers={"kid": keys.kid})
    return {"webhook-id": wid, "webhook-timestamp": str(now), "webhook-signature": token}


@dataclass
class World:
    ledger: Ledger
    server: InboxServer
    session: aiohttp.ClientSession

    async def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
        async with self.session.post(self.server.url, data=body, headers=headers) as resp:
            return resp.status, await resp.json()

    async def kept(self) -> list[tuple[Any, ...]]:
        return await self.ledger.select("SELECT webhook_id, interaction, job, signed_by FROM inbox")


@pytest.fixture
async def jwks(tmp_path: Path) -> AsyncIterator[tuple[str, Keys]]:
    """A JWKS endpoint serving one key (the API's, as far as the inbox knows)."""
    keys = make_keys("k1")
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(keys.private.public_key()))
    jwk.update(kid="k1", alg="RS256", use="sig")

    async def serve(_: web.Request) -> web.Response:
        return web.json_response({"keys": [jwk]})

    app = web.Application()
    app.router.add_get("/.well-known/jwks.json", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}/.well-known/jwks.json", keys
    await runner.cleanup()


@pytest.fixture
async def world(db_url: str, jwks: tuple[str, Keys]) -> AsyncIterator[World]:
    ledger = await open_ledger(db_url)
    verifier = Verifier(SystemClock(), [SECRET], jwks_url=jwks[0])
    server = InboxServer(
        ledger, verifier, port=0, limit=RateLimit(rate=1000, burst=1000), max_body=4096
    )
    await server.start()
    async with aiohttp.ClientSession() as session:
        yield World(ledger, server, session)
    await server.stop()
    await ledger.close()


async def test_a_signed_delivery_is_kept_once_and_answered_200(world: World) -> None:
    body = event_body()
    status, answer = await world.post(body, hmac_headers(body, "msg_1"))
    assert (status, answer) == (200, {"kept": True})
    # Kept; it names no job of this ledger (no row "job-1"): not news of any (issue 22).
    assert await world.kept() == [("msg_1", "int-1", None, "hmac")]
    # The API retries a delivery it thinks failed: acknowledged, nothing changes.
    status, answer = await world.post(body, hmac_headers(body, "msg_1"))
    assert (status, answer) == (200, {"kept": False})
    assert len(await world.kept()) == 1 and world.server.duplicates == 1


async def test_forged_deliveries_are_refused_and_nothing_is_written(world: World) -> None:
    body = event_body()
    cases = [
        hmac_headers(body, "msg_f1", secret=OTHER_SECRET),  # another secret
        {**hmac_headers(body, "msg_f2"), "webhook-signature": "v1,AAAA"},
        {**hmac_headers(body, "msg_f3"), "webhook-signature": "garbage"},
        {k: v for k, v in hmac_headers(body, "msg_f4").items() if k != "webhook-signature"},
        {**hmac_headers(body, "msg_f5"), "webhook-timestamp": "soon"},
    ]
    for headers in cases:
        status, _ = await world.post(body, headers)
        assert status == 401, headers
    # A good signature over another body (the body was altered in transit).
    headers = hmac_headers(event_body(interaction="int-2"), "msg_f6")
    assert (await world.post(body, headers))[0] == 401
    assert await world.kept() == []
    await world.server.flush()
    counters = dict(await world.ledger.select("SELECT name, value FROM inbox_counters"))
    assert sum(counters.values()) == 6 and counters["refused:bad-signature"] >= 3


async def test_stale_and_replayed_deliveries_are_refused(world: World) -> None:
    body = event_body()
    old = time.time() - 600
    assert (await world.post(body, hmac_headers(body, "msg_s1", at=old)))[0] == 401
    future = time.time() + 600
    assert (await world.post(body, hmac_headers(body, "msg_s2", at=future)))[0] == 401
    # A captured delivery replayed later: the same signature, a newer timestamp.
    headers = hmac_headers(body, "msg_s3", at=old)
    headers["webhook-timestamp"] = str(int(time.time()))
    assert (await world.post(body, headers))[0] == 401
    assert await world.kept() == []
    assert world.server.refused["stale"] == 2 and world.server.refused["bad-signature"] == 1


async def test_dynamic_webhooks_jwt_is_checked_against_the_jwks(
    world: World, jwks: tuple[str, Keys]
) -> None:
    _, keys = jwks
    body = event_body(interaction="int-9", key="job-9")
    status, _ = await world.post(body, jwt_headers(body, "msg_j1", keys))
    assert status == 200
    assert await world.kept() == [("msg_j1", "int-9", None, "jwt")]
    stranger = make_keys("k1")  # the same kid, another key: a forgery
    refused = [
        jwt_headers(body, "msg_j2", stranger),
        jwt_headers(body, "msg_j3", keys, body_sha256="0" * 64),  # issued for another body
        jwt_headers(body, "msg_j4", keys, sub="msg_other"),  # issued for another delivery
        jwt_headers(body, "msg_j5", keys, exp=int(time.time()) - 10),  # expired
        jwt_headers(body, "msg_j6", make_keys("unknown-kid")),
    ]
    for headers in refused:
        assert (await world.post(body, headers))[0] == 401, headers
    unsigned = jwt.encode({"exp": int(time.time()) + 60}, "k" * 32, algorithm="HS256")
    headers = {
        "webhook-id": "msg_j7",
        "webhook-timestamp": str(int(time.time())),
        "webhook-signature": unsigned,
    }
    assert (await world.post(body, headers))[0] == 401  # alg confusion: HS256 is not accepted
    assert len(await world.kept()) == 1


async def test_too_big_too_fast_and_not_an_event(world: World) -> None:
    big = b'{"type": "interaction.completed", "pad": "' + b"x" * 8192 + b'"}'
    assert (await world.post(big, hmac_headers(big, "msg_b1")))[0] == 413
    junk = b"[1, 2, 3]"
    assert (await world.post(junk, hmac_headers(junk, "msg_b2")))[0] == 400
    world.server.limit = RateLimit(rate=0.001, burst=2)
    body = event_body()
    codes = [(await world.post(body, hmac_headers(body, f"msg_r{n}")))[0] for n in range(4)]
    assert codes == [200, 200, 429, 429]
    assert len(await world.kept()) == 2


async def test_an_event_makes_its_row_due_at_once(world: World) -> None:
    from reclaim_tui.core.models import Actor

    far = time.time() + 3600
    await world.ledger.insert_jobs([("job-a", '{"input":"a","model":"m"}', "m")], Actor.TICK)
    await world.ledger.insert_jobs([("job-b", '{"input":"b","model":"m"}', "m")], Actor.TICK)
    async with world.ledger.write() as db:
        await db.execute(
            Sql(
                lambda d: (
                    f"UPDATE jobs SET status='submitted', handle='int-a', next_at={d.p} WHERE"
                    " idem='job-a'"
                )
            ),
            (far,),
        )
        await db.execute(
            Sql(
                lambda d: (
                    f"UPDATE jobs SET inflight=1, attempts=1, sent_at={d.p}, next_at={d.p} WHERE"
                    " idem='job-b'"
                )
            ),
            (far - 7200, far),
        )
    body = event_body(interaction="int-a", key="job-a")
    assert (await world.post(body, hmac_headers(body, "msg_d1")))[0] == 200
    # An event of another attempt of job-b (an earlier one, retried since): no news.
    stale = event_body(interaction="int-b0", key="job-b", attempt=attempt_tag(1, far - 9000))
    assert (await world.post(stale, hmac_headers(stale, "msg_d0")))[0] == 200
    due = dict(await world.ledger.select("SELECT idem, next_at FROM jobs"))
    assert due["job-b"] == far
    # The create's answer was lost: its event names the current attempt.
    body = event_body(interaction="int-b", key="job-b", attempt=attempt_tag(1, far - 7200))
    assert (await world.post(body, hmac_headers(body, "msg_d2")))[0] == 200
    due = dict(await world.ledger.select("SELECT idem, next_at FROM jobs"))
    assert due["job-a"] < far and due["job-b"] < far


# -- the engine's side (fake backend, manual clock) ---------------------------------------
async def _engine_world(  # type: ignore[no-untyped-def]
    tmp_path: Path, db_url: str, grace: float = 300.0
):
    from reclaim_tui.core.clock import ManualClock
    from reclaim_tui.core.engine.engine import Engine, EngineConfig
    from reclaim_tui.core.fakes import FakeBackend
    from reclaim_tui.core.sinks import DirectorySink

    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=None, supports_lookup=False)
    config = EngineConfig(webhooks=True, webhook_grace=grace, first_poll=120.0)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config, owner="t|1|x")
    return clock, ledger, fake, engine


def _event(
    wid: str, interaction: str, key: str | None, at: float, attempt: str | None = None
) -> inbox.InboxEvent:
    return inbox.InboxEvent(
        wid, at, "interaction.completed", interaction, key, "completed", "hmac", attempt
    )


async def test_an_event_naming_an_orphan_adopts_its_interaction_no_second_create(
    tmp_path: Path, db_url: str
) -> None:
    from reclaim_tui.core.keys import idempotency_key
    from reclaim_tui.core.models import JobSpec, Status
    from reclaim_tui.errors import MaybeCreatedError

    clock, ledger, fake, engine = await _engine_world(tmp_path, db_url)
    try:
        job = JobSpec(input="lost answer", model="m")
        idem = idempotency_key(job)
        fake.create_faults = [(MaybeCreatedError("connection reset after send"), True)]
        await engine.tick([job])
        assert (await ledger.get(idem)).status == Status.RESERVING  # type: ignore[union-attr]
        clock.advance(30)
        await engine.tick()  # no event yet: the orphan waits out the grace, no create
        assert fake.calls["create"] == 1
        handle = fake.handle_for(idem)
        fake.finish(handle)
        attempt = fake.remotes[handle].attempt
        await inbox.record(ledger, _event("msg_1", handle, idem, clock.now(), attempt))
        await engine.tick()  # adopted from the event, polled, delivered
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.CONSUMED and row.handle == handle
        assert fake.calls["create"] == 1 and row.duplicates == 0
        notes = [e.note for e in await ledger.events(idem)]
        assert any("found by webhook event msg_1" in n for n in notes), notes
    finally:
        await ledger.close()


async def test_without_an_event_the_orphan_waits_the_grace_then_resubmits_recorded(
    tmp_path: Path, db_url: str
) -> None:
    from reclaim_tui.core.keys import idempotency_key
    from reclaim_tui.core.models import JobSpec
    from reclaim_tui.errors import MaybeCreatedError

    clock, ledger, fake, engine = await _engine_world(tmp_path, db_url, grace=300.0)
    try:
        job = JobSpec(input="never heard of", model="m")
        idem = idempotency_key(job)
        fake.create_faults = [(MaybeCreatedError("timeout after send"), True)]
        await engine.tick([job])
        clock.advance(299)
        await engine.tick()
        assert fake.calls["create"] == 1  # "no event yet" is no proof
        clock.advance(2)
        await engine.tick()
        row = await ledger.get(idem)
        assert fake.calls["create"] == 2 and row is not None and row.duplicates == 1
    finally:
        await ledger.close()


async def test_events_wake_rows_and_polls_are_the_rare_fallback(
    tmp_path: Path, db_url: str
) -> None:
    """One create and one get per job when the events come, none of the
    fallback polls (first at 120 s of age) — even for a job whose event
    came before its create's answer was committed."""
    from reclaim_tui.core.keys import idempotency_key
    from reclaim_tui.core.models import JobSpec, RemoteInteraction, Status

    clock, ledger, fake, engine = await _engine_world(tmp_path, db_url)
    create = fake.create

    async def fast_job(spec: JobSpec, idem: str) -> RemoteInteraction:
        out = await create(spec, idem)
        if spec.input == "job 0":  # done, and its event kept, before the answer
            fake.finish(out.id)
            await inbox.record(ledger, _event(f"msg_{out.id}", out.id, idem, clock.now()))
        return out

    fake.create = fast_job  # type: ignore[method-assign]
    try:
        jobs = [JobSpec(input=f"job {n}", model="m") for n in range(5)]
        report = await engine.tick(jobs)
        assert report.counts["woken"] == 1
        first = await ledger.get(idempotency_key(jobs[0]))
        assert first is not None and first.status == Status.CONSUMED
        clock.advance(10)
        for job in jobs[1:]:
            handle = fake.handle_for(idempotency_key(job))
            fake.finish(handle)
            await inbox.record(ledger, _event(f"msg_{handle}", handle, None, clock.now()))
        await engine.tick()
        rows = {r.idem: r async for r in ledger.iter_rows()}
        assert all(r.status == Status.CONSUMED for r in rows.values())
        assert fake.calls["create"] == 5 and fake.calls["get"] == 5
    finally:
        await ledger.close()


async def test_the_console_reads_the_inbox_and_which_rows_an_event_completed(
    tmp_path: Path, db_url: str
) -> None:
    from reclaim_tui.core.keys import idempotency_key
    from reclaim_tui.core.ledger.console.queries import ConsoleReader
    from reclaim_tui.core.models import JobSpec
    from reclaim_tui.tui.format import inbox_text
    from reclaim_tui.tui.widgets.detail_pane import render_detail

    clock, ledger, fake, engine = await _engine_world(tmp_path, db_url)
    try:
        jobs = [JobSpec(input="by event", model="m"), JobSpec(input="by poll", model="m")]
        await engine.tick(jobs)
        by_event, by_poll = (idempotency_key(j) for j in jobs)
        for idem in (by_event, by_poll):
            fake.finish(fake.handle_for(idem))
        handle = fake.handle_for(by_event)
        await inbox.record(ledger, _event("msg_e", handle, by_event, clock.now()))
        await inbox.count(ledger, {"refused:bad-signature": 2}, clock.now())
        clock.advance(200)  # the fallback poll collects the other one
        await engine.tick()
    finally:
        await ledger.close()
    reader = await ConsoleReader.open(db_url, clock=clock)
    try:
        seen = await reader.inbox()
        assert (seen.last_minute, seen.refused) == (0, 2)
        assert inbox_text(seen, clock.now()) == "inbox 0/min · last 3m20s ago · 2 refused"
        texts = {}
        for idem in (by_event, by_poll):
            detail = await reader.detail(idem)
            assert detail is not None
            texts[idem] = render_detail(detail, clock.now()).plain
        assert "completed by a webhook event" in texts[by_event]
        assert "completed by a poll" in texts[by_poll]
    finally:
        await reader.close()


async def test_an_orphan_held_before_its_event_came_is_adopted_when_it_comes(
    tmp_path: Path, db_url: str
) -> None:
    import dataclasses

    from reclaim_tui.core.keys import idempotency_key
    from reclaim_tui.core.models import JobSpec, OrphanPolicy, Status
    from reclaim_tui.errors import MaybeCreatedError

    clock, ledger, fake, engine = await _engine_world(tmp_path, db_url, grace=60.0)
    engine.config = dataclasses.replace(engine.config, orphan_policy=OrphanPolicy.HOLD)
    try:
        job = JobSpec(input="a long one", model="m")
        idem = idempotency_key(job)
        fake.create_faults = [(MaybeCreatedError("reset after send"), True)]
        await engine.tick([job])
        clock.advance(61)
        await engine.tick()  # past the grace, no event: held for an operator
        row = await ledger.get(idem)
        assert row is not None and row.held and row.status == Status.RESERVING
        handle = fake.handle_for(idem)
        fake.finish(handle)
        clock.advance(5)  # the event comes after the hold
        attempt = fake.remotes[handle].attempt
        await inbox.record(ledger, _event("msg_late", handle, idem, clock.now(), attempt))
        await engine.tick()
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.CONSUMED and row.handle == handle
        assert fake.calls["create"] == 1
    finally:
        await ledger.close()


async def test_the_inbox_registers_itself_with_its_counts(world: World) -> None:
    """Issue 25: the inbox is in the fleet — up while it serves, its counts,
    stopped at a clean exit (core/ledger/registry.py)."""
    body = event_body()
    assert (await world.post(body, hmac_headers(body, "msg_r1")))[0] == 200
    stop = asyncio.Event()
    serving = asyncio.create_task(keep_registered(world.ledger, world.server, stop))

    async def registered() -> list[tuple[Any, ...]]:
        return await world.ledger.select("SELECT kind, state, interval_s, last_pass FROM processes")

    async with asyncio.timeout(30):
        while not await registered():  # noqa: ASYNC110 — the task's first write
            await asyncio.sleep(0.01)
    assert [r[:3] for r in await registered()] == [("inbox", "up", BEAT)]
    stop.set()
    await asyncio.wait_for(serving, 30)
    assert await registered() == [("inbox", "stopped", BEAT, "accepted=1 redeliveries=0 refused=0")]
