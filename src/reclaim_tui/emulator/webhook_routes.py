"""The HTTP side of webhooks: `/{version}/webhooks` as google-genai 3.3.0 calls it
(`_gaos/webhooks.py`), the JWKS of dynamic deliveries, and the admin routes.

- `GET|POST /{version}/webhooks` (list with `page_size`/`page_token`; create
  answers the Webhook with `new_signing_secret`, the only time it is shown);
- `GET|PATCH|DELETE /{version}/webhooks/{id}` (PATCH takes `update_mask`;
  DELETE answers `{}`);
- `POST /{version}/webhooks/{id}:ping` (answers `{}`, then sends the ping);
- `POST /{version}/webhooks/{id}:rotateSigningSecret` (answers `{"secret"}`);
- `GET /.well-known/jwks.json` (no key needed: a public key set);
- `GET /_emulator/webhooks/deliveries` (delivery_log.py), `GET|POST
  /_emulator/webhooks/faults` (webhook_settings.WebhookFaults; POST replaces
  them and leaves the other faults alone).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from aiohttp import web

from reclaim_tui.emulator.access import STORE_KEY, WEBHOOKS_KEY, key_error
from reclaim_tui.emulator.errors import ApiProblem, api_error, problem_response
from reclaim_tui.emulator.webhook_registry import StaticWebhook
from reclaim_tui.emulator.webhook_settings import WebhookFaults
from reclaim_tui.emulator.webhooks import WebhookService

__all__ = ["add_webhook_routes"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _service(request: web.Request) -> WebhookService:
    return request.app[WEBHOOKS_KEY]


async def _body(request: web.Request, *, required: bool) -> Any:
    text = await request.text()
    if not text.strip():
        if required:
            raise ApiProblem(400, "Invalid JSON payload received.", front_end=True)
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ApiProblem(400, "Invalid JSON payload received.", front_end=True) from None


def _webhook(request: web.Request) -> StaticWebhook:
    webhook = _service(request).registry.get(request.match_info["id"])
    if webhook is None:
        raise ApiProblem(404, f"Webhook {request.match_info['id']} not found.")
    return webhook


def _api(handler: Handler) -> Handler:
    """The API key check and ApiProblem answers around one webhooks handler."""

    async def checked(request: web.Request) -> web.StreamResponse:
        refused = key_error(request)
        if refused is not None:
            return refused
        try:
            return await handler(request)
        except ApiProblem as problem:
            return problem_response(problem)

    return checked


def _view(request: web.Request, webhook: StaticWebhook) -> dict[str, Any]:
    return webhook.to_json(_service(request).store.clock())


@_api
async def list_webhooks(request: web.Request) -> web.StreamResponse:
    size = request.query.get("page_size")
    if size is not None and (not size.isdigit() or int(size) < 0):
        raise ApiProblem(400, f"page_size must be a non-negative integer, got {size!r}")
    page = _service(request).registry.page(
        int(size) if size else None, request.query.get("page_token")
    )
    return web.json_response(page)


@_api
async def create_webhook(request: web.Request) -> web.StreamResponse:
    registry = _service(request).registry
    chosen = request.query.get("webhook_id") or request.query.get("webhookId")
    webhook, secret = registry.create(await _body(request, required=True), chosen)
    return web.json_response({**_view(request, webhook), "new_signing_secret": secret})


@_api
async def get_webhook(request: web.Request) -> web.StreamResponse:
    return web.json_response(_view(request, _webhook(request)))


@_api
async def update_webhook(request: web.Request) -> web.StreamResponse:
    webhook = _webhook(request)
    body = await _body(request, required=True)
    mask = request.query.get("update_mask") or request.query.get("updateMask")
    _service(request).registry.update(webhook, body, mask)
    return web.json_response(_view(request, webhook))


@_api
async def delete_webhook(request: web.Request) -> web.StreamResponse:
    if not _service(request).registry.delete(request.match_info["id"]):
        return api_error(404, f"Webhook {request.match_info['id']} not found.")
    return web.json_response({})


@_api
async def ping_webhook(request: web.Request) -> web.StreamResponse:
    webhook = _webhook(request)
    await _body(request, required=False)
    _service(request).ping(webhook)
    return web.json_response({})


@_api
async def rotate_secret(request: web.Request) -> web.StreamResponse:
    webhook = _webhook(request)
    body = await _body(request, required=False)
    behavior = body.get("revocation_behavior") if isinstance(body, dict) else None
    secret = _service(request).registry.rotate(webhook, behavior)
    return web.json_response({"secret": secret})


async def jwks(request: web.Request) -> web.Response:
    return web.json_response(_service(request).signer.jwks())


async def admin_deliveries(request: web.Request) -> web.Response:
    dispatcher = _service(request).dispatcher
    return web.json_response(dispatcher.log.to_json(dispatcher.pending))


async def admin_get_faults(request: web.Request) -> web.Response:
    return web.json_response(request.app[STORE_KEY].faults.webhooks.to_json())


async def admin_set_faults(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    try:
        faults = WebhookFaults.from_json(await request.json())
    except (ValueError, TypeError) as exc:
        message = f"bad webhook fault settings: {exc}"
        return web.json_response({"error": {"code": 400, "message": message}}, status=400)
    store.faults = replace(store.faults, webhooks=faults)
    return web.json_response(faults.to_json())


def add_webhook_routes(app: web.Application, version: str) -> None:
    """Route the webhooks API under `/{version}` (a route pattern) and the admin routes."""
    base = f"/{version}/webhooks"
    one = base + "/{id:[^/:]+}"
    app.router.add_get(base, list_webhooks)
    app.router.add_post(base, create_webhook)
    app.router.add_get(one, get_webhook)
    app.router.add_patch(one, update_webhook)
    app.router.add_delete(one, delete_webhook)
    app.router.add_post(one + ":ping", ping_webhook)
    app.router.add_post(one + ":rotateSigningSecret", rotate_secret)
    app.router.add_get("/.well-known/jwks.json", jwks)
    app.router.add_get("/_emulator/webhooks/deliveries", admin_deliveries)
    app.router.add_get("/_emulator/webhooks/faults", admin_get_faults)
    app.router.add_post("/_emulator/webhooks/faults", admin_set_faults)
