"""The emulator's webhooks, seen by a real aiohttp receiver and the real google-genai SDK.

Dynamic webhooks (`webhook_config` on a create) are checked with PyJWT
against the emulator's JWKS; static ones (`client.webhooks.*`) with
`standardwebhooks.Webhook(secret).verify`. Retries, faults and the
disabling of a failing webhook are read from the receiver and from
`/_emulator/webhooks/deliveries`. Waits poll with a generous timeout; no
test measures time.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import jwt
import pytest
from aiohttp import web
from google import genai
from google.genai import _interactions as sdk_errors
from google.genai import types
from google.genai._gaos.types.webhooks import (
    Webhook,
    WebhookListResponse,
    WebhookPingResponse,
    WebhookRotateSigningSecretResponse,
)
from pydantic import BaseModel
from standardwebhooks import Webhook as StandardWebhook
from standardwebhooks.webhooks import WebhookVerificationError

from reclaim_tui.emulator import EmulatorConfig, EmulatorServer, FaultConfig
from reclaim_tui.emulator.webhook_settings import WebhookFaults, WebhookSettings
from tests.helpers.ports import free_port

MODEL = "gemini-3-flash-preview"
#: Quick retries, so a test sees several attempts in well under a second.
FAST = WebhookSettings(backoff_base=0.02, backoff_cap=0.1)
#: Waits poll this often, this many times (30 s in all: generous on a busy machine).
POLL_SECONDS = 0.02
POLLS = 1500
EVENTS: list[Any] = ["interaction.completed"]


# -- a receiver ------------------------------------------------------------------------------
@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """An aiohttp app on loopback that records every POST; `answers` are
    the statuses of the next requests (then 200)."""

    port: int = field(default_factory=free_port)
    answers: list[int] = field(default_factory=list)
    got: list[Received] = field(default_factory=list)
    _runner: web.AppRunner | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _hook(self, request: web.Request) -> web.Response:
        self.got.append(Received(dict(request.headers), await request.read()))
        return web.Response(status=self.answers.pop(0) if self.answers else 200)

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/hook", self._hook)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def wait_for(self, count: int) -> list[Received]:
        await until(lambda: len(self.got) >= count, f"{count} deliveries to {self.uri}")
        return self.got


async def until(check: Callable[[], bool], what: str) -> None:
    for _ in range(POLLS):
        if check():
            return
        await asyncio.sleep(POLL_SECONDS)
    pytest.fail(f"waited in vain for {what}")


async def until_async(check: Callable[[], Awaitable[bool]], what: str) -> None:
    for _ in range(POLLS):
        if await check():
            return
        await asyncio.sleep(POLL_SECONDS)
    pytest.fail(f"waited in vain for {what}")


# -- fixtures --------------------------------------------------------------------------------
def config(
    settings: WebhookSettings = FAST, faults: WebhookFaults | None = None, **more: Any
) -> EmulatorConfig:
    fault_config = FaultConfig(webhooks=faults or WebhookFaults(seed=11))
    more = {"latency": 0.05, "seed": 5, **more}
    return EmulatorConfig(webhooks=settings, faults=fault_config, **more)


@pytest.fixture
async def emu() -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(config()) as server:
        yield server


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    hook = await Receiver().start()
    yield hook
    await hook.stop()


def sdk(emu: EmulatorServer) -> genai.Client:
    options = types.HttpOptions(base_url=emu.base_url)
    return genai.Client(api_key=emu.api_key, http_options=options)


@pytest.fixture
async def client(emu: EmulatorServer) -> AsyncIterator[genai.client.AsyncClient]:
    aio = sdk(emu).aio
    yield aio
    await aio.aclose()


async def admin(emu: EmulatorServer, method: str, path: str, body: Any = None) -> Any:
    async with aiohttp.ClientSession() as session:
        async with session.request(method, f"{emu.base_url}{path}", json=body) as response:
            assert response.status == 200, await response.text()
            return await response.json()


async def admin_finish(emu: EmulatorServer, interaction_id: str, status: str) -> None:
    await admin(emu, "POST", f"/_emulator/interactions/{interaction_id}/finish", {"status": status})


async def deliveries(emu: EmulatorServer) -> dict[str, Any]:
    result: dict[str, Any] = await admin(emu, "GET", "/_emulator/webhooks/deliveries")
    return result


def finish(emu: EmulatorServer, interaction_id: str, status: str = "completed") -> None:
    """End an interaction now (synchronously: its event is queued on return)."""
    emu.store.finish(emu.store.interactions[interaction_id], status, None, None)


async def background(
    client: genai.client.AsyncClient, webhook_config: dict[str, Any] | None = None
) -> str:
    created = await client.interactions.create(
        model=MODEL, input="write a haiku", background=True, webhook_config=webhook_config
    )
    assert created.id is not None
    return created.id


# -- dynamic webhooks ------------------------------------------------------------------------
async def jwks_key(emu: EmulatorServer, token: str) -> Any:
    keys = await admin(emu, "GET", "/.well-known/jwks.json")
    (jwk,) = keys["keys"]
    assert (jwk["kty"], jwk["alg"], jwk["use"]) == ("RSA", "RS256", "sig")
    assert jwt.get_unverified_header(token)["kid"] == jwk["kid"]
    return jwt.PyJWKSet.from_dict(keys)[jwk["kid"]].key


async def test_dynamic_webhook_sends_one_thin_event_signed_with_a_jwt(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    metadata = {"job": "k-1", "attempt": 2}
    interaction_id = await background(client, {"uris": [receiver.uri], "user_metadata": metadata})
    (got,) = await receiver.wait_for(1)
    assert got.json == {
        "type": "interaction.completed",
        "version": "v1",
        "timestamp": got.json["timestamp"],
        "data": {"id": interaction_id, "status": "completed", "user_metadata": metadata},
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", got.json["timestamp"])
    assert b", " not in got.body and b": " not in got.body  # compact JSON
    token = got.headers["webhook-signature"]
    claims = jwt.decode(
        token,
        await jwks_key(emu, token),
        algorithms=["RS256"],
        audience=receiver.uri,
        issuer=emu.base_url,
    )
    assert claims["sub"] == got.headers["webhook-id"]
    assert claims["body_sha256"] == hashlib.sha256(got.body).hexdigest()
    assert claims["exp"] - claims["iat"] == 300
    assert claims["iat"] == int(got.headers["webhook-timestamp"])
    # The payload is thin: the result is read from the interaction itself.
    interaction = await client.interactions.get(interaction_id)
    assert interaction.status == "completed"


async def test_a_jwt_for_another_receiver_or_body_does_not_verify(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    await background(client, {"uris": [receiver.uri]})
    (got,) = await receiver.wait_for(1)
    token = got.headers["webhook-signature"]
    key = await jwks_key(emu, token)
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, key, algorithms=["RS256"], audience="http://elsewhere/hook")
    claims = jwt.decode(token, key, algorithms=["RS256"], audience=receiver.uri)
    assert claims["body_sha256"] != hashlib.sha256(got.body + b" ").hexdigest()
    assert "user_metadata" not in got.json["data"]


async def test_each_uri_gets_its_own_webhook_id(
    emu: EmulatorServer, client: genai.client.AsyncClient
) -> None:
    first, second = await Receiver().start(), await Receiver().start()
    try:
        await background(client, {"uris": [first.uri, second.uri]})
        (a,) = await first.wait_for(1)
        (b,) = await second.wait_for(1)
    finally:
        await first.stop()
        await second.stop()
    assert a.body == b.body
    assert a.headers["webhook-id"] != b.headers["webhook-id"]
    assert (await deliveries(emu))["counters"]["events"] == 1


# -- which statuses send what -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "event"),
    [
        ("failed", "interaction.failed"),
        ("incomplete", "interaction.failed"),
        ("budget_exceeded", "interaction.failed"),
        ("completed", "interaction.completed"),
    ],
)
async def test_each_ending_sends_its_event(receiver: Receiver, status: str, event: str) -> None:
    async with EmulatorServer(config(latency=None)) as emu:
        aio = sdk(emu).aio
        interaction_id = await background(aio, {"uris": [receiver.uri]})
        await admin(
            emu, "POST", f"/_emulator/interactions/{interaction_id}/finish", {"status": status}
        )
        (got,) = await receiver.wait_for(1)
        await aio.aclose()
    assert got.json["type"] == event
    assert got.json["data"] == {"id": interaction_id, "status": status}


async def test_requires_action_sends_one_event(receiver: Receiver) -> None:
    faults = FaultConfig(requires_action_rate=1.0, webhooks=WebhookFaults())
    cfg = EmulatorConfig(latency=0.05, webhooks=FAST, faults=faults)
    async with EmulatorServer(cfg) as emu:
        aio = sdk(emu).aio
        interaction_id = await background(aio, {"uris": [receiver.uri]})
        await receiver.wait_for(1)
        await until(lambda: emu.webhooks.dispatcher.pending == 0, "nothing pending")
        await aio.aclose()
        counters = (await deliveries(emu))["counters"]
    (got,) = receiver.got
    assert got.json["type"] == "interaction.requires_action"
    assert got.json["data"] == {"id": interaction_id, "status": "requires_action"}
    assert counters["events"] == 1 and counters["delivered"] == 1


async def test_a_cancelled_interaction_sends_no_event(receiver: Receiver) -> None:
    async with EmulatorServer(config(latency=None)) as emu:
        aio = sdk(emu).aio
        cancelled = await background(aio, {"uris": [receiver.uri]})
        await aio.interactions.cancel(cancelled)
        marker = await background(aio, {"uris": [receiver.uri]})
        await admin(
            emu, "POST", f"/_emulator/interactions/{marker}/finish", {"status": "completed"}
        )
        (got,) = await receiver.wait_for(1)
        log = await deliveries(emu)
        await aio.aclose()
    assert got.json["data"]["id"] == marker
    assert [m["interaction_id"] for m in log["messages"]] == [marker]
    assert log["counters"]["events"] == 1


# -- retries ---------------------------------------------------------------------------------
async def test_a_500_is_retried_with_the_same_webhook_id(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    receiver.answers = [500, 503]
    await background(client, {"uris": [receiver.uri]})
    got = await receiver.wait_for(3)
    await until(lambda: emu.webhooks.dispatcher.pending == 0, "nothing pending")
    assert len({g.headers["webhook-id"] for g in got}) == 1
    assert len({g.body for g in got}) == 1
    counters = (await deliveries(emu))["counters"]
    assert counters["attempts"] == 3
    assert counters["failed_attempts"] == 2
    assert counters["delivered"] == 1
    assert counters["given_up"] == 0
    assert len(receiver.got) == 3  # nothing more once it was taken


async def test_a_receiver_started_late_still_gets_the_event(
    emu: EmulatorServer, client: genai.client.AsyncClient
) -> None:
    late = Receiver()  # its port is chosen, nothing listens yet: refused
    interaction_id = await background(client, {"uris": [late.uri]})

    async def refused_twice() -> bool:
        attempts = (await deliveries(emu))["attempts"]
        return sum(a["outcome"] == "connection_error" for a in attempts) >= 2

    await until_async(refused_twice, "two refused attempts")
    await late.start()
    try:
        (got,) = await late.wait_for(1)
    finally:
        await late.stop()
    assert got.json["data"]["id"] == interaction_id
    log = await deliveries(emu)
    assert {a["webhook_id"] for a in log["attempts"]} == {got.headers["webhook-id"]}
    assert log["counters"]["delivered"] == 1


async def test_a_delivery_is_given_up_after_max_attempts(receiver: Receiver) -> None:
    settings = WebhookSettings(backoff_base=0.02, backoff_cap=0.05, max_attempts=3)
    async with EmulatorServer(config(settings)) as emu:
        receiver.answers = [500] * 10
        aio = sdk(emu).aio
        await background(aio, {"uris": [receiver.uri]})
        await until(lambda: emu.webhooks.dispatcher.log.counters["given_up"] == 1, "give up")
        await aio.aclose()
        log = await deliveries(emu)
    assert len(receiver.got) == 3
    assert log["counters"]["attempts"] == 3 and log["counters"]["delivered"] == 0
    assert log["per_destination"][receiver.uri]["given_up"] == 1
    assert log["attempts"][-1]["outcome"] == "given_up"


# -- faults ----------------------------------------------------------------------------------
async def test_duplicate_fault_sends_an_event_twice_with_one_id(receiver: Receiver) -> None:
    async with EmulatorServer(config(faults=WebhookFaults(duplicate_rate=1.0))) as emu:
        aio = sdk(emu).aio
        await background(aio, {"uris": [receiver.uri]})
        got = await receiver.wait_for(2)
        await until(lambda: emu.webhooks.dispatcher.pending == 0, "nothing pending")
        await aio.aclose()
        counters = (await deliveries(emu))["counters"]
    assert len(got) == 2
    assert got[0].headers["webhook-id"] == got[1].headers["webhook-id"]
    assert got[0].body == got[1].body
    assert (counters["messages"], counters["duplicates"], counters["delivered"]) == (1, 1, 2)


async def test_drop_fault_loses_attempts_that_are_then_retried(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    await admin(emu, "POST", "/_emulator/webhooks/faults", {"drop_rate": 1.0})
    await background(client, {"uris": [receiver.uri]})
    counters = emu.webhooks.dispatcher.log.counters
    await until(lambda: counters["dropped_attempts"] >= 3, "three lost attempts")
    assert receiver.got == []  # a lost attempt is never sent
    await admin(emu, "POST", "/_emulator/webhooks/faults", {"drop_rate": 0.0})
    (got,) = await receiver.wait_for(1)
    await until(lambda: emu.webhooks.dispatcher.pending == 0, "nothing pending")
    log = await deliveries(emu)
    assert log["counters"]["attempts"] == log["counters"]["dropped_attempts"] + 1
    assert log["counters"]["failed_attempts"] == log["counters"]["dropped_attempts"]
    assert {a["webhook_id"] for a in log["attempts"]} == {got.headers["webhook-id"]}


async def test_reorder_fault_sends_held_events_in_another_order(receiver: Receiver) -> None:
    faults = WebhookFaults(reorder_window=0.3, seed=2)
    async with EmulatorServer(config(faults=faults, latency=None)) as emu:
        aio = sdk(emu).aio
        ids = [await background(aio, {"uris": [receiver.uri]}) for _ in range(8)]
        await aio.aclose()
        for interaction_id in ids:  # in one go: every ending lands in one held batch
            finish(emu, interaction_id)
        got = await receiver.wait_for(8)
        log = await deliveries(emu)
    received = [g.json["data"]["id"] for g in got]
    assert sorted(received) == sorted(ids)
    assert [m["interaction_id"] for m in log["messages"]] == ids  # the events' own order
    assert received != ids
    assert log["counters"]["delivered"] == 8


async def test_faults_are_settable_through_the_admin_api(emu: EmulatorServer) -> None:
    body = {"delay_seconds": 1.5, "duplicate_rate": 0.25, "reorder_window": 2, "drop_rate": 0.1}
    answer = await admin(emu, "POST", "/_emulator/webhooks/faults", {**body, "seed": 4})
    assert answer == {**body, "seed": 4}
    assert emu.store.faults.webhooks == WebhookFaults(1.5, 0.25, 2.0, 0.1, 4)
    whole = await admin(emu, "GET", "/_emulator/faults")
    assert whole["webhooks"]["duplicate_rate"] == 0.25
    await admin(emu, "POST", "/_emulator/faults", {"webhooks": {"drop_rate": 0.5}})
    assert emu.store.faults.webhooks == WebhookFaults(drop_rate=0.5)
    async with aiohttp.ClientSession() as session:
        url = f"{emu.base_url}/_emulator/webhooks/faults"
        async with session.post(url, json={"drop_rate": 2}) as response:
            assert response.status == 400


# -- static webhooks -------------------------------------------------------------------------
def strict(model: type[BaseModel], data: Any) -> Any:
    """`data` parsed by the SDK's model, with no field it does not declare."""

    def walk(value: Any) -> None:
        if isinstance(value, BaseModel):
            assert not value.model_extra, f"{type(value).__name__}: {value.model_extra}"
            for name in type(value).model_fields:
                walk(value.__dict__.get(name))
        elif isinstance(value, list):
            for item in value:
                walk(item)

    parsed = model.model_validate(data)
    walk(parsed)
    return parsed


async def raw(emu: EmulatorServer, method: str, path: str, body: Any = None) -> Any:
    headers = {"x-goog-api-key": emu.api_key or ""}
    async with aiohttp.ClientSession(headers=headers) as session:
        async with session.request(method, f"{emu.base_url}/v1beta{path}", json=body) as r:
            assert r.status == 200, await r.text()
            return await r.json()


def verify(secret: str, got: Received) -> Any:
    return StandardWebhook(secret).verify(got.body, got.headers)


async def test_static_webhook_crud_through_the_sdk(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    events: list[Any] = ["interaction.completed", "interaction.failed"]
    made = await client.webhooks.create(name="inbox", uri=receiver.uri, subscribed_events=events)
    assert isinstance(made, Webhook) and made.id and made.state == "enabled"
    secret = made.new_signing_secret or ""
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert made.signing_secrets and secret not in str(made.signing_secrets)
    fetched = await client.webhooks.get(made.id)
    assert fetched.new_signing_secret is None  # shown once, on create
    assert (fetched.name, fetched.uri, fetched.subscribed_events) == ("inbox", receiver.uri, events)
    listed = await client.webhooks.list()
    assert [w.id for w in listed.webhooks or ()] == [made.id]
    changed = await client.webhooks.update(
        made.id, name="renamed", state="disabled", update_mask="name,state"
    )
    assert (changed.name, changed.state) == ("renamed", "disabled")
    assert await client.webhooks.delete(made.id) is not None
    with pytest.raises(sdk_errors.NotFoundError):
        await client.webhooks.get(made.id)
    assert (await client.webhooks.list()).webhooks == []


async def test_every_webhooks_answer_parses_with_the_sdk_types(
    emu: EmulatorServer, receiver: Receiver
) -> None:
    body = {"name": "n", "uri": receiver.uri, "subscribed_events": EVENTS}
    made = strict(Webhook, await raw(emu, "POST", "/webhooks", body))
    assert made.new_signing_secret and made.create_time and made.update_time
    path = f"/webhooks/{made.id}"
    assert strict(Webhook, await raw(emu, "GET", path)).new_signing_secret is None
    listed = strict(WebhookListResponse, await raw(emu, "GET", "/webhooks?page_size=10"))
    assert [w.id for w in listed.webhooks] == [made.id]
    patched = strict(Webhook, await raw(emu, "PATCH", f"{path}?update_mask=name", {"name": "m"}))
    assert patched.name == "m"
    assert await raw(emu, "POST", f"{path}:ping", {}) == {}
    rotated = await raw(emu, "POST", f"{path}:rotateSigningSecret", {})
    assert strict(WebhookRotateSigningSecretResponse, rotated).secret.startswith("whsec_")
    assert set(rotated) == {"secret"}
    assert await raw(emu, "DELETE", path) == {}  # the SDK parses it as interactions.Empty


async def test_list_pages_through_webhooks(
    emu: EmulatorServer, client: genai.client.AsyncClient
) -> None:
    for n in range(3):
        await client.webhooks.create(uri=f"http://127.0.0.1:9/{n}", subscribed_events=EVENTS)
    first = await client.webhooks.list(page_size=2)
    assert len(first.webhooks or ()) == 2 and first.next_page_token
    rest = await client.webhooks.list(page_size=2, page_token=first.next_page_token)
    assert len(rest.webhooks or ()) == 1 and rest.next_page_token is None


async def test_a_bad_create_is_refused(
    emu: EmulatorServer, client: genai.client.AsyncClient
) -> None:
    for body in (
        {"uri": "not a url", "subscribed_events": ["interaction.completed"]},
        {"uri": "http://127.0.0.1:9/", "subscribed_events": ["interaction.cancelled"]},
        {"uri": "http://127.0.0.1:9/", "subscribed_events": []},
    ):
        with pytest.raises(sdk_errors.BadRequestError):
            await client.webhooks.create(**body)


async def test_static_webhook_gets_subscribed_events_signed_with_its_secret(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    made = await client.webhooks.create(uri=receiver.uri, subscribed_events=EVENTS)
    secret = made.new_signing_secret or ""
    metadata = {"job": "k-7"}
    interaction_id = await background(client, {"user_metadata": metadata})
    (got,) = await receiver.wait_for(1)
    assert verify(secret, got) == {
        "type": "interaction.completed",
        "version": "v1",
        "timestamp": got.json["timestamp"],
        "data": {"id": interaction_id, "status": "completed", "user_metadata": metadata},
    }
    with pytest.raises(WebhookVerificationError):
        StandardWebhook("whsec_" + base64.b64encode(b"x" * 32).decode()).verify(
            got.body, got.headers
        )
    with pytest.raises(WebhookVerificationError):
        StandardWebhook(secret).verify(got.body + b" ", got.headers)


async def test_static_webhook_skips_unsubscribed_and_dynamic_interactions(
    receiver: Receiver,
) -> None:
    async with EmulatorServer(config(latency=None)) as emu:
        aio = sdk(emu).aio
        await aio.webhooks.create(uri=receiver.uri, subscribed_events=["interaction.failed"])
        other = await Receiver().start()
        try:
            completed = await background(aio)
            own_uris = await background(aio, {"uris": [other.uri]})
            failed = await background(aio)
            finish(emu, completed)
            finish(emu, own_uris, "failed")
            finish(emu, failed, "failed")
            await other.wait_for(1)
            (got,) = await receiver.wait_for(1)
            await until(lambda: emu.webhooks.dispatcher.pending == 0, "nothing pending")
        finally:
            await other.stop()
            await aio.aclose()
    # The SDK's WebhookConfig.uris: used "instead of the registered webhooks".
    assert got.json["data"] == {"id": failed, "status": "failed"}
    assert len(receiver.got) == 1 and len(other.got) == 1


async def test_ping_and_rotation(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    made = await client.webhooks.create(uri=receiver.uri, subscribed_events=EVENTS)
    assert made.id
    old = made.new_signing_secret or ""
    assert isinstance(await client.webhooks.ping(made.id), WebhookPingResponse)
    (ping,) = await receiver.wait_for(1)
    assert verify(old, ping)["type"] == "webhook.ping"
    assert ping.json["data"] == {"id": made.id}

    rotated = await client.webhooks.rotate_signing_secret(made.id)
    assert isinstance(rotated, WebhookRotateSigningSecretResponse)
    new = rotated.secret or ""
    assert new.startswith("whsec_") and new != old
    secrets_now = (await client.webhooks.get(made.id)).signing_secrets or []
    assert len(secrets_now) == 2 and secrets_now[1].expire_time is not None
    await client.webhooks.ping(made.id)
    overlap = (await receiver.wait_for(2))[1]
    assert len(overlap.headers["webhook-signature"].split(" ")) == 2
    assert verify(new, overlap) and verify(old, overlap)  # either secret checks it

    await client.webhooks.rotate_signing_secret(
        made.id, revocation_behavior="revoke_previous_secrets_immediately"
    )
    await client.webhooks.ping(made.id)
    after = (await receiver.wait_for(3))[2]
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    for revoked in (old, new):
        with pytest.raises(WebhookVerificationError):
            verify(revoked, after)


async def test_a_failing_static_webhook_is_disabled_until_enabled_again(
    receiver: Receiver,
) -> None:
    settings = WebhookSettings(backoff_base=0.02, backoff_cap=0.05, disable_after=3)
    async with EmulatorServer(config(settings, latency=None)) as emu:
        receiver.answers = [500] * 100
        aio = sdk(emu).aio
        made = await aio.webhooks.create(uri=receiver.uri, subscribed_events=EVENTS)
        assert made.id
        finish(emu, await background(aio))
        counters = emu.webhooks.dispatcher.log.counters
        await until(lambda: counters["given_up"] == 1, "the message given up")
        disabled = await aio.webhooks.get(made.id)
        finish(emu, await background(aio))  # a disabled webhook is sent nothing
        messages_while_disabled = counters["messages"]
        receiver.answers.clear()
        await aio.webhooks.update(made.id, state="enabled")
        again = await background(aio)
        finish(emu, again)
        got = await receiver.wait_for(4)
        await aio.aclose()
        log = await deliveries(emu)
    assert disabled.state == "disabled_due_to_failed_deliveries"
    assert messages_while_disabled == 1
    assert "disabled_due_to_failed_deliveries" in log["attempts"][3]["reason"]
    assert got[3].json["data"]["id"] == again
    assert log["counters"]["attempts"] == 4 and log["counters"]["delivered"] == 1


async def test_reset_forgets_webhooks_and_counts(
    emu: EmulatorServer, receiver: Receiver, client: genai.client.AsyncClient
) -> None:
    await client.webhooks.create(uri=receiver.uri, subscribed_events=EVENTS)
    await background(client)
    await receiver.wait_for(1)
    await admin(emu, "POST", "/_emulator/reset")
    assert (await client.webhooks.list()).webhooks == []
    assert (await deliveries(emu))["counters"]["events"] == 0
