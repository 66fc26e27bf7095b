"""`_FastGet` and `_FastCreate`: google-genai's `interactions.get` and `create`
without their per-call work, sending and returning exactly what the stock calls do.

Built by `_FastCall.attach` (fastpath.py), which returns None when the SDK's layout
is not the verified one; the backend then keeps the stock call. (The backend uses
them only on a verified SDK version, `FAST_PATH_SDK_VERSIONS`.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Mapping
from typing import Any

from reclaim_tui.core.gemini.answers import plain_answer
from reclaim_tui.core.gemini.fastpath import _FastCall
from reclaim_tui.core.gemini.fastsend import utf8_text
from reclaim_tui.core.gemini.wireanswer import WireAnswer

# Even memoized, the stock `interactions.get` and `create` spend most of their CPU on
# work that is the same for every call: speakeasy rebuilds the URL, query and headers from
# the request model, runs the auth hook in a worker thread (`SyncToAsyncBeforeRequestAdapter`
# → asyncio.to_thread, a thread hop per call) and wraps the send in its retry loop; create also
# validates the body into a pydantic model and dumps it again. `_FastGet` and
# `_FastCreate` ask the stock builder once (a placeholder id, a probe body) and keep the
# URL, headers and timeout it produced; each call then sends through the SDK's own httpx
# client and parses the answer with the SDK's own parser and error mapping. What is sent
# and what comes back are the stock path's (tests/unit/test_gemini_fastpath.py compares
# both); a 200 answer in the shape answers.py checks is read straight from its JSON as
# the dict the backend would have dumped (tests/contract/test_direct_answers.py).
# Neither retries: one call, one request (create: exactly one POST per attempt).
_PLACEHOLDER_ID = "reclaimtuiplaceholderid0"
#: Bytes from which an answer counts as large (read and parsed one at a time).
LARGE_ANSWER = 1 << 20
_SAFE_ID = re.compile(r"[A-Za-z0-9._~-]{1,512}")  # spliced verbatim into the URL
_JSON_SEPARATORS = (",", ":")
# A probe body for the create template; also checks the hand-built JSON against the SDK's.
_PROBE_CREATE: dict[str, Any] = {
    "model": "reclaim-probe-model",
    "input": 'probe "é" \\ \n\t\x00 \u2028 😀',
    "labels": {"team": "a-b_c", "idem": "0" * 32},
}
# Keys that change what the stock create does beyond its body (a second `model`/`input`/
# `background` is a TypeError of the call itself; agent and stream requests take other
# checks, headers and parsers): those calls keep the stock create.
_STOCK_CREATE_KEYS = frozenset({"model", "input", "background", "agent", "agent_config", "stream"})


def _declared_size(response: Any) -> int:
    """The body's length its headers declare; 0 when they do not say."""
    declared = response.headers.get("content-length", "")
    return int(declared) if declared.isdigit() else 0


def _plain(response: Any) -> dict[str, Any] | None:
    """`plain_answer` of a 200 JSON answer's text (fastsend.utf8_text, else httpx's)."""
    text = utf8_text(response)
    return plain_answer(response.text if text is None else text)


def _str_map(value: Mapping[str, Any]) -> bool:
    return all(type(k) is str and type(v) is str for k, v in value.items())


class _FastGet(_FastCall):
    """`interactions.get(id)` of google-genai with the per-call overhead removed."""

    operation_id = "getInteractionById"

    def __init__(self, interactions: Any, parts: Mapping[str, Any]) -> None:
        super().__init__(interactions, parts)
        self._head = ""
        self._tail = ""
        self._one_large = asyncio.Lock()

    async def _prepare(self) -> None:
        """Build the request template the stock way (URL, headers, timeout)."""
        p, config = self._p, self._config
        base_url = self._sdk._get_url(None, None)
        request = self._sdk._build_request_async(
            method="GET",
            path="/{api_version}/interactions/{interactionsId}",
            base_url=base_url,
            url_variables=None,
            # stream=False: what the public `get` passes (`_optional_bool(False)`).
            request=p["GetInteractionByIDRequest"](id=_PLACEHOLDER_ID, stream=False),
            request_body_required=False,
            request_has_path_params=True,
            request_has_query_params=True,
            user_agent_header="user-agent",
            accept_header_value="application/json",
            http_headers=None,
            extra_query_params=None,
            _globals=p["GetInteractionByIDGlobals"](api_version=config.globals.api_version),
            security=config.security,
            allow_empty_value=None,
            timeout_ms=config.timeout_ms,
        )
        url = str(request.url)
        if url.count(_PLACEHOLDER_ID) != 1:
            raise ValueError("unexpected URL layout")
        self._head, self._tail = url.split(_PLACEHOLDER_ID)
        await self._keep_template(request, base_url)

    def accepts(self, handle: str) -> bool:
        return _SAFE_ID.fullmatch(handle) is not None

    async def get(self, handle: str) -> Any:
        """Call only after `ready()` returned True and `accepts(handle)`.

        An answer that declares a large body is read and parsed one at a
        time: while it is, it is held about three times over (its bytes, its
        text, the parsed object), and several at once would add up. Raises
        `AnswerDeferred` (answer_budget.py) when the answers the pass already
        holds leave no room for this one: its body is left unread."""
        response = await self._send("GET", self._head + handle + self._tail, stream=True)
        declared = _declared_size(response)
        async with self._one_large if declared >= LARGE_ANSWER else contextlib.nullcontext():
            await self._read_body(response, declared)
            return self._parse(response)

    def _parse(self, response: Any) -> Any:
        # The stock `_speakeasy_parse_response` + `CompatErrorHook` of getInteractionById:
        # a 200 JSON body is unmarshalled unvalidated into `Interaction`; every other
        # answer becomes the `APIError` subclass `APIError.generate` picks from the
        # status and the body (its message is built from those two alone).
        p = self._p
        if isinstance(response, WireAnswer):  # a 200 of UTF-8 JSON, read off the wire
            plain = response.plain()
            if plain is not None:
                return plain
            response = response.as_httpx()
        if p["match_response"](response, "200", "application/json"):
            plain = _plain(response)
            if plain is not None:  # the SDK's dump of it, without its models
                return plain
            text = response.text
            try:
                parsed = p["unmarshal_json_response"](p["Interaction"], response, text, False)
            except Exception as exc:
                self._raise_parse_error(exc)
            return p["_add_output_properties_if_interaction"](parsed)
        error = p["GenAiDefaultError"]("Unexpected response received", response, response.text)
        raise p["wrap_sdk_error"](error) from error


class _FastCreate(_FastCall):
    """`interactions.create(model=, input=, background=True, labels=, **config)` of
    google-genai with the per-call overhead removed.

    `body(...)` gives the JSON the stock create would send (None: use the stock create
    for this call); `create(body)` sends it once and parses the answer the stock way.
    A body of plain strings (str model and input, str labels, no other parameters) is
    dumped directly, in the SDK's field order and JSON settings (checked against the
    SDK's own dump of a probe when preparing); any other body goes through the SDK's
    own normalising, validation and serialisation, so it raises what the stock create
    raises before sending.
    """

    operation_id = "CreateInteraction"

    def __init__(self, interactions: Any, parts: Mapping[str, Any]) -> None:
        super().__init__(interactions, parts)
        self._url = ""
        self._plain = False

    async def _prepare(self) -> None:
        """Build the request template the stock way for a probe body (nothing is sent)."""
        p, config = self._p, self._config
        base_url = self._sdk._get_url(None, None)
        probe = _PROBE_CREATE
        sdk_body = self._sdk_body(probe["model"], probe["input"], probe["labels"], {})
        request_model = p["unmarshal"](
            {"api_version": None, "body": {**probe, "background": True}},
            p["CreateInteractionRequest"],
        )
        request = self._sdk._build_request_async(
            method="POST",
            path="/{api_version}/interactions",
            base_url=base_url,
            url_variables=None,
            request=request_model,
            request_body_required=True,
            request_has_path_params=True,
            request_has_query_params=True,
            user_agent_header="user-agent",
            accept_header_value="application/json",
            http_headers=None,
            extra_query_params=None,
            _globals=p["CreateInteractionGlobals"](api_version=config.globals.api_version),
            security=config.security,
            get_serialized_body=lambda: p["serialize_request_body"](
                request_model.body,
                False,
                False,
                "json",
                p["CreateInteractionRequestBody"],
                extra_body=None,
            ),
            allow_empty_value=None,
            timeout_ms=config.timeout_ms,
        )
        if request.method != "POST" or request.content != sdk_body.encode():
            raise ValueError("unexpected request layout")
        self._url = str(request.url)
        plain = self._plain_body(probe["model"], probe["input"], probe["labels"])
        self._plain = plain == sdk_body
        await self._keep_template(request, base_url)

    def body(self, model: Any, input_: Any, labels: dict[str, Any], extra: dict[str, Any]) -> Any:
        """The body the stock create sends for these arguments; None: use the stock create.

        Raises what the stock create raises before sending (TypeError for an unknown
        parameter, pydantic's ValidationError for a bad value). Call after `ready()`.
        """
        if extra.keys() & _STOCK_CREATE_KEYS:
            return None
        if (
            self._plain
            and not extra
            and type(model) is str
            and type(input_) is str
            and _str_map(labels)
        ):
            return self._plain_body(model, input_, labels)
        return self._sdk_body(model, input_, labels, extra)

    @staticmethod
    def _plain_body(model: str, input_: str, labels: Mapping[str, str]) -> str:
        # `CreateModelInteraction`'s field order, `marshal_json`'s json.dumps settings.
        body = {"model": model, "background": True, "input": input_, "labels": labels}
        return json.dumps(body, separators=_JSON_SEPARATORS)

    def _sdk_body(
        self, model: Any, input_: Any, labels: dict[str, Any], extra: dict[str, Any]
    ) -> Any:
        # What the stock create does with its keyword arguments, in its order:
        # `_normalize_create_body` (from_create_args), `unmarshal` into the request
        # model (with `api_version=None`, as `_send_create_once` passes it), and
        # `serialize_request_body` (in `_build_request_async`).
        p = self._p
        body = p["_normalize_create_body"](
            {"model": model, "input": input_, "background": True, "labels": labels, **extra}
        )
        request = p["unmarshal"]({"api_version": None, "body": body}, p["CreateInteractionRequest"])
        serialized = p["serialize_request_body"](
            request.body, False, False, "json", p["CreateInteractionRequestBody"], extra_body=None
        )
        return serialized.content

    async def create(self, body: Any) -> Any:
        """Send one POST (never repeated) and parse the answer the stock way."""
        response = await self._send("POST", self._url, body)
        if isinstance(response, WireAnswer):  # a 200 of UTF-8 JSON, read off the wire
            plain = response.plain()
            if plain is not None:
                return plain
            response = response.as_httpx()
        if self._p["match_response"](response, "200", "application/json"):
            plain = _plain(response)
            if plain is not None:  # the SDK's dump of it, without its models
                return plain
        try:
            parsed = self._parse(response)
        except Exception as exc:
            self._raise_parse_error(exc)
        return self._p["_add_output_properties_if_interaction"](parsed)

    def _parse(self, response: Any) -> Any:
        # The stock `_speakeasy_parse_response` of CreateInteraction, line by line.
        p = self._p
        match, unmarshal = p["match_response"], p["unmarshal_json_response"]
        default_error = p["GenAiDefaultError"]
        if match(response, "200", "application/json"):
            return unmarshal(p["Interaction"], response, response.text, False)
        if match(response, "200", "text/event-stream"):
            stream_event = p["InteractionSSEStreamEvent"]
            return p["AsyncStream"](
                response,
                lambda raw: unmarshal(stream_event, response, raw, validate=False).data,
                sentinel="[DONE]",
                client_ref=self._sdk,
            )
        create_errors = (
            ("4XX", p["CreateInteractionClientErrorData"], p["CreateInteractionClientError"]),
            ("5XX", p["CreateInteractionServerErrorData"], p["CreateInteractionServerError"]),
        )
        for pattern, data_cls, error_cls in create_errors:
            if match(response, pattern, "application/json"):
                text = response.text
                try:
                    data = unmarshal(data_cls, response, text)
                    raise error_cls(data, response, text)
                except p["ResponseValidationError"] as exc:
                    raise default_error(
                        "Error response body did not match expected schema", response, text
                    ) from exc
        raise default_error("Unexpected response received", response, response.text)
