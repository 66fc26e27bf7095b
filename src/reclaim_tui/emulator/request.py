"""A create body, checked the way the real API checks it, as one frozen value.

Sources for each rule: `model` and `agent` are exclusive and an agent
names one of the SDK's agents (google-genai's create models); Deep
Research "must use background execution" (Deep Research docs);
`store=false` with `background=true` is refused (DESIGN.md §6); label rules
are Google Cloud's (keys `\\p{Ll}\\p{Lo}[\\p{Ll}\\p{Lo}\\p{N}_-]{0,62}`, values
`[\\p{Ll}\\p{Lo}\\p{N}_-]{0,63}`, at most 64 labels), which the SDK's `labels`
docstring paraphrases. Exact messages are not documented: ours.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.emulator.catalog import CREATE_FIELDS, AgentSpec, agent_spec
from reclaim_tui.emulator.errors import ApiProblem
from reclaim_tui.emulator.structured import json_schema_of

__all__ = ["ECHOED_FIELDS", "CreateRequest", "labels_problem", "parse_create"]

#: Request fields the Interaction resource carries back (google-genai's
#: `Interaction` has each of them); `input` only with `include_input=true`.
ECHOED_FIELDS = (
    "agent_config",
    "cached_content",
    "environment",
    "generation_config",
    "labels",
    "previous_interaction_id",
    "response_format",
    "response_mime_type",
    "response_modalities",
    "safety_settings",
    "service_tier",
    "system_instruction",
    "tools",
    "webhook_config",
)
_SERVICE_TIERS = frozenset({"flex", "standard", "priority", "deferred"})
_MODALITIES = frozenset({"text", "image", "audio", "video", "document"})
_MAX_LABELS = 64


@dataclass(frozen=True)
class CreateRequest:
    """One accepted create request (before the store resolves its references)."""

    model: str | None
    agent: str | None
    input: Any
    background: bool
    store: bool
    stream: bool
    labels: dict[str, str]
    previous_interaction_id: str | None
    continuation_token: str | None
    echo: dict[str, Any] = field(default_factory=dict)
    #: A custom agent's spec (its base agent's), when `agent` names one.
    custom: AgentSpec | None = None

    @property
    def agent_spec(self) -> AgentSpec | None:
        if self.custom is not None:
            return self.custom
        return agent_spec(self.agent) if self.agent else None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [t for t in self.echo.get("tools") or () if isinstance(t, dict)]

    @property
    def agent_config(self) -> dict[str, Any]:
        config = self.echo.get("agent_config")
        return config if isinstance(config, dict) else {}

    @property
    def wants_image(self) -> bool:
        modalities = self.echo.get("response_modalities") or ()
        formats = self.echo.get("response_format")
        if isinstance(formats, dict):
            formats = [formats]
        kinds = {f.get("type") for f in formats or () if isinstance(f, dict)}
        return "image" in modalities or "image" in kinds

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The schema the answer's text follows (`{}`: any JSON), None for prose."""
        schema = json_schema_of(self.echo.get("response_format"))
        if schema is None and self.echo.get("response_mime_type") == "application/json":
            return {}
        return schema

    @property
    def wants_text(self) -> bool:
        modalities = self.echo.get("response_modalities")
        return not modalities or "text" in modalities


def _label_char(char: str) -> bool:
    return unicodedata.category(char) in ("Ll", "Lo") or unicodedata.category(char)[0] == "N"


def _label_text_ok(text: str, *, key: bool) -> bool:
    if len(text) > 63 or len(text.encode("utf-8")) > 128:
        return False
    if key and not (text and unicodedata.category(text[0]) in ("Ll", "Lo")):
        return False
    return all(_label_char(c) or c in "_-" for c in text)


def labels_problem(labels: Any) -> str | None:
    """Why these labels are refused, or None when the API accepts them."""
    if not isinstance(labels, dict):
        return "labels must be an object of strings"
    if len(labels) > _MAX_LABELS:
        return f"at most {_MAX_LABELS} labels are allowed, got {len(labels)}"
    for key, value in labels.items():
        if not isinstance(value, str):
            return f"label {key!r}: the value must be a string"
        if not _label_text_ok(key, key=True) or not _label_text_ok(value, key=False):
            return (
                f"invalid label {key!r}: keys and values are at most 63 lowercase letters"
                " (international letters too), digits, '_' or '-'; a key starts with a letter"
            )
    return None


def _bool(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApiProblem(400, f"Invalid value at '{name}': expected a boolean", front_end=True)
    return value


def _optional_str(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ApiProblem(400, f"{name} must be a non-empty string")
    return value


def _check_fields(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, dict):
        raise ApiProblem(400, "Invalid JSON payload received.", front_end=True)
    for name in sorted(set(body) - CREATE_FIELDS):
        message = f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.'
        raise ApiProblem(400, message, front_end=True)
    return body


def _check_target(
    body: Mapping[str, Any], models: frozenset[str] | None, custom: Mapping[str, AgentSpec]
) -> tuple[str | None, str | None]:
    model, agent = body.get("model"), body.get("agent")
    if model and agent:
        raise ApiProblem(400, "Cannot supply both 'model' and 'agent'.")
    if not model and not agent:
        raise ApiProblem(400, "model is required (or agent, for an agent interaction)")
    if model is not None and not isinstance(model, str):
        raise ApiProblem(400, "model must be a string")
    if agent is not None and not isinstance(agent, str):
        raise ApiProblem(400, "agent must be a string")
    if agent and agent_spec(agent) is None and agent not in custom:
        raise ApiProblem(400, f"Unknown agent name: {agent}")
    if model and models is not None and model not in models:
        raise ApiProblem(400, f"Unknown model name: {model}")
    return model or None, agent or None


def _check_agent_config(body: Mapping[str, Any], agent: str | None, spec: AgentSpec | None) -> None:
    config = body.get("agent_config")
    if config is None:
        return
    if agent is None:
        raise ApiProblem(400, "agent_config is only accepted with an agent")
    if not isinstance(config, dict) or spec is None or config.get("type") != spec.config_type:
        wanted = spec.config_type if spec else "?"
        raise ApiProblem(400, f"agent_config for {agent} must have type '{wanted}'")


def _check_input(body: Mapping[str, Any], continuing: bool) -> Any:
    value = body.get("input")
    if value in (None, "", []):
        if continuing:
            return None
        raise ApiProblem(400, "input is required")
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return value
    if isinstance(value, list) and all(
        isinstance(item, dict) and isinstance(item.get("type"), str) for item in value
    ):
        return value
    raise ApiProblem(
        400, "input must be a string, a content object, or a list of contents or steps"
    )


def _check_options(body: Mapping[str, Any]) -> None:
    tier = body.get("service_tier")
    if tier is not None and tier not in _SERVICE_TIERS:
        raise ApiProblem(400, f"Invalid value at 'service_tier' ({tier!r})", front_end=True)
    modalities = body.get("response_modalities")
    # Case-insensitive: the SDK README sends ['IMAGE'] and ['AUDIO'], and no
    # recorded answer shows the API refusing upper case.
    if modalities is not None and (
        not isinstance(modalities, list)
        or not all(isinstance(m, str) for m in modalities)
        or not {m.lower() for m in modalities} <= _MODALITIES
    ):
        raise ApiProblem(400, f"Invalid value at 'response_modalities' ({modalities!r})")
    tools = body.get("tools")
    if tools is not None and (
        not isinstance(tools, list)
        or not all(isinstance(t, dict) and isinstance(t.get("type"), str) for t in tools)
    ):
        raise ApiProblem(400, "tools must be a list of tool objects, each with a type")
    for tool in tools or ():
        if tool["type"] == "function" and not tool.get("name"):
            raise ApiProblem(400, "a function tool needs a name")


def parse_create(
    body: Any,
    *,
    models: frozenset[str] | None = None,
    custom: Mapping[str, AgentSpec] | None = None,
) -> CreateRequest:
    """The create request in `body`, or ApiProblem. `models=None` accepts any
    model name; `custom`: the custom agents' specs by id (agents.py)."""
    custom = custom or {}
    body = _check_fields(body)
    model, agent = _check_target(body, models, custom)
    mine = custom.get(agent) if agent and agent_spec(agent) is None else None
    _check_agent_config(body, agent, mine or (agent_spec(agent) if agent else None))
    previous = _optional_str(body, "previous_interaction_id")
    token = _optional_str(body, "continuation_token")
    value = _check_input(body, continuing=token is not None)
    background = _bool(body, "background", False)
    store = _bool(body, "store", True)
    stream = _bool(body, "stream", False)
    if background and not store:
        raise ApiProblem(400, "background=true requires store=true: a result must be stored")
    spec = mine or (agent_spec(agent) if agent else None)
    if spec is not None and spec.background_only and not background:
        raise ApiProblem(400, f"Agent {agent} requires background=true.")
    labels = body.get("labels") or {}
    problem = labels_problem(labels)
    if problem is not None:
        raise ApiProblem(400, problem)
    _check_options(body)
    if isinstance(body.get("response_modalities"), list):
        # Echoed as the SDK's ResponseModality literal spells them (lower case).
        body = {**body, "response_modalities": [m.lower() for m in body["response_modalities"]]}
    # An empty value is not echoed: the API omits unset fields.
    echo = {name: body[name] for name in ECHOED_FIELDS if body.get(name) not in (None, {}, [])}
    return CreateRequest(
        model=model,
        agent=agent,
        input=value,
        background=background,
        store=store,
        stream=stream,
        labels=dict(labels),
        previous_interaction_id=previous,
        continuation_token=token,
        echo=echo,
        custom=mine,
    )
