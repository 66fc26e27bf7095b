"""Custom (managed) agents: `/{version}/agents` as google-genai calls it
(`_gaos/agents.py`: `client.agents.create / get / list / delete`; the
`Agent` model: id, base_agent, base_environment, agent_config, description,
system_instruction, tools). An interaction names one by its id
(`agent=<id>`) and runs as its `base_agent` does (an Antigravity-like
agent when it names none the emulator knows).

- `POST /{version}/agents` answers the Agent; an `id` the caller chose is
  kept, else one is made; an id that exists is refused 409 ALREADY_EXISTS
  (AIP-133, the Google API rule for creates that name their id);
- `GET /{version}/agents` (`page_size` / `page_token`) answers `{agents,
  next_page_token}`; `GET|DELETE /{version}/agents/{id}` (DELETE answers
  `{}`; an unknown id is 404, as for interactions).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from reclaim_tui.emulator.access import STORE_KEY, key_error
from reclaim_tui.emulator.catalog import AgentSpec, agent_spec
from reclaim_tui.emulator.errors import ApiProblem, problem_response

__all__ = ["AGENT_FIELDS", "add_agent_routes", "custom_spec"]

#: The SDK's `Agent` fields (google-genai 3.6, `_gaos/types/agents/agent.py`).
AGENT_FIELDS = frozenset(
    {
        "id",
        "base_agent",
        "base_environment",
        "agent_config",
        "description",
        "system_instruction",
        "tools",
    }
)
#: How a custom agent runs when its base agent is not one the emulator knows:
#: the SDK types a custom agent's `agent_config` as AntigravityAgentConfig.
_DEFAULT_SPEC = AgentSpec("antigravity", False, 60.0)
_DEFAULT_PAGE, _MAX_PAGE = 50, 1000

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def custom_spec(agent: dict[str, Any]) -> AgentSpec:
    """How a custom agent's interactions run: as its base agent's."""
    base = agent.get("base_agent")
    return (agent_spec(base) if isinstance(base, str) else None) or _DEFAULT_SPEC


def _agents(request: web.Request) -> dict[str, dict[str, Any]]:
    return request.app[STORE_KEY].agents


def _api(handler: Handler) -> Handler:
    async def checked(request: web.Request) -> web.StreamResponse:
        refused = key_error(request)
        if refused is not None:
            return refused
        try:
            return await handler(request)
        except ApiProblem as problem:
            return problem_response(problem)

    return checked


def _found(request: web.Request) -> dict[str, Any]:
    agent = _agents(request).get(request.match_info["id"])
    if agent is None:
        raise ApiProblem(404, f"Agent {request.match_info['id']} not found.")
    return agent


@_api
async def create_agent(request: web.Request) -> web.StreamResponse:
    try:
        body = json.loads(await request.text() or "null")
    except json.JSONDecodeError:
        body = None
    if not isinstance(body, dict):
        raise ApiProblem(400, "Invalid JSON payload received.", front_end=True)
    for name in sorted(set(body) - AGENT_FIELDS):
        message = f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.'
        raise ApiProblem(400, message, front_end=True)
    chosen = body.get("id") or request.query.get("agent_id")
    if chosen is not None and (not isinstance(chosen, str) or not chosen.strip()):
        raise ApiProblem(400, "id must be a non-empty string")
    agents = _agents(request)
    if chosen in agents:
        raise ApiProblem(409, f"Agent {chosen} already exists.")
    agent_id = chosen or f"agent-{secrets.token_hex(6)}"
    agent = {k: v for k, v in body.items() if v is not None and k != "id"}
    agent = {"id": agent_id, **agent}
    agents[agent_id] = agent
    return web.json_response(agent)


@_api
async def list_agents(request: web.Request) -> web.StreamResponse:
    size_text = request.query.get("page_size") or ""
    size = min(int(size_text) if size_text.isdigit() else _DEFAULT_PAGE, _MAX_PAGE) or _DEFAULT_PAGE
    token = request.query.get("page_token") or ""
    start = int(token) if token.isdigit() else 0
    every = list(_agents(request).values())
    page: dict[str, Any] = {"agents": every[start : start + size]}
    if start + size < len(every):
        page["next_page_token"] = str(start + size)
    return web.json_response(page)


@_api
async def get_agent(request: web.Request) -> web.StreamResponse:
    return web.json_response(_found(request))


@_api
async def delete_agent(request: web.Request) -> web.StreamResponse:
    agent = _found(request)
    del _agents(request)[agent["id"]]
    return web.json_response({})


def add_agent_routes(app: web.Application, version: str) -> None:
    base = f"/{version}/agents"
    app.router.add_post(base, create_agent)
    app.router.add_get(base, list_agents)
    app.router.add_get(base + "/{id}", get_agent)
    app.router.add_delete(base + "/{id}", delete_agent)
