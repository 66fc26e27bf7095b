"""A hostile review of the webhook inbox (issue 12): forged, odd and poison
deliveries against the receiver, and events that name the wrong thing
against the engine's adoption path.

Tests marked `# FINDING n:` each showed a defect (they failed on the first
version of the inbox and pass since its fix); the others pin behaviour that
held up under attack. Nothing here asserts wall
clock time: ordering and counts only, with generous timeouts.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest
from aiohttp import web

from reclaim_tui.core.clock import ManualClock, SystemClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import GonePolicy, JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import LedgerError, MaybeCreatedError, NotCreatedError
from reclaim_tui.inbox.limits import RateLimit
from reclaim_tui.inbox.server import InboxServer
from reclaim_tui.inbox.verify import Refused, Verifier
from tests.unit.test_inbox import (
    OTHER_SECRET,
    SECRET,
    Keys,
    event_body,
    hmac_headers,
    jwt_headers,
    make_keys,
)

# =========================================================================================
# The engine's side: events that name the wrong interaction
# =========================================================================================


@dataclasses.dataclass
class EngineWorld:
    clock: ManualClock
    ledger: Ledger
    fake: FakeBackend
    engine: Engine


@pytest.fixture
async def ew(tmp_path: Path, db_url: str) -> AsyncIterator[EngineWorld]:
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=None, supports_lookup=False)
    config = EngineConfig(webhooks=True, webhook_grace=300.0, first_poll=120.0)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config, owner="t|1|x")
    try:
        yield EngineWorld(clock, ledger, fake, engine)
    finally:
        await ledger.close()


def _event(
    wid: str, interaction: str | None, key: str | None, at: float, attempt: str | None = None
) -> inbox.InboxEvent:
    return inbox.InboxEvent(
        wid, at, "interaction.completed", interaction, key, "completed", "jwt", attempt
    )


async def _orphan(w: EngineWorld, text: str) -> tuple[str, str]:
    """A job whose create reached the API but whose answer was lost: (idem, real handle)."""
    job = JobSpec(input=text, model="m")
    idem = idempotency_key(job)
    w.fake.create_faults = [(MaybeCreatedError("connection reset after send"), True)]
    await w.engine.tick([job])
    row = await w.ledger.get(idem)
    assert row is not None and row.status == Status.RESERVING and row.inflight
    return idem, w.fake.handle_for(idem)


async def test_an_event_naming_another_rows_interaction_is_skipped_and_ticks_go_on(
    ew: EngineWorld,
) -> None:
    # FINDING 1: a (verified) event whose user_metadata names job K1 but whose
    # interaction id is already job K2's handle makes orphan recovery write
    # K1.handle = K2's handle; jobs.handle is UNIQUE, so the batch's
    # transaction raises LedgerConflictError out of Engine.tick — on every
    # tick, because the event stays in the inbox and `named` returns it each
    # time. One bad event stops the engine for every job (recovery runs first).
    # The engine must verify an event's interaction before adopting it (get it
    # and check labels.idem, as operator.adopt does) and skip, not crash on,
    # one that belongs to another row.
    other = JobSpec(input="an innocent job", model="m")
    await ew.engine.tick([other])
    k2 = await ew.ledger.get(idempotency_key(other))
    assert k2 is not None and k2.status == Status.SUBMITTED and k2.handle
    k1, real = await _orphan(ew, "the orphan")
    await inbox.record(ew.ledger, _event("msg_poison", k2.handle, k1, ew.clock.now()))
    ew.fake.finish(real)
    report = await ew.engine.tick()  # raises LedgerConflictError today
    assert report is not None
    await ew.engine.tick()
    row = await ew.ledger.get(k1)
    assert row is not None and row.handle != k2.handle
    again = await ew.ledger.get(k2.idem)
    assert again is not None and again.handle == k2.handle


async def test_an_event_with_a_bogus_interaction_is_checked_and_sends_nothing(
    ew: EngineWorld,
) -> None:
    # FINDING 2: an event naming the orphan's key with an interaction id that
    # does not exist (a replayed JWT without body_sha256, a mis-routed event
    # from another ledger with the same job) is adopted without a look: the
    # next poll gets 404, `gone` resubmits at once — a second create inside
    # --webhook-grace, while the orphan's real interaction is still running
    # and its own event has not come yet. "No event yet" was supposed to keep
    # the orphan waiting; a bogus event makes it spend instead.
    idem, _real = await _orphan(ew, "still running")
    await inbox.record(ew.ledger, _event("msg_bogus", "int-does-not-exist", idem, ew.clock.now()))
    await ew.engine.tick()
    await ew.engine.tick()
    assert ew.fake.calls["create"] == 1, "a bogus event made the engine resend the orphan"
    row = await ew.ledger.get(idem)
    assert row is not None and row.handle != "int-does-not-exist"
    assert row.duplicates == 0


async def test_the_event_a_get_confirms_is_adopted_whatever_came_first(
    ew: EngineWorld,
) -> None:
    # FINDING 3: `inbox.named` returns the first event naming the job. When the
    # first one's interaction is gone/bogus and a later event names the job's
    # real, completed interaction, recovery still adopts the first, gets 404,
    # and resends (a duplicate spend) — the real result is never collected.
    # `named` should offer every candidate (newest first, or excluding
    # interactions this row already found gone) and the engine should take
    # the first one a `get` confirms.
    idem, real = await _orphan(ew, "two events")
    # Both name the orphan's current attempt: an event that names none is not
    # news of this attempt at all (issue 22.1).
    row = await ew.ledger.get(idem)
    assert row is not None
    tag = row.attempt_tag
    await inbox.record(ew.ledger, _event("msg_old", "int-gone", idem, ew.clock.now(), tag))
    ew.clock.advance(1)
    ew.fake.finish(real)
    await inbox.record(ew.ledger, _event("msg_real", real, idem, ew.clock.now(), tag))
    await ew.engine.tick()
    await ew.engine.tick()
    row = await ew.ledger.get(idem)
    assert row is not None
    assert (row.status, row.handle) == (Status.CONSUMED, real)
    assert ew.fake.calls["create"] == 1 and row.duplicates == 0


async def test_on_gone_hold_holds_against_the_gone_interactions_own_event(
    ew: EngineWorld,
) -> None:
    # FINDING 4: with --on-gone hold, a 404 takes the row back to reserving,
    # held for an operator (inflight=1, held=1, handle NULL). The gone
    # interaction's own completion event (it did complete: that is why the
    # event came) names the job, so `held_named` force-adopts the very
    # interaction that just 404ed; the poll 404s again and the row is held
    # again — every tick, forever: one wasted get per tick, an event-log line
    # per flip, and the operator's hold never sticks. `held_named`/`named`
    # must skip an interaction the row already found gone.
    # retention=0: the 404 comes past the API's retention, where --on-gone applies.
    ew.engine.config = dataclasses.replace(ew.engine.config, on_gone=GonePolicy.HOLD, retention=0.0)
    job = JobSpec(input="collected too late", model="m")
    idem = idempotency_key(job)
    await ew.engine.tick([job])
    handle = ew.fake.handle_for(idem)
    ew.fake.finish(handle)
    await inbox.record(ew.ledger, _event("msg_done", handle, idem, ew.clock.now()))
    ew.fake.forget(handle)  # the provider dropped it before we collected the result
    await ew.engine.tick()
    row = await ew.ledger.get(idem)
    assert row is not None and row.held and row.status == Status.RESERVING
    gets = ew.fake.calls["get"]
    for _ in range(3):
        ew.clock.advance(60)
        await ew.engine.tick()
    row = await ew.ledger.get(idem)
    assert row is not None and row.held and row.status == Status.RESERVING
    notes = [e.note for e in await ew.ledger.events(idem)]
    adoptions = [n for n in notes if "orphan adopted" in n]
    assert adoptions == [], adoptions
    assert ew.fake.calls["get"] == gets


async def test_an_event_naming_a_row_not_in_flight_keeps_its_retry_after(
    ew: EngineWorld,
) -> None:
    # FINDING 10: `record` makes due any `reserving` row the event's
    # user_metadata names — also one that is NOT in flight (inflight=0): a
    # create the API refused with 429 + Retry-After, or a row in backoff.
    # The event cannot concern that row's current attempt (none is out), so
    # the only effect is that the next pass sends a create at once, ignoring
    # the API's Retry-After (and any attacker able to get an event delivered
    # can make the engine hammer a rate-limited API). `record` should wake
    # only `inflight = 1` rows (orphans), as its docstring says.
    job = JobSpec(input="rate limited", model="m")
    idem = idempotency_key(job)
    refused = NotCreatedError(
        "429 slow down", 429, retryable=True, cause="rate_limit", retry_after=600.0
    )
    ew.fake.create_faults = [refused]
    await ew.engine.tick([job])
    row = await ew.ledger.get(idem)
    assert row is not None and row.status == Status.RESERVING and not row.inflight
    wait_until = row.next_at
    assert wait_until > ew.clock.now() + 60
    await inbox.record(ew.ledger, _event("msg_x", "int-old", idem, ew.clock.now()))
    row = await ew.ledger.get(idem)
    assert row is not None and row.next_at == wait_until
    ew.clock.advance(1)
    await ew.engine.tick()
    assert ew.fake.calls["create"] == 1


@pytest.mark.parametrize("status", ["done", "consumed", "failed", "cancelled", "submitted"])
async def test_an_event_for_a_settled_or_other_handle_row_changes_nothing(
    ew: EngineWorld, status: str
) -> None:
    job = JobSpec(input=f"settled {status}", model="m")
    idem = idempotency_key(job)
    await ew.engine.tick([job])
    far = ew.clock.now() + 9999
    async with ew.ledger.write() as db:
        await db.execute(
            Sql(
                lambda d: (
                    f"UPDATE jobs SET status = {d.p}, handle = 'int-mine', next_at = {d.p} WHERE"
                    f" idem = {d.p}"
                )
            ),
            (status, far, idem),
        )
    before = await ew.ledger.get(idem)
    await inbox.record(ew.ledger, _event("msg_s", "int-someone-else", idem, ew.clock.now()))
    await ew.engine.tick()
    after = await ew.ledger.get(idem)
    assert before is not None and after is not None
    assert (after.status, after.handle, after.next_at) == (before.status, "int-mine", far)


async def test_an_event_for_an_orphan_whose_lease_is_held_elsewhere_is_not_adopted(
    ew: EngineWorld,
) -> None:
    idem, real = await _orphan(ew, "leased elsewhere")
    ew.clock.advance(1000)
    async with ew.ledger.write() as db:  # another live host's create is in flight
        await db.execute(
            Sql(
                lambda d: (
                    f"UPDATE jobs SET lease_owner = 'other-host|4242|y', lease_until = {d.p}"
                    f" WHERE idem = {d.p}"
                )
            ),
            (ew.clock.now() + 3600, idem),
        )
    await inbox.record(ew.ledger, _event("msg_l", real, idem, ew.clock.now()))
    await ew.engine.tick()
    row = await ew.ledger.get(idem)
    assert row is not None and row.status == Status.RESERVING and row.handle is None
    assert row.lease_owner == "other-host|4242|y"


# =========================================================================================
# The receiver: forged, odd and hostile deliveries over real HTTP
# =========================================================================================


class Jwks:
    """A JWKS endpoint the test steers: `mode` is "ok", "garbage" or "hang"."""

    def __init__(self, keys: Keys) -> None:
        self.keys = keys
        self.mode = "ok"
        self.fetches = 0
        self.release = asyncio.Event()
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(keys.private.public_key()))
        jwk.update(kid=keys.kid, alg="RS256", use="sig")
        self.doc = {"keys": [jwk]}
        self.url = ""

    async def serve(self, _: web.Request) -> web.Response:
        self.fetches += 1
        if self.mode == "garbage":
            return web.Response(text="<html>not a key set</html>", content_type="text/html")
        if self.mode == "hang":
            await self.release.wait()
        return web.json_response(self.doc)


@dataclasses.dataclass
class Inbox:
    ledger: Ledger
    server: InboxServer
    session: aiohttp.ClientSession
    jwks: Jwks

    async def post(self, body: bytes, headers: Any) -> tuple[int, Any]:
        async with self.session.post(self.server.url, data=body, headers=headers) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text

    async def kept(self) -> list[tuple[Any, ...]]:
        return await self.ledger.select("SELECT webhook_id, interaction, job, signed_by FROM inbox")


async def _serve_jwks(jwks: Jwks) -> web.AppRunner:
    app = web.Application()
    app.router.add_get("/.well-known/jwks.json", jwks.serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    jwks.url = f"http://127.0.0.1:{port}/.well-known/jwks.json"
    return runner


@pytest.fixture
async def box(db_url: str) -> AsyncIterator[Inbox]:
    jwks = Jwks(make_keys("k1"))
    runner = await _serve_jwks(jwks)
    ledger = await open_ledger(db_url, busy_timeout=0.2)
    verifier = Verifier(SystemClock(), [SECRET], jwks_url=jwks.url)
    server = InboxServer(
        ledger, verifier, port=0, limit=RateLimit(rate=10_000, burst=10_000), max_body=8192
    )
    await server.start()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        try:
            yield Inbox(ledger, server, session, jwks)
        finally:
            jwks.release.set()
    await server.stop()
    await ledger.close()
    await runner.cleanup()


def _multi(pairs: list[tuple[str, str]]) -> Any:
    from multidict import CIMultiDict

    return CIMultiDict(pairs)


async def test_header_case_duplicates_and_signature_lists(box: Inbox) -> None:
    body = event_body(interaction="int-h", key="job-h")
    shouting = {k.upper(): v for k, v in hmac_headers(body, "msg_case").items()}
    assert (await box.post(body, shouting))[0] == 200
    # Standard Webhooks: several space-separated signatures; one good is enough.
    good = hmac_headers(body, "msg_list")
    listed = {**good, "webhook-signature": "v1,AAAA " + good["webhook-signature"] + " v2,zz"}
    assert (await box.post(body, listed))[0] == 200
    # A second webhook-signature header with a bad value: fail closed.
    good = hmac_headers(body, "msg_dup_sig")
    pairs = [*good.items(), ("webhook-signature", "v1,AAAA")]
    assert (await box.post(body, _multi(pairs)))[0] == 401
    # Two webhook-id headers: whatever is kept is the id the signature covers.
    signed = hmac_headers(body, "msg_signed")
    pairs = [("webhook-id", "msg_unsigned"), *signed.items()]
    status, _ = await box.post(body, _multi(pairs))
    ids = {r[0] for r in await box.kept()}
    assert "msg_unsigned" not in ids
    assert status == 401 or "msg_signed" in ids
    # An over-long header is refused by aiohttp itself or by the verifier.
    long = {**hmac_headers(body, "msg_long"), "webhook-signature": "v1," + "A" * 9000}
    assert (await box.post(body, long))[0] in (400, 401, 431)
    assert "msg_long" not in {r[0] for r in await box.kept()}


async def test_jwt_alg_none_no_kid_and_a_kid_that_points_nowhere(box: Inbox) -> None:
    body = event_body(interaction="int-n", key="job-n")
    now = int(time.time())
    claims = {"exp": now + 300, "sub": "msg_none"}
    none = jwt.encode(claims, "", algorithm="none", headers={"kid": "k1"})
    no_kid = jwt.encode({**claims, "sub": "msg_nokid"}, box.jwks.keys.private, algorithm="RS256")
    odd_kid = jwt.encode(
        {**claims, "sub": "msg_odd"},
        box.jwks.keys.private,
        algorithm="RS256",
        headers={"kid": "../../../etc/passwd"},
    )
    rs512 = jwt.encode(
        {**claims, "sub": "msg_512"},
        box.jwks.keys.private,
        algorithm="RS512",
        headers={"kid": "k1"},
    )
    for wid, token in [
        ("msg_none", none),
        ("msg_nokid", no_kid),
        ("msg_odd", odd_kid),
        ("msg_512", rs512),
    ]:
        headers = {"webhook-id": wid, "webhook-timestamp": str(now), "webhook-signature": token}
        status, _ = await box.post(body, headers)
        assert status == 401, (wid, status)
    assert await box.kept() == []


async def test_a_jwks_endpoint_serving_garbage_is_a_refusal_not_a_500(box: Inbox) -> None:
    # FINDING 9: PyJWKClient.fetch_data does not catch json.JSONDecodeError,
    # so a JWKS endpoint answering 200 with a non-JSON body (a captive portal,
    # an error page from a proxy, a CDN hiccup) raises a bare ValueError out
    # of Verifier.verify; the server only catches `Refused`, so aiohttp
    # answers 500 with a traceback, and the refusal is not counted (the
    # console's "refused" stays at 0 while every dynamic delivery fails).
    # Verifier._check_jwt should turn any exception from the key lookup into
    # Refused("jwks-unreachable").
    box.jwks.mode = "garbage"
    body = event_body(interaction="int-g", key="job-g")
    status, answer = await box.post(body, jwt_headers(body, "msg_g", box.jwks.keys))
    assert box.jwks.fetches >= 1
    assert status == 401, (status, answer)
    assert box.server.refused["jwks-unreachable"] == 1
    assert await box.kept() == []


async def test_a_hanging_jwks_does_not_stall_hmac_deliveries(box: Inbox) -> None:
    box.jwks.mode = "hang"
    body = event_body(interaction="int-w", key="job-w")
    waiting = asyncio.ensure_future(box.post(body, jwt_headers(body, "msg_w", box.jwks.keys)))
    await _until(lambda: box.jwks.fetches >= 1)
    hmac_body = event_body(interaction="int-hm", key="job-hm")
    status, _ = await asyncio.wait_for(box.post(hmac_body, hmac_headers(hmac_body, "msg_hm")), 30)
    assert status == 200 and not waiting.done()
    box.jwks.release.set()
    assert (await asyncio.wait_for(waiting, 30))[0] in (200, 401)


async def test_a_cached_keys_delivery_is_answered_while_a_jwks_refresh_hangs(
    box: Inbox,
) -> None:
    # FINDING 7: every JWT check runs `PyJWKClient.get_signing_key_from_jwt`
    # via asyncio.to_thread — the loop's default executor, min(32, cpus+4)
    # threads — and PyJWKClient holds one lock across its urllib fetch
    # (timeout 5 s, serially per waiter). When the cached key set expires
    # (every 300 s) while the JWKS endpoint is slow, a burst of tokens with
    # unknown kids (anyone can send them; the rate limit allows 200 per
    # address) fills the executor with threads parked on that lock; a genuine
    # delivery signed by a key already cached then waits for a thread behind
    # all of them: N x 5 s, far past the sender's timeout. Suggested fix
    # (verify.py, Verifier._check_jwt): keep the keys in the Verifier's own
    # dict and answer a known kid on the loop without a thread; refresh with
    # single flight on a dedicated 1-thread executor (or aiohttp), and refuse
    # unknown kids at once while a refresh is in flight.
    body = event_body(interaction="int-c", key="job-c")
    assert (await box.post(body, jwt_headers(body, "msg_c1", box.jwks.keys)))[0] == 200
    keys = box.server.verifier._keys
    assert keys is not None and "k1" in keys.keys
    keys.fetched_at = float("-inf")  # five minutes later: the cached set has expired
    box.jwks.mode = "hang"
    # A delivery signed by the cached key is answered at once and starts the
    # refresh, which hangs.
    again = event_body(interaction="int-c1b", key="job-c")
    assert (await box.post(again, jwt_headers(again, "msg_c1b", box.jwks.keys)))[0] == 200
    await _until(lambda: box.jwks.fetches >= 2)
    verifier = box.server.verifier
    verify = verifier.verify
    entered: list[object] = []

    async def counted(headers: Any, body: bytes) -> Any:
        entered.append(body)
        return await verify(headers, body)

    verifier.verify = counted  # type: ignore[method-assign]
    forged: list[asyncio.Future[tuple[int, Any]]] = []
    # 30: more than the executor's threads (min(32, cpus + 4)), fewer than the
    # connections one client may hold (32, inbox/limits.py ConnectionLimits):
    # here the forger and the API share an address, which they do not in life.
    for n in range(30):
        stranger = make_keys(f"kid-{n}")
        b = event_body(interaction=f"int-f{n}", key="job-c")
        forged.append(asyncio.ensure_future(box.post(b, jwt_headers(b, f"msg_f{n}", stranger))))
    await _until(lambda: len(entered) >= len(forged))  # the burst reached the verifier
    genuine = event_body(interaction="int-c2", key="job-c2")
    try:
        status, _ = await asyncio.wait_for(
            box.post(genuine, jwt_headers(genuine, "msg_c2", box.jwks.keys)), 20
        )
        starved = False
    except TimeoutError:
        starved, status = True, None
    finally:
        box.jwks.release.set()
        await asyncio.wait_for(asyncio.gather(*forged, return_exceptions=True), 120)
    assert not starved, "a delivery signed by a cached key waited behind forged ones"
    assert status == 200


async def test_a_jwt_binding_neither_delivery_nor_body_is_refused_on_replay(box: Inbox) -> None:
    # FINDING 5: verify.py says that without `body_sha256` "the webhook-id
    # dedup and the timestamp window are what remain" — but neither is bound
    # to the token: `webhook-id` and `webhook-timestamp` are plain headers the
    # sender picks. A token captured once (a proxy's debug log, a shared trace)
    # and lacking `sub`/`body_sha256` — the real API's claims are not
    # documented — can be replayed under a fresh id and timestamp with any
    # body (any job key, any interaction id) until its `exp`; with findings
    # 1-3 that is enough to wedge the engine or make it resend. Suggested fix
    # (Verifier._check_jwt): refuse a token that binds neither `sub` nor
    # `body_sha256` unless the operator opts in (a flag), and check `iat`
    # against the timestamp window.
    issued_for = event_body(interaction="int-real", key="job-real")
    headers = jwt_headers(issued_for, "msg_orig", box.jwks.keys, sub=None, body_sha256=None)
    assert (await box.post(issued_for, headers))[0] == 200
    forged = event_body(interaction="int-evil", key="job-victim")
    replay = {**headers, "webhook-id": "msg_evil", "webhook-timestamp": str(int(time.time()))}
    status, _ = await box.post(forged, replay)
    assert status == 401
    assert ("msg_evil", "int-evil", "job-victim", "jwt") not in await box.kept()


async def test_odd_bodies_non_utf8_and_a_data_list(box: Inbox) -> None:
    latin = b'{"type":"interaction.completed","data":{"id":"int-\xe9"}}'
    status, answer = await box.post(latin, {**_hmac_raw(latin, "msg_latin")})
    assert (status, answer) == (401, {"error": "bad-body"})
    status, _ = await box.post(latin, jwt_headers(latin, "msg_latin_jwt", box.jwks.keys))
    assert status == 400
    listy = json.dumps({"type": "interaction.completed", "data": [{"id": "int-l"}]}).encode()
    status, _ = await box.post(listy, hmac_headers(listy, "msg_list_data"))
    assert status == 200
    assert await box.kept() == [("msg_list_data", None, None, "hmac")]
    meta = json.dumps(
        {"type": "interaction.completed", "data": {"id": "int-m", "user_metadata": ["x"]}}
    ).encode()
    assert (await box.post(meta, hmac_headers(meta, "msg_meta")))[0] == 200


async def test_a_deeply_nested_verified_body_is_a_400_not_a_500(box: Inbox) -> None:
    # FINDING 11 (minor): json.loads on a verified body nested a few thousand
    # levels deep raises RecursionError, which server._receive does not catch
    # (it catches ValueError): aiohttp answers 500 with a traceback, the
    # sender retries a poison delivery for 24 h, and it is not counted as
    # refused. Catch RecursionError with ValueError in InboxServer._receive.
    deep = b"[" * 4000 + b"]" * 4000  # under the 8 KiB limit of this fixture
    status, _ = await box.post(deep, hmac_headers(deep, "msg_deep"))
    assert status == 400
    assert box.server.refused["not-an-event"] == 1


async def test_the_same_webhook_id_with_another_body_changes_nothing(box: Inbox) -> None:
    first = event_body(interaction="int-1st", key="job-1st")
    assert (await box.post(first, hmac_headers(first, "msg_same")))[1] == {"kept": True}
    second = event_body(interaction="int-2nd", key="job-2nd")
    assert (await box.post(second, hmac_headers(second, "msg_same")))[1] == {"kept": False}
    # The first is kept (no job of that key is in this ledger, so it names none:
    # issue 22.1); the second, under the same webhook-id, changes nothing.
    assert await box.kept() == [("msg_same", "int-1st", None, "hmac")]


async def test_a_locked_ledger_answers_503_keeps_nothing_then_recovers(
    box: Inbox, db_url: str
) -> None:
    # Another process holds the write lock: SQLite's one writer lock, or on
    # PostgreSQL a lock on the inbox table that lets reads through but no write.
    if box.ledger.dialect == "postgres":
        import psycopg

        other: Any = psycopg.connect(db_url)  # a transaction until rolled back
        other.execute("LOCK TABLE reclaim_tui.inbox IN EXCLUSIVE MODE")
    else:
        other = sqlite3.connect(db_url, isolation_level=None, timeout=0)
        other.execute("BEGIN IMMEDIATE")
    try:
        bodies = [event_body(interaction=f"int-{n}", key=f"job-{n}") for n in range(4)]
        posts = [box.post(b, hmac_headers(b, f"msg_busy{n}")) for n, b in enumerate(bodies)]
        answers = await asyncio.wait_for(asyncio.gather(*posts), 60)
        assert [a[0] for a in answers] == [503] * 4
    finally:
        other.rollback()  # sqlite3: ROLLBACK of the BEGIN IMMEDIATE
        other.close()
    assert await box.kept() == []
    body = bodies[0]
    assert (await box.post(body, hmac_headers(body, "msg_busy0")))[1] == {"kept": True}


async def test_logs_carry_no_secret_token_or_body(
    box: Inbox, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    marker = "BODY-MARKER-7f3a"
    payload = {"type": "interaction.completed", "data": {"id": "int-log"}, "pad": marker}
    body = json.dumps(payload).encode()
    token_headers = jwt_headers(body, "msg_log_jwt", box.jwks.keys)
    token = token_headers["webhook-signature"]
    wrong = hmac_headers(body, "msg_log_bad", secret=OTHER_SECRET)
    stale = jwt_headers(body, "msg_log_stale", box.jwks.keys, exp=int(time.time()) - 5)
    for headers in (hmac_headers(body, "msg_log_ok"), token_headers, wrong, stale):
        await box.post(body, headers)
    junk = b'{"nope": "' + marker.encode() + b'"}'
    await box.post(junk, hmac_headers(junk, "msg_log_junk"))
    await box.server.flush()
    text = caplog.text
    secrets = [SECRET, SECRET.removeprefix("whsec_"), OTHER_SECRET.removeprefix("whsec_")]
    for needle in [*secrets, token, token.split(".")[2], marker, wrong["webhook-signature"]]:
        assert needle not in text, needle


def test_the_rate_limit_cannot_be_reset_by_rotating_addresses() -> None:
    # FINDING 8: RateLimit.allow clears EVERY bucket once more than 10,000
    # addresses are tracked, so a flooder that has used up its burst gets a
    # full new one (200) after sending one request from each of 10,001 other
    # addresses — trivial from an IPv6 /64. The limit then bounds nothing.
    # Suggested fix (server.py, RateLimit.allow): evict only buckets that have
    # refilled to `burst` (idle ones), or the least recently seen, never the
    # one being charged; key IPv6 clients by their /64.
    limit = RateLimit(rate=1.0, burst=5.0)
    now = 1000.0
    assert [limit.allow("203.0.113.9", now) for _ in range(6)] == [True] * 5 + [False]
    for n in range(10_002):
        limit.allow(f"2001:db8::{n:x}", now)
    again = sum(limit.allow("203.0.113.9", now) for _ in range(5))
    assert again == 0, f"the flooder got {again} more deliveries without waiting"


def test_the_rate_limit_memory_stays_bounded() -> None:
    limit = RateLimit(rate=1.0, burst=5.0)
    for n in range(30_000):
        limit.allow(f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}", float(n))
    assert len(limit._buckets) <= 10_001


async def test_an_unsigned_request_with_a_huge_timestamp_is_a_401_not_a_500(box: Inbox) -> None:
    # FINDING 6: verify._timestamp does float(int(stamp)) and catches only
    # ValueError; a `webhook-timestamp` of a few hundred digits makes
    # float() raise OverflowError before any signature is checked, so ANY
    # unauthenticated client gets a 500 with a full traceback logged at
    # ERROR by aiohttp (a cheap log flood that is not counted as a refusal
    # and not subject to the once-per-100 log throttle). Catch OverflowError
    # (or bound the length: whole seconds fit in 12 digits) in _timestamp.
    body = b"{}"
    headers = {
        "webhook-id": "msg_big",
        "webhook-timestamp": "9" * 400,
        "webhook-signature": "v1,AA",
    }
    status, _ = await box.post(body, headers)
    assert status == 401
    assert box.server.refused["bad-headers"] == 1


async def test_verifier_refusals_are_refused_never_other_exceptions() -> None:
    verifier = Verifier(SystemClock(), [SECRET], jwks_url=None)
    now = str(int(time.time()))
    cases: list[dict[str, str]] = [
        {},
        {"webhook-id": "a", "webhook-timestamp": "1e9", "webhook-signature": "v1,AA"},
        {"webhook-id": "a", "webhook-timestamp": "NaN", "webhook-signature": "v1,AA"},
        {"webhook-id": "a", "webhook-timestamp": "9" * 5000, "webhook-signature": "v1,AA"},
        {"webhook-id": "a", "webhook-timestamp": now, "webhook-signature": "a.b.c"},
        {"webhook-id": "a", "webhook-timestamp": now, "webhook-signature": "v1,@@@ v1,"},
        {"webhook-id": "x" * 300, "webhook-timestamp": now, "webhook-signature": "v1,AA"},
        {"webhook-id": "a", "webhook-timestamp": now, "webhook-signature": "v1," + "A" * 9000},
    ]
    for headers in cases:
        with pytest.raises(Refused):
            await verifier.verify(headers, b"{}")


# -- helpers ---------------------------------------------------------------------------------
def _hmac_raw(body: bytes, wid: str) -> dict[str, str]:
    """HMAC headers over raw bytes (the library only signs text)."""
    import hashlib
    import hmac as hmac_lib

    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    stamp = str(int(time.time()))
    mac = hmac_lib.new(key, f"{wid}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return {
        "webhook-id": wid,
        "webhook-timestamp": stamp,
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
    }


async def _until(predicate: Callable[[], bool]) -> None:
    """Wait (30 s at most) until `predicate` holds: polled, it is another server's state."""
    async with asyncio.timeout(30):
        while not predicate():  # noqa: ASYNC110 — nothing to wait on but the JWKS server's count
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("kind", ["newer", "foreign"])
async def test_the_inbox_refuses_to_start_on_a_ledger_it_must_not_touch(
    db_url: str, kind: str
) -> None:
    from reclaim_tui.core.ledger.urls import is_database_url
    from reclaim_tui.inbox.command import serve_inbox

    on_pg = is_database_url(db_url)
    if kind == "newer":
        led = await open_ledger(db_url)  # a real ledger, then one from the future
        await led.close()
    if on_pg:
        import psycopg

        from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA_VERSION

        with psycopg.connect(db_url, autocommit=True) as pg:
            if kind == "newer":
                pg.execute(
                    "UPDATE reclaim_tui.meta SET value = %s WHERE key = 'schema'",
                    (str(PG_SCHEMA_VERSION + 1),),
                )
            else:
                pg.execute("CREATE SCHEMA reclaim_tui")
                pg.execute("CREATE TABLE reclaim_tui.payroll (x int)")
    else:
        from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION

        with sqlite3.connect(db_url) as db:
            if kind == "newer":
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
            else:
                db.execute("CREATE TABLE payroll (x)")

    def contents() -> object:
        """Everything a start could have touched: the file's bytes, or the
        schema's tables and their columns (and the version) on the server."""
        if not on_pg:
            return Path(db_url).read_bytes()
        with psycopg.connect(db_url) as pg:
            cols = pg.execute(
                "SELECT table_name, column_name FROM information_schema.columns"
                " WHERE table_schema = 'reclaim_tui' ORDER BY 1, 2"
            ).fetchall()
            meta = pg.execute("SELECT to_regclass('reclaim_tui.meta') IS NOT NULL").fetchone()
            version = (
                pg.execute("SELECT value FROM reclaim_tui.meta").fetchall()
                if meta and meta[0]
                else None
            )
            return cols, version

    before = contents()
    with pytest.raises(LedgerError):
        await asyncio.wait_for(
            serve_inbox(db_url, "127.0.0.1:0", "/hooks", [SECRET], None, None), 30
        )
    assert contents() == before
