"""`GeminiBackend`: the Backend port over google-genai's `client.aio.interactions`.

Talks to the real Gemini API or, through `base_url`, to the emulator. Every
SDK or transport exception is mapped to the `BackendError` tree; no SDK type
leaves this module.

Retries: the client is built with `HttpRetryOptions(attempts=1)`, so the SDK
never repeats a request (its default repeats create on 408/409/429/5xx and
on connection errors, which duplicates interactions when a response is lost,
DESIGN.md §1). Reads are not retried by the SDK either: the engine polls the
row again later, with backoff, and records each failure on the row.

Error classification:

    create                                  get / cancel
    429, 401, 403, 400 "API key not valid"  404 → InteractionGoneError
      → NotCreatedError(retryable=True)     408, 429, 5xx, 401, 403, timeouts,
    other 4xx → NotCreatedError(False)        connection errors, bad JSON
    408, 409, 5xx → MaybeCreatedError         → TransientReadError
    connect error / connect or pool         other 4xx → PermanentReadError
      timeout (nothing sent) → NotCreated(True)
    read/write timeout, reset, protocol
      error, malformed 200 → MaybeCreatedError

401/403 are retryable: the key is the operator's to fix, and once it is the
rows go on instead of having failed for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn, Self

from reclaim_tui.core.backend import LabelFinder, map_api_status
from reclaim_tui.core.models import JobSpec, RemoteInteraction, RemoteState
from reclaim_tui.errors import (
    BackendError,
    ConfigError,
    InteractionGoneError,
    MaybeCreatedError,
    NotCreatedError,
    PermanentReadError,
    TransientReadError,
)

__all__ = [
    "EMULATOR_DEFAULT_KEY",
    "FAST_PATH_SDK_VERSION",
    "GeminiBackend",
    "install_fast_path",
    "interaction_from_json",
    "resolve_api_key",
]

EMULATOR_DEFAULT_KEY = "emulator-key"
FAST_PATH_SDK_VERSION = "3.3.0"

def resolve_api_key(flag_value: str | None) -> str | None:
    """The API key from the flag, else GEMINI_API_KEY, else GOOGLE_API_KEY."""
    for value in (flag_value, os.environ.get("GEMINI_API_KEY"), os.environ.get("GOOGLE_API_KEY")):
        if value:
            return value
    return None


# -- output mapping ---------------------------------------------------------------------
def _texts(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    return [
        item["text"]
        for item in content
        if isinstance(item, dict)
        and item.get("type") == "text"
        and isinstance(item.get("text"), str)
    ]


def _output_text(raw: Mapping[str, Any]) -> str | None:
    parts: list[str] = []
    for step in raw.get("steps") or ():
        if isinstance(step, dict) and step.get("type") == "model_output":
            parts.extend(_texts(step.get("content")))
    if not parts:
        # Legacy shape: a flat `outputs` list of content blocks.
        parts = _texts(raw.get("outputs"))
    if parts:
        return "".join(parts)
    text = raw.get("output_text")
    return text if isinstance(text, str) and text else None


def _error_text(raw: Mapping[str, Any], status: str, state: RemoteState) -> str | None:
    messages = [
        str(err.get("message") or err.get("code"))
        for err in raw.get("errors") or ()
        if isinstance(err, dict) and (err.get("message") or err.get("code"))
    ]
    for step in raw.get("steps") or ():
        error = step.get("error") if isinstance(step, dict) else None
        if error:
            messages.append(str(error.get("message", error) if isinstance(error, dict) else error))
    if messages:
        return "; ".join(messages)
    if state is RemoteState.FAILED:
        return f"interaction ended with status {status!r}"
    return None


def interaction_from_json(raw: Mapping[str, Any]) -> RemoteInteraction:
    """Our view of one interaction JSON object (as the API or the SDK gives it)."""
    status = raw.get("status")
    api_status = status if isinstance(status, str) else ""
    state = map_api_status(api_status)
    usage = raw.get("usage")
    return RemoteInteraction(
        id=str(raw.get("id") or ""),
        state=state,
        api_status=api_status,
        output_text=_output_text(raw),
        usage=usage if isinstance(usage, dict) else None,
        error=_error_text(raw, api_status, state),
        raw=dict(raw),
    )


def _to_remote(interaction: Any) -> RemoteInteraction:
    if isinstance(interaction, Mapping):
        raw: Any = dict(interaction)
    else:
        raw = interaction.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(raw, dict) or not raw.get("id"):
        raise ValueError("the response is not an interaction object")
    return interaction_from_json(raw)


# -- error mapping ----------------------------------------------------------------------
# httpx (or its fork httpx2, which google-genai 3.3 may use) exception names;
# matched by name so the mapping works with either package.
_NOT_SENT = frozenset({"ConnectError", "ConnectTimeout", "PoolTimeout", "UnsupportedProtocol"})
_TRANSPORT = frozenset({"TransportError", "TimeoutException", "NetworkError", "ProtocolError"})


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for err in _chain(exc) for cls in type(err).__mro__}


def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _is_transport(exc: BaseException) -> bool:
    names = _names(exc)
    return bool(names & (_TRANSPORT | _NOT_SENT)) or "APIConnectionError" in names


def _is_bad_key(exc: BaseException) -> bool:
    text = f"{exc} {getattr(exc, 'body', '')}"
    return "API_KEY_INVALID" in text or "API key not valid" in text


class _Redactor:
    """Builds error messages that never contain the API key."""

    def __init__(self, secret: str) -> None:
        self._secret = secret

    def __call__(self, what: str, exc: BaseException) -> str:
        detail = str(exc) or type(exc).__name__
        if self._secret:
            detail = detail.replace(self._secret, "***")
        return f"{what}: {type(exc).__name__}: {detail[:500]}"


def _create_error(exc: BaseException, say: _Redactor) -> BackendError:
    status = _http_status(exc)
    if status is not None and status >= 400:
        message = say(f"create answered HTTP {status}", exc)
        if status in (401, 403, 429) or (status == 400 and _is_bad_key(exc)):
            return NotCreatedError(message, status, retryable=True)
        if status in (408, 409) or status >= 500:
            return MaybeCreatedError(message, status)
        return NotCreatedError(message, status, retryable=False)
    if _is_transport(exc):
        if _names(exc) & _NOT_SENT:
            return NotCreatedError(say("create was not sent", exc), retryable=True)
        return MaybeCreatedError(say("create sent, no usable answer", exc))
    if isinstance(exc, (TypeError, ValueError)) and status is None:
        # Raised by the SDK while building the request: nothing was sent.
        return NotCreatedError(say("create request rejected by the SDK", exc), retryable=False)
    return MaybeCreatedError(say("create outcome unknown", exc), status)


def _read_error(what: str, exc: BaseException, say: _Redactor) -> BackendError:
    status = _http_status(exc)
    if status is not None and status >= 400:
        message = say(f"{what} answered HTTP {status}", exc)
        if status == 404:
            return InteractionGoneError(message, status)
        if status in (401, 403, 408, 409, 429) or status >= 500:
            return TransientReadError(message, status)
        return PermanentReadError(message, status)
    return TransientReadError(say(f"{what} failed", exc), status)


# -- fast path --------------------------------------------------------------------------
# google-genai 3.3.0 redoes per-type work on every call: `serializers.unmarshal`
# and `marshal_json` build a fresh pydantic model (`create_model("Unmarshaller",
# body=(typ, ...), ...)`), and `utils/url.py`, `queryparams.py` and `forms.py`
# re-evaluate the request class's string annotations (`get_type_hints`): about
# 15 ms of CPU per create and 5 ms per get. The fast path memoizes those two
# pure functions per argument, and only inside GeminiBackend calls (a
# ContextVar), so other users of the SDK in the process see the stock path.
# Same arguments give an equivalent model / the same hints: results are unchanged.
_FAST = contextvars.ContextVar("reclaim_tui_fast_path", default=False)
_MODEL_CACHE: dict[Any, Any] = {}
_HINTS_CACHE: dict[type, dict[str, Any]] = {}
_HINT_MODULES = ("url", "queryparams", "forms")
_installed: list[bool] = []


def _first(pair: tuple[str, Any]) -> str:
    return pair[0]


def _memo_create_model(stock: Callable[..., Any]) -> Callable[..., Any]:
    def create_model(model_name: str, /, **fields: Any) -> Any:
        if not _FAST.get():
            return stock(model_name, **fields)
        try:
            config = fields.get("__config__") or {}
            body = sorted(((k, v) for k, v in fields.items() if k != "__config__"), key=_first)
            key = (model_name, tuple(body), tuple(sorted(config.items(), key=_first)))
            model = _MODEL_CACHE.get(key)
        except TypeError:  # an unhashable field type: build it the stock way
            return stock(model_name, **fields)
        if model is None:
            model = _MODEL_CACHE[key] = stock(model_name, **fields)
        return model

    return create_model


def _memo_type_hints(stock: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    def get_type_hints(obj: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if not _FAST.get() or args or kwargs or not isinstance(obj, type):
            return stock(obj, *args, **kwargs)
        hints = _HINTS_CACHE.get(obj)
        if hints is None:
            hints = _HINTS_CACHE[obj] = stock(obj)
        return dict(hints)

    return get_type_hints


def _sdk_shape_ok(serializers: Any, hint_modules: list[Any]) -> bool:
    import typing

    import pydantic

    unmarshal = getattr(serializers, "unmarshal", None)
    marshal = getattr(serializers, "marshal_json", None)
    if unmarshal is None or marshal is None:
        return False
    if serializers.__dict__.get("create_model") is not pydantic.create_model:
        return False
    if any(m.__dict__.get("get_type_hints") is not typing.get_type_hints for m in hint_modules):
        return False
    params = list(inspect.signature(unmarshal).parameters)
    wanted = ["val", "typ", "coerce_iterables", "allow_unknown_union_variants"]
    return params == wanted and list(inspect.signature(marshal).parameters) == ["val", "typ"]


def install_fast_path(version: str | None = None) -> bool:
    """Install the memoized helpers if the SDK is exactly 3.3.0; True when active.

    `version` overrides the detected SDK version (tests use it to check the
    fallback). Any surprise leaves the stock SDK untouched and returns False.
    """
    try:
        import importlib

        from google import genai

        if (version or genai.__version__) != FAST_PATH_SDK_VERSION:
            return False
        if _installed:
            return True
        base = "google.genai._gaos.utils."
        serializers = importlib.import_module(base + "serializers")
        hint_modules = [importlib.import_module(base + name) for name in _HINT_MODULES]
        if not _sdk_shape_ok(serializers, hint_modules):
            return False
        setattr(serializers, "create_model", _memo_create_model(serializers.create_model))  # noqa: B010
        for module in hint_modules:
            setattr(module, "get_type_hints", _memo_type_hints(module.get_type_hints))  # noqa: B010
        _installed.append(True)
        return True
    except Exception:  # a changed SDK layout: use the stock path
        return False


@contextlib.contextmanager
def _fast_path(enabled: bool) -> Iterator[None]:
    token = _FAST.set(enabled)
    try:
        yield
    finally:
        _FAST.reset(token)


# -- fast get and fast create ----------------------------------------------------------
# Even memoized, the stock `interactions.get` spends ~1.2 ms of CPU and `create` ~1 ms on
# work that is the same for every call: speakeasy rebuilds the URL, query and headers from
# the request model, runs the auth hook in a worker thread (`SyncToAsyncBeforeRequestAdapter`
# → asyncio.to_thread, ~0.2 ms alone) and wraps the send in its retry loop; create also
# validates the body into a pydantic model and dumps it again (~0.2 ms). `_FastGet` and
# `_FastCreate` ask the stock builder once (a placeholder id, a probe body) and keep the
# URL, headers and timeout it produced; each call then sends through the SDK's own httpx
# client and parses the answer with the SDK's own parser and error mapping. What is sent
# and what comes back are the stock path's (tests/unit/test_gemini_fastpath.py compares
# both). Neither retries: one call, one request (create: exactly one POST per attempt).
_PLACEHOLDER_ID = "reclaimtuiplaceholderid0"
_SAFE_ID = re.compile(r"[A-Za-z0-9._~-]{1,512}")  # spliced verbatim into the URL
_GAOS = "google.genai._gaos"
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


def _str_map(value: Mapping[str, Any]) -> bool:
    return all(type(k) is str and type(v) is str for k, v in value.items())


class _FastCall:
    """What `_FastGet` and `_FastCreate` share: the layout check, the request template,
    auth, the send and the SDK's error wrapping. Use `attach(interactions)`: None when
    the SDK's layout is not the one this was written against (then the stock call is
    used). Calls return what the stock calls return (SDK objects) and raise what they
    raise (the SDK's `APIError` classes), so the backend maps both the same way.
    """

    operation_id = ""

    def __init__(self, interactions: Any, parts: dict[str, Any]) -> None:
        self._sdk = interactions
        self._p = parts
        self._config = interactions.sdk_configuration
        self._headers: dict[str, str] = {}
        self._timeout: Any = None
        self._hook_context: Any = None
        self._auth_per_call = True
        self._state: bool | None = None  # None: not prepared yet; False: unusable
        self._preparing = asyncio.Lock()

    @classmethod
    def attach(cls, interactions: Any) -> Self | None:
        """An instance of `cls` for this SDK resource, or None to keep the stock call."""
        try:
            parts = _sdk_parts()
            config = interactions.sdk_configuration
            hooks = config.__dict__["_async_hooks"]
            adapters = parts["adapters"]
            compat = parts["CompatErrorHook"]
            retry = config.retry_config

            def wraps(found: list[Any], adapter: type, hook: type) -> bool:
                return [type(h) for h in found] == [adapter] and isinstance(
                    found[0]._sync_hook, hook
                )

            # Exactly the stock hooks: the auth hook before, the error mapper after.
            if (
                not wraps(
                    hooks.before_request_hooks,
                    adapters.SyncToAsyncBeforeRequestAdapter,
                    parts["GoogleGenAIAuthHook"],
                )
                or not wraps(hooks.after_error_hooks, adapters.SyncToAsyncAfterErrorAdapter, compat)
                or not wraps(
                    hooks.after_parse_error_hooks,
                    adapters.SyncToAsyncAfterParseErrorAdapter,
                    compat,
                )
                or hooks.after_success_hooks
                # The backend turns SDK retries off; anything else keeps the stock loop.
                or not isinstance(retry, parts["RetryConfig"])
                or retry.max_retries != 0
                or not callable(getattr(interactions, "_build_request_async", None))
                or not callable(getattr(interactions, "_get_url", None))
            ):
                return None
        except Exception:  # a changed SDK layout: use the stock path
            return None
        return cls(interactions, parts)

    async def ready(self) -> bool:
        """Prepare on first use; False (for good) when the template surprised us."""
        if self._state is None:
            async with self._preparing:  # concurrent first calls prepare once
                if self._state is None:
                    try:
                        await self._prepare()
                        self._state = True
                    except Exception:
                        self._state = False
        return bool(self._state)

    async def _prepare(self) -> None:
        raise NotImplementedError

    async def _keep_template(self, request: Any, base_url: str | None) -> None:
        """Keep the timeout and headers of a request the stock builder made (nothing sent)."""
        p, config = self._p, self._config
        self._timeout = request.extensions.get("timeout")
        self._hook_context = p["HookContext"](
            config=config,
            base_url=base_url or "",
            operation_id=self.operation_id,
            oauth2_scopes=None,
            security_source=p["get_security_from_env"](config.security, p["Security"]),
            tags=["interactions"],
            extensions=None,
            response=p["ResponseContext"](mode="parsed", execution="async"),
        )
        # An API key (or no auth) gives the same headers on every call: run the auth
        # hook once. A callable source (Vertex credentials) refreshes tokens: per call.
        self._auth_per_call = callable(config.security)
        if not self._auth_per_call:
            request = await self._authorise(request)
        # Per-call auth: the template keeps no credential, the hook adds a fresh one.
        # httpx sets host and content-length for each request.
        dropped = {"host", "content-length"}
        if self._auth_per_call:
            dropped |= {"authorization", "x-goog-api-key"}
        self._headers = {k: v for k, v in request.headers.items() if k.lower() not in dropped}

    async def _authorise(self, request: Any) -> Any:
        hooks = self._config.__dict__["_async_hooks"]
        context = self._p["BeforeRequestContext"](self._hook_context)
        return await hooks.before_request(context, request)

    async def _send(self, method: str, url: str, content: str | None = None) -> Any:
        """One request through the SDK's httpx client; transport errors as the SDK's."""
        p = self._p
        client = self._config.async_client
        request = client.build_request(
            method,
            url,
            content=content,
            headers=self._headers,
            extensions={"timeout": self._timeout} if self._timeout is not None else None,
        )
        try:
            if self._auth_per_call:
                request = await self._authorise(request)
            return await client.send(request)
        except p["WRAP_EXCEPTIONS"] as exc:
            raise p["wrap_sdk_error"](exc) from exc

    def _raise_parse_error(self, exc: Exception) -> NoReturn:
        """Raise what the stock `raise_parse_error_async` raises through `CompatErrorHook`.

        Call inside the `except` block that caught `exc`.
        """
        wrapped = self._p["wrap_sdk_error"](exc)
        if wrapped is exc:
            raise exc
        raise wrapped from exc


class _FastGet(_FastCall):
    """`interactions.get(id)` of google-genai 3.3.0 with the per-call overhead removed."""

    operation_id = "getInteractionById"

    def __init__(self, interactions: Any, parts: dict[str, Any]) -> None:
        super().__init__(interactions, parts)
        self._head = ""
        self._tail = ""

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
            request=p["models"].GetInteractionByIDRequest(id=_PLACEHOLDER_ID, stream=False),
            request_body_required=False,
            request_has_path_params=True,
            request_has_query_params=True,
            user_agent_header="user-agent",
            accept_header_value="application/json",
            http_headers=None,
            extra_query_params=None,
            _globals=p["models"].GetInteractionByIDGlobals(api_version=config.globals.api_version),
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
        """Call only after `ready()` returned True and `accepts(handle)`."""
        response = await self._send("GET", self._head + handle + self._tail)
        return self._parse(response)

    def _parse(self, response: Any) -> Any:
        # The stock `_speakeasy_parse_response` + `CompatErrorHook` of getInteractionById:
        # a 200 JSON body is unmarshalled unvalidated into `Interaction`; every other
        # answer becomes the `APIError` subclass `APIError.generate` picks from the
        # status and the body (its message is built from those two alone).
        p = self._p
        text = response.text
        if p["match_response"](response, "200", "application/json"):
            try:
                parsed = p["unmarshal_json_response"](p["Interaction"], response, text, False)
            except Exception as exc:
                self._raise_parse_error(exc)
            return p["add_output_properties"](parsed)
        error = p["GenAiDefaultError"]("Unexpected response received", response, text)
        raise p["wrap_sdk_error"](error) from error


class _FastCreate(_FastCall):
    """`interactions.create(model=, input=, background=True, labels=, **config)` of
    google-genai 3.3.0 with the per-call overhead removed.

    `body(...)` gives the JSON the stock create would send (None: use the stock create
    for this call); `create(body)` sends it once and parses the answer the stock way.
    A body of plain strings (str model and input, str labels, no other parameters) is
    dumped directly, in the SDK's field order and JSON settings (checked against the
    SDK's own dump of a probe when preparing); any other body goes through the SDK's
    own normalising, validation and serialisation, so it raises what the stock create
    raises before sending.
    """

    operation_id = "CreateInteraction"

    def __init__(self, interactions: Any, parts: dict[str, Any]) -> None:
        super().__init__(interactions, parts)
        self._url = ""
        self._plain = False

    async def _prepare(self) -> None:
        """Build the request template the stock way for a probe body (nothing is sent)."""
        p, config = self._p, self._config
        models = p["models"]
        base_url = self._sdk._get_url(None, None)
        probe = _PROBE_CREATE
        sdk_body = self._sdk_body(probe["model"], probe["input"], probe["labels"], {})
        request_model = p["unmarshal"](
            {"api_version": None, "body": {**probe, "background": True}},
            models.CreateInteractionRequest,
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
            _globals=models.CreateInteractionGlobals(api_version=config.globals.api_version),
            security=config.security,
            get_serialized_body=lambda: p["serialize_request_body"](
                request_model.body,
                False,
                False,
                "json",
                models.CreateInteractionRequestBody,
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
        models = p["models"]
        body = p["normalize_create_body"](
            {"model": model, "input": input_, "background": True, "labels": labels, **extra}
        )
        request = p["unmarshal"](
            {"api_version": None, "body": body}, models.CreateInteractionRequest
        )
        serialized = p["serialize_request_body"](
            request.body, False, False, "json", models.CreateInteractionRequestBody, extra_body=None
        )
        return serialized.content

    async def create(self, body: Any) -> Any:
        """Send one POST (never repeated) and parse the answer the stock way."""
        response = await self._send("POST", self._url, body)
        try:
            parsed = self._parse(response)
        except Exception as exc:
            self._raise_parse_error(exc)
        return self._p["add_output_properties"](parsed)

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
        for pattern, data_cls, error_cls in p["create_errors"]:
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


def _sdk_parts() -> dict[str, Any]:
    """The SDK internals the fast calls use, by name (any import error: stock path)."""
    import importlib

    def mod(name: str) -> Any:
        return importlib.import_module(f"{_GAOS}.{name}")

    hooks, compat, utils = mod("_hooks"), mod("lib.compat_errors"), mod("utils")
    bridge, errors = mod("google_genai"), mod("errors")
    return {
        "adapters": mod("_hooks.adapters"),
        "GoogleGenAIAuthHook": mod("_hooks.google_genai_auth").GoogleGenAIAuthHook,
        "CompatErrorHook": compat.CompatErrorHook,
        "HookContext": hooks.HookContext,
        "BeforeRequestContext": hooks.BeforeRequestContext,
        "ResponseContext": hooks.ResponseContext,
        "RetryConfig": utils.RetryConfig,
        "get_security_from_env": utils.get_security_from_env,
        "match_response": utils.match_response,
        "unmarshal": utils.unmarshal,
        "serialize_request_body": utils.serialize_request_body,
        "AsyncStream": mod("utils.eventstreaming").AsyncStream,
        "Security": mod("types").Security,
        "models": mod("models"),
        "create_errors": (
            ("4XX", errors.CreateInteractionClientErrorData, errors.CreateInteractionClientError),
            ("5XX", errors.CreateInteractionServerErrorData, errors.CreateInteractionServerError),
        ),
        "ResponseValidationError": errors.ResponseValidationError,
        "Interaction": mod("types.interactions").Interaction,
        "InteractionSSEStreamEvent": mod("types.interactions").InteractionSSEStreamEvent,
        "unmarshal_json_response": mod("utils.unmarshal_json_response").unmarshal_json_response,
        "add_output_properties": bridge._add_output_properties_if_interaction,
        "normalize_create_body": bridge._normalize_create_body,
        "GenAiDefaultError": errors.GenAiDefaultError,
        "wrap_sdk_error": compat.wrap_sdk_error,
        "WRAP_EXCEPTIONS": compat._WRAP_EXCEPTIONS,
    }


# -- the backend ------------------------------------------------------------------------
class GeminiBackend:
    """The Backend port on google-genai (real API, or the emulator via `base_url`).

    `find_by_label` asks `finder` (the emulator's admin API, or any other
    search such as a webhook inbox); without one, `supports_lookup` is False:
    the real API cannot be searched. The backend owns the finder and closes it
    in `aclose`. `fast_path=False` keeps the stock SDK calls (benchmarks,
    tests); the default memoizes the SDK's helpers and sends get and create through
    `_FastGet` / `_FastCreate`.
    """

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None = None,
        request_timeout: float = 30.0,
        *,
        finder: LabelFinder | None = None,
        fast_path: bool = True,
    ) -> None:
        if not api_key:
            if base_url is None:
                raise ConfigError(
                    "no Gemini API key: pass --api-key or set GEMINI_API_KEY (or GOOGLE_API_KEY)"
                )
            api_key = EMULATOR_DEFAULT_KEY
        from google import genai
        from google.genai import types

        self.base_url = base_url.rstrip("/") if base_url else None
        self.request_timeout = request_timeout
        self.fast_path = fast_path and install_fast_path()
        self._finder = finder
        self.supports_lookup = finder is not None
        self._say = _Redactor(api_key)
        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=max(1, int(request_timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client = genai.Client(api_key=api_key, http_options=options)
        self._interactions = self._client.aio.interactions
        self._fast_get: _FastGet | None = None
        self._fast_create: _FastCreate | None = None
        if self.fast_path:
            self._fast_get = _FastGet.attach(self._interactions)
            self._fast_create = _FastCreate.attach(self._interactions)

    def __repr__(self) -> str:
        target = self.base_url or "Gemini API"
        return f"GeminiBackend({target}, fast_path={self.fast_path})"

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        extra = dict(spec.config)
        labels = {**(extra.pop("labels", None) or {}), "idem": idem}
        try:
            with _fast_path(self.fast_path):
                interaction = await self._create(spec.model, spec.input, labels, extra)
            return _to_remote(interaction)
        except Exception as exc:
            raise _create_error(exc, self._say) from exc

    async def _create(
        self, model: Any, input_: Any, labels: dict[str, Any], extra: dict[str, Any]
    ) -> Any:
        # Exactly one POST either way: the fast create is chosen before anything is sent.
        fast = self._fast_create
        if fast is not None:
            if await fast.ready():
                body = fast.body(model, input_, labels, extra)
                if body is not None:
                    return await fast.create(body)
            else:
                self._fast_create = None
        return await self._interactions.create(
            model=model, input=input_, background=True, labels=labels, **extra
        )

    async def get(self, handle: str) -> RemoteInteraction:
        return await self._read("get", handle)

    async def cancel(self, handle: str) -> RemoteInteraction:
        return await self._read("cancel", handle)

    async def _read(self, what: str, handle: str) -> RemoteInteraction:
        try:
            with _fast_path(self.fast_path):
                if what == "get":
                    interaction = await self._get(handle)
                else:
                    interaction = await self._interactions.cancel(handle)
            return _to_remote(interaction)
        except Exception as exc:
            raise _read_error(f"{what} {handle}", exc, self._say) from exc

    async def _get(self, handle: str) -> Any:
        fast = self._fast_get
        if fast is not None and fast.accepts(handle):
            if await fast.ready():
                return await fast.get(handle)
            self._fast_get = None
        return await self._interactions.get(handle)

    async def find_by_label(self, idem: str) -> RemoteInteraction | None:
        if self._finder is None:
            return None
        try:
            return await self._finder.find_by_label(idem)
        except BackendError:
            raise
        except Exception as exc:  # the Backend port raises only BackendError
            raise TransientReadError(self._say(f"lookup {idem}", exc)) from exc

    async def aclose(self) -> None:
        if self._finder is not None:
            await self._finder.aclose()
        await self._client.aio.aclose()
