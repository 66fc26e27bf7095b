"""The aiohttp application: the Interactions REST API plus the `/_emulator/` admin API.

Paths and JSON follow what google-genai 3.3.0 sends and parses
(`_gaos/interactions.py`): `POST /{version}/interactions`,
`GET|DELETE /{version}/interactions/{id}`, `POST /{version}/interactions/{id}/cancel`;
errors are `{"error": {"code", "message", "status"}}`. The admin API needs no key.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from reclaim_tui.emulator.config import EmulatorConfig
from reclaim_tui.emulator.faults import EndpointFaults, FaultConfig, FaultDice
from reclaim_tui.emulator.state import InteractionStore, StoredInteraction

__all__ = ["STORE_KEY", "make_app"]

STORE_KEY: web.AppKey[InteractionStore] = web.AppKey("store", InteractionStore)
CONFIG_KEY: web.AppKey[EmulatorConfig] = web.AppKey("config", EmulatorConfig)

_VERSION = "{version:v1[a-z0-9]*}"
_REASONS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


#: Retry-After (seconds) on an injected 429, as a rate-limiting API sends it.
RETRY_AFTER_SECONDS = 1


def _error(
    status: int, message: str, *, details: list[dict[str, Any]] | None = None
) -> web.Response:
    # The SDK parses `error.code` as a string (types/interactions/error.py), so
    # the emulator sends the canonical status name there and in `status`.
    reason = _REASONS.get(status, "UNKNOWN")
    error: dict[str, Any] = {"code": reason, "message": message, "status": reason}
    if details:
        error["details"] = details
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 429 else None
    return web.json_response({"error": error}, status=status, headers=headers)


def _interaction(interaction: StoredInteraction, include_input: bool = False) -> web.Response:
    return web.json_response(interaction.to_json(include_input))


def _store(request: web.Request) -> InteractionStore:
    return request.app[STORE_KEY]


def _key_error(request: web.Request) -> web.Response | None:
    expected = request.app[CONFIG_KEY].api_key
    if expected is None:
        return None
    given = request.headers.get("x-goog-api-key") or request.query.get("key")
    if not given:
        return _error(403, "Method doesn't allow unregistered callers. Send an API key.")
    if given != expected:
        # The real API answers a wrong key with 400 INVALID_ARGUMENT, not 401,
        # and names the reason in `details` (google.rpc.ErrorInfo).
        info = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
        }
        return _error(400, "API key not valid. Please pass a valid API key.", details=[info])
    return None


async def _injected_fault(store: InteractionStore, faults: EndpointFaults) -> web.Response | None:
    status = store.dice.error_status(faults)
    if status is not None:
        return _error(status, f"injected fault {status} (emulator)")
    await _maybe_slow(store)
    return None


async def _maybe_slow(store: InteractionStore) -> None:
    if store.dice.roll(store.faults.slow_rate) and store.faults.slow_seconds > 0:
        await asyncio.sleep(store.faults.slow_seconds)


def _labels_problem(labels: Any) -> str | None:
    if not isinstance(labels, dict):
        return "labels must be an object"
    for key, value in labels.items():
        if not isinstance(value, str) or not key or not key[0].isalpha():
            return f"invalid label {key!r}"
        if len(key) > 63 or len(value) > 63 or not set(key + value) <= _LABEL_CHARS:
            return f"invalid label {key!r}: lowercase letters, digits, '_' and '-', ≤ 63 chars"
    return None


def _create_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not body.get("model") and not body.get("agent"):
        return "model is required"
    if body.get("input") in (None, "", []):
        return "input is required"
    if body.get("stream"):
        return "the emulator does not stream; use background=true"
    return _labels_problem(body.get("labels") or {})


async def create_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["create_posts_received"] += 1
    refused = _key_error(request)
    if refused is not None:
        return refused
    store.calls["create"] += 1
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(400, "request body is not valid JSON")
    problem = _create_problem(body)
    if problem is not None:
        return _error(400, problem)
    fault = store.dice.error_status(store.faults.create)
    if fault is not None:
        return _error(fault, f"injected fault {fault} (emulator)")
    interaction = store.create(
        str(body.get("model") or body.get("agent")),
        body["input"],
        dict(body.get("labels") or {}),
        background=bool(body.get("background")),
    )
    dropped = store.dice.roll(store.faults.drop_rate)
    store.log_create(interaction, dropped=dropped)
    if dropped:
        return _drop(request, store)
    await _maybe_slow(store)
    return _interaction(interaction)


def _drop(request: web.Request, store: InteractionStore) -> web.StreamResponse:
    """Accepted, stored and logged, but the client never gets a usable answer."""
    if store.faults.drop_mode == "503":
        return _error(503, "The service is currently unavailable (emulated lost response).")
    if request.transport is not None:
        request.transport.close()
    # aiohttp answers nothing once the transport is closed; the client sees
    # the connection end without a response (httpx RemoteProtocolError).
    raise asyncio.CancelledError


async def get_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["get"] += 1
    refused = _key_error(request) or await _injected_fault(store, store.faults.get)
    if refused is not None:
        return refused
    interaction = store.get(request.match_info["id"])
    if interaction is None:
        return _error(404, f"Interaction {request.match_info['id']} not found.")
    include_input = request.query.get("include_input", "").lower() == "true"
    return _interaction(interaction, include_input)


async def cancel_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["cancel"] += 1
    refused = _key_error(request)
    if refused is not None:
        return refused
    interaction = store.get(request.match_info["id"])
    if interaction is None:
        return _error(404, f"Interaction {request.match_info['id']} not found.")
    store.cancel(interaction)
    return _interaction(interaction)


async def delete_interaction(request: web.Request) -> web.StreamResponse:
    store = _store(request)
    store.calls["delete"] += 1
    refused = _key_error(request)
    if refused is not None:
        return refused
    if not store.delete(request.match_info["id"]):
        return _error(404, f"Interaction {request.match_info['id']} not found.")
    return web.json_response({})


# -- admin API -------------------------------------------------------------------------
async def admin_stats(request: web.Request) -> web.Response:
    return web.json_response(_store(request).stats())


async def admin_get_faults(request: web.Request) -> web.Response:
    return web.json_response(_store(request).faults.to_json())


async def admin_set_faults(request: web.Request) -> web.Response:
    store = _store(request)
    try:
        faults = FaultConfig.from_json(await request.json())
    except (ValueError, TypeError) as exc:
        return _error(400, f"bad fault settings: {exc}")
    store.faults = faults
    return web.json_response(faults.to_json())


async def admin_find(request: web.Request) -> web.Response:
    idem = request.query.get("idem")
    label = request.query.get("label", "")
    if idem is None and label.startswith("idem:"):
        idem = label.removeprefix("idem:")
    if not idem:
        return _error(400, "pass ?idem=<value> or ?label=idem:<value>")
    return web.json_response([i.to_json() for i in _store(request).find(idem)])


async def admin_finish(request: web.Request) -> web.Response:
    store = _store(request)
    interaction = store.get(request.match_info["id"])
    if interaction is None:
        return _error(404, f"Interaction {request.match_info['id']} not found.")
    try:
        body = await request.json()
    except json.JSONDecodeError:
        return _error(400, "request body is not valid JSON")
    status = body.get("status") if isinstance(body, dict) else None
    if not isinstance(status, str) or not status:
        return _error(400, "status (a string) is required")
    store.finish(interaction, status, body.get("text"), body.get("error"))
    return _interaction(interaction)


async def admin_creates(request: web.Request) -> web.Response:
    return web.json_response(_store(request).creates_log)


async def admin_reset(request: web.Request) -> web.Response:
    store = _store(request)
    store.reset(FaultDice(request.app[CONFIG_KEY].seed))
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
    )
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
    return app
