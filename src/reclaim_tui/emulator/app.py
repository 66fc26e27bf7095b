"""The aiohttp application: the Interactions REST API plus the `/_emulator/` admin API.

Paths and JSON follow what google-genai 3.3.0 sends and parses
(`_gaos/interactions.py`): `POST /{version}/interactions` (JSON, or
`text/event-stream` with `stream: true`), `GET|DELETE
/{version}/interactions/{id}` (`?stream=true&last_event_id=…` streams),
`POST /{version}/interactions/{id}/cancel`. Error bodies: errors.py. The
admin API needs no key.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from reclaim_tui.emulator.access import CONFIG_KEY, STORE_KEY, WEBHOOKS_KEY, key_error
from reclaim_tui.emulator.agents import add_agent_routes, custom_spec
from reclaim_tui.emulator.config import EmulatorConfig
from reclaim_tui.emulator.errors import (
    RETRY_AFTER_SECONDS,
    ApiProblem,
    api_error,
    front_end_error,
    problem_response,
)
from reclaim_tui.emulator.events import DONE, event_index, frame, timeline
from reclaim_tui.emulator.faults import EndpointFaults, FaultConfig, FaultDice
from reclaim_tui.emulator.request import parse_create
from reclaim_tui.emulator.state import InteractionStore, StoredInteraction
from reclaim_tui.emulator.webhook_routes import add_webhook_routes
from reclaim_tui.emulator.webhooks import WebhookService

__all__ = [
    "ADMIN_MAX_BODY",
    "CONFIG_KEY",
    "RETRY_AFTER_SECONDS",
    "STORE_KEY",
    "WEBHOOKS_KEY",
    "make_app",
]

_VERSION = "{version:v1[a-z0-9]*}"
#: The largest body the admin endpoint that takes a result (`finish`) reads:
#: aiohttp's default (1 MiB, kept for the API's own endpoints) is smaller
#: than the large outputs a test scripts; past this it answers 413.
ADMIN_MAX_BODY = 256 * 1024 * 1024
#: The longest a live stream waits before looking at its interaction again.
_STREAM_POLL_SECONDS = 0.5
_FAULT_MESSAGES = {
    429: "Resource has been exhausted (e.g. check quota). (injected by the emulator)",
    500: "An internal error has occurred. (injected by the emulator)",
    503: "The model is overloaded. Please try again later. (injected by the emulator)",
}


def _store(request: web.Request) -> InteractionStore:
    return request.app[STORE_KEY]


def _fault(status: int) -> web.Response:
    return api_error(status, _FAULT_MESSAGES.get(status, f"injected fault {status} (emulator)"))


async def _injected_fault(store: InteractionStore, faults: EndpointFaults) -> web.Response | None:
    status = store.dice.error_status(faults)
    if status is not None:
        return _fault(status)
    await _maybe_slow(store)
    return None


async def _maybe_slow(store: InteractionStore) -> None:
    if store.dice.roll(store.faults.slow_rate) and store.faults.slow_seconds > 0:
        await asyncio.sleep(store.faults.slow_seconds)


async def _stream(
    request: web.Request, interaction: StoredInteraction, after: int
) -> web.StreamResponse:
    """Send the interaction's events after position `after`, live until its run ends."""
    store = _store(request)
    response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
    response.content_type = "text/event-stream"
    await response.prepare(request)
    sent = after
    try:
        while True:
            now = store.clock()
            events, next_due = timeline(interaction, now)
            for event in events[sent:]:
                await response.write(frame(event))
            sent = max(sent, len(events))
            if next_due is None or store.interactions.get(interaction.id) is not interaction:
                break
            await asyncio.sleep(min(max(next_due - now, 0.01), _STREAM_POLL_SECONDS))
        await response.write(DONE)
        await response.write_eof()
    except ConnectionError:
        pass  # the client went away; it may resume with last_event_id
    return response


def _drop(request: web.Request, store: InteractionStore) -> web.StreamResponse:
    """Accepted, stored and logged, but the client never gets a usable answer."""
    if store.faults.drop_mode == "503":
        return _fault(503)
    if request.transport is not None:
        request.transport.close()
    # aiohttp answers nothing once the transport is closed; the client sees
    # the connection end without a response (httpx RemoteProtocolError).
    raise asyncio.CancelledError


async def create_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["create_posts_received"] += 1
    refused = key_error(request)
    if refused is not None:
        return refused
    store.calls["create"] += 1
    request.app[WEBHOOKS_KEY].learn_issuer(request)
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return front_end_error(400, "Invalid JSON payload received.")
    try:
        custom = {name: custom_spec(agent) for name, agent in store.agents.items()}
        create = parse_create(body, models=request.app[CONFIG_KEY].models, custom=custom)
        fault = store.dice.error_status(store.faults.create)
        if fault is not None:
            return _fault(fault)
        interaction = store.create(create)
    except ApiProblem as problem:
        return problem_response(problem)
    dropped = store.dice.roll(store.faults.drop_rate)
    store.log_create(interaction, dropped=dropped)
    if dropped:
        return _drop(request, store)
    await _maybe_slow(store)
    if create.stream:
        return await _stream(request, interaction, 0)
    return web.json_response(interaction.created_view())


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


async def get_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["get"] += 1
    refused = key_error(request) or await _injected_fault(store, store.faults.get)
    if refused is not None:
        return refused
    interaction = store.get(request.match_info["id"])
    if interaction is None or interaction.hidden_until > store.clock():
        # hidden_until: the vanish fault, a 404 for a stored interaction that
        # comes back later (python-genai#2985).
        return api_error(404, f"Interaction {request.match_info['id']} not found.")
    last_event_id = request.query.get("last_event_id")
    if not _flag(request, "stream"):
        if last_event_id is not None:
            return api_error(400, "last_event_id can only be used with stream=true.")
        return web.json_response(interaction.to_json(include_input=_flag(request, "include_input")))
    try:
        after = event_index(last_event_id) if last_event_id else 0
        if after > len(timeline(interaction, store.clock())[0]):
            raise ApiProblem(400, f"last_event_id {last_event_id!r} is not an event of this stream")
    except ApiProblem as problem:
        return problem_response(problem)
    return await _stream(request, interaction, after)


async def cancel_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["cancel"] += 1
    refused = key_error(request)
    if refused is not None:
        return refused
    interaction = store.get(request.match_info["id"])
    if interaction is None:
        return api_error(404, f"Interaction {request.match_info['id']} not found.")
    try:
        store.cancel(interaction)
    except ApiProblem as problem:
        return problem_response(problem)
    return web.json_response(interaction.to_json())


async def delete_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["delete"] += 1
    refused = key_error(request)
    if refused is not None:
        return refused
    if not store.delete(request.match_info["id"]):
        return api_error(404, f"Interaction {request.match_info['id']} not found.")
    return web.json_response({})


# -- admin API -------------------------------------------------------------------------
def _admin_error(message: str, status: int = 400) -> web.Response:
    return web.json_response({"error": {"code": status, "message": message}}, status=status)


async def admin_stats(request: web.Request) -> web.Response:
    return web.json_response(_store(request).stats())


async def admin_get_faults(request: web.Request) -> web.Response:
    return web.json_response(_store(request).faults.to_json())


async def admin_set_faults(request: web.Request) -> web.Response:
    store = _store(request)
    try:
        faults = FaultConfig.from_json(await request.json())
    except (ValueError, TypeError) as exc:
        return _admin_error(f"bad fault settings: {exc}")
    store.faults = faults
    return web.json_response(faults.to_json())


async def admin_find(request: web.Request) -> web.Response:
    idem = request.query.get("idem")
    label = request.query.get("label", "")
    if idem is None and label.startswith("idem:"):
        idem = label.removeprefix("idem:")
    if not idem:
        return _admin_error("pass ?idem=<value> or ?label=idem:<value>")
    return web.json_response([i.to_json() for i in _store(request).find(idem)])


async def admin_finish(request: web.Request) -> web.Response:
    store = _store(request)
    interaction = store.get(request.match_info["id"])
    if interaction is None:
        return _admin_error(f"Interaction {request.match_info['id']} not found.", 404)
    try:
        body: Any = await request.clone(client_max_size=ADMIN_MAX_BODY).json()
    except web.HTTPRequestEntityTooLarge:
        return _admin_error(f"request body is larger than {ADMIN_MAX_BODY} bytes", 413)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _admin_error("request body is not valid JSON")
    status = body.get("status") if isinstance(body, dict) else None
    if not isinstance(status, str) or not status:
        return _admin_error("status (a string) is required")
    store.finish(interaction, status, body.get("text"), body.get("error"))
    return web.json_response(interaction.to_json())


async def admin_creates(request: web.Request) -> web.Response:
    return web.json_response(_store(request).creates_log)


async def admin_reset(request: web.Request) -> web.Response:
    store = _store(request)
    store.reset(FaultDice(request.app[CONFIG_KEY].seed))
    request.app[WEBHOOKS_KEY].reset()
    return web.json_response({"reset": True})


def make_app(config: EmulatorConfig | None = None) -> web.Application:
    """Build the emulator application for `config` (defaults: key "emulator-key", latency 0)."""
    config = config or EmulatorConfig()
    app = web.Application()
    app[CONFIG_KEY] = config
    app[STORE_KEY] = InteractionStore(
        faults=config.faults,
        dice=FaultDice(config.seed),
        latency=config.latency,
        latency_range=config.latency_range,
        seed=config.seed,
        clock=config.clock,
        agent_time_scale=config.agent_time_scale,
        queued_share=config.queued_share,
        retention_seconds=config.retention_seconds,
        full_steps=config.full_steps,
        usage_scale=config.usage_scale,
    )
    webhooks = WebhookService(config, app[STORE_KEY])
    app[WEBHOOKS_KEY] = webhooks
    app.cleanup_ctx.append(webhooks.lifetime)
    base = f"/{_VERSION}/interactions"
    app.router.add_post(base, create_interaction)
    app.router.add_get(base + "/{id}", get_interaction)
    app.router.add_delete(base + "/{id}", delete_interaction)
    app.router.add_post(base + "/{id}/cancel", cancel_interaction)
    app.router.add_get("/_emulator/stats", admin_stats)
    app.router.add_get("/_emulator/faults", admin_get_faults)
    app.router.add_post("/_emulator/faults", admin_set_faults)
    app.router.add_get("/_emulator/find", admin_find)
    app.router.add_get("/_emulator/creates", admin_creates)
    app.router.add_post("/_emulator/interactions/{id}/finish", admin_finish)
    app.router.add_post("/_emulator/reset", admin_reset)
    add_webhook_routes(app, _VERSION)
    add_agent_routes(app, _VERSION)
    return app
