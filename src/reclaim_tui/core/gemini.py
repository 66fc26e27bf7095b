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

import contextlib
import contextvars
import inspect
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from reclaim_tui.core.backend import map_api_status
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

Lookup = Callable[[str], Awaitable[RemoteInteraction | None]]


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


# -- the backend ------------------------------------------------------------------------
class GeminiBackend:
    """The Backend port on google-genai (real API, or the emulator via `base_url`).

    `emulator_lookup=True` (with an emulator `base_url`) makes `find_by_label`
    ask `/_emulator/find`; `lookup` plugs in any other search (a webhook
    inbox). Without either, `supports_lookup` is False: the real API cannot
    be searched. `fast_path=False` keeps the stock SDK unmarshal (benchmarks).
    """

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None = None,
        request_timeout: float = 30.0,
        lookup: Lookup | None = None,
        *,
        emulator_lookup: bool = False,
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
        self._lookup = lookup
        self._emulator_lookup = emulator_lookup and self.base_url is not None
        self.supports_lookup = lookup is not None or self._emulator_lookup
        self._say = _Redactor(api_key)
        self._session: Any = None
        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=max(1, int(request_timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client = genai.Client(api_key=api_key, http_options=options)
        self._interactions = self._client.aio.interactions

    def __repr__(self) -> str:
        target = self.base_url or "Gemini API"
        return f"GeminiBackend({target}, fast_path={self.fast_path})"

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        extra = dict(spec.config)
        labels = {**(extra.pop("labels", None) or {}), "idem": idem}
        try:
            with _fast_path(self.fast_path):
                interaction = await self._interactions.create(
                    model=spec.model, input=spec.input, background=True, labels=labels, **extra
                )
            return _to_remote(interaction)
        except Exception as exc:
            raise _create_error(exc, self._say) from exc

    async def get(self, handle: str) -> RemoteInteraction:
        return await self._read("get", handle)

    async def cancel(self, handle: str) -> RemoteInteraction:
        return await self._read("cancel", handle)

    async def _read(self, what: str, handle: str) -> RemoteInteraction:
        try:
            with _fast_path(self.fast_path):
                if what == "get":
                    interaction = await self._interactions.get(handle)
                else:
                    interaction = await self._interactions.cancel(handle)
            return _to_remote(interaction)
        except Exception as exc:
            raise _read_error(f"{what} {handle}", exc, self._say) from exc

    async def find_by_label(self, idem: str) -> RemoteInteraction | None:
        if self._lookup is not None:
            return await self._lookup(idem)
        if not self._emulator_lookup:
            return None
        try:
            found = await self._emulator_find(idem)
        except Exception as exc:
            raise TransientReadError(self._say(f"lookup {idem}", exc)) from exc
        return interaction_from_json(found[-1]) if found else None

    async def _emulator_find(self, idem: str) -> list[dict[str, Any]]:
        import aiohttp

        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self.request_timeout)
            self._session = aiohttp.ClientSession(timeout=timeout)
        url = f"{self.base_url}/_emulator/find"
        async with self._session.get(url, params={"idem": idem}) as response:
            response.raise_for_status()
            body = await response.json()
        if not isinstance(body, list):
            raise ValueError("the emulator's find answer is not a list")
        return [item for item in body if isinstance(item, dict)]

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self._client.aio.aclose()
