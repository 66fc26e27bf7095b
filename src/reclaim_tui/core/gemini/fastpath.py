"""The fast path: google-genai's per-call overhead removed, results unchanged.

Two layers, both off unless the SDK is one of the verified versions
(`FAST_PATH_SDK_VERSIONS`) and every internal it relies on is where it was
(anything else: the stock SDK path, and one warning on stderr):

- `install_fast_path` memoizes two pure SDK helpers, only inside GeminiBackend
  calls (`_fast_path`, a ContextVar);
- `_FastCall` (here) with `_FastGet` / `_FastCreate` (fastcalls.py) replay a
  request template the stock builder made once.

Every private google-genai name either layer touches is in the table below:
module-level names in `_SDK_NAMES` (imported once by `_sdk()`), and the few
attributes that belong to each client's objects next to it (checked by
`_FastCall.attach` for each client). tests/unit/test_gemini_fastpath.py proves
both layers give what the stock path gives. Names with a leading underscore
are private to the `core.gemini` package.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib
import inspect
import logging
import typing
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NoReturn, Self

from reclaim_tui.core import answer_budget
from reclaim_tui.core.gemini.fastsend import RequestMaker
from reclaim_tui.core.gemini.fastwire import WireSend

__all__ = ["FAST_PATH_SDK_VERSION", "FAST_PATH_SDK_VERSIONS", "install_fast_path"]

# The google-genai versions the fast path switches on for. Each is one a required CI run
# installs (pyproject.toml's lower bound in `./dev test-oldest`, the lock's in `./dev
# test`), where tests/contract/test_fast_path_versions.py proves the stock and the fast
# path give identical results and tests/unit/test_gemini_fastpath.py compares them call
# by call; tests/unit/test_tested_versions.py fails for a version listed here that no CI
# run installs. Versions between them passed the same tests by hand once, but nothing
# keeps them passing: they get the stock path (same results, more CPU). To add one, add
# a CI run that installs it (`RECLAIM_SDK=X.Y.Z ./dev test tests/unit/test_gemini_fastpath.py
# tests/contract`), then list it here. Across the listed versions every name of
# `_SDK_NAMES` below has the same source (inspect.getsource), as have basesdk.py and the
# stock get/cancel; around them, later versions moved the error classes that
# `wrap_sdk_error` builds from `lib/compat_errors.py` to `google/genai/
# _interactions_errors.py` (same names, re-exported) and added the status "idle": the
# fast path names neither, so both paths raise and return each version's own classes
# (the tests compare the exception classes, and an "idle" interaction).
FAST_PATH_SDK_VERSIONS: tuple[str, ...] = ("3.3.0", "3.6.1")
FAST_PATH_SDK_VERSION = FAST_PATH_SDK_VERSIONS[-1]  # the newest verified; see the tuple

_log = logging.getLogger(__name__)

# -- the google-genai internals the fast path touches --------------------------------------
_GAOS = "google.genai._gaos"
# (module under `_GAOS`, attribute; "" for the module itself). Each is used under its
# attribute name, a module under the last part of its path.
_SDK_NAMES: tuple[tuple[str, str], ...] = (
    # The memo replaces these modules' `create_model` / `get_type_hints` globals
    # (`_sdk_shape_ok` checks them, and `unmarshal` / `marshal_json`, first).
    ("utils.serializers", ""),
    ("utils.url", ""),
    ("utils.queryparams", ""),
    ("utils.forms", ""),
    # The stock hooks and retry settings `attach` insists on.
    ("_hooks.adapters", "SyncToAsyncBeforeRequestAdapter"),
    ("_hooks.adapters", "SyncToAsyncAfterErrorAdapter"),
    ("_hooks.adapters", "SyncToAsyncAfterParseErrorAdapter"),
    ("_hooks.google_genai_auth", "GoogleGenAIAuthHook"),
    ("lib.compat_errors", "CompatErrorHook"),
    ("utils", "RetryConfig"),
    # Building the request template and running the auth hook.
    ("_hooks", "HookContext"),
    ("_hooks", "BeforeRequestContext"),
    ("_hooks", "ResponseContext"),
    ("utils", "get_security_from_env"),
    ("types", "Security"),
    ("models", "GetInteractionByIDRequest"),
    ("models", "GetInteractionByIDGlobals"),
    ("models", "CreateInteractionRequest"),
    ("models", "CreateInteractionRequestBody"),
    ("models", "CreateInteractionGlobals"),
    ("google_genai", "_normalize_create_body"),
    ("utils", "unmarshal"),
    ("utils", "serialize_request_body"),
    # Sending, and reading the answer the stock way.
    ("lib.compat_errors", "_WRAP_EXCEPTIONS"),
    ("lib.compat_errors", "wrap_sdk_error"),
    ("utils", "match_response"),
    ("utils.unmarshal_json_response", "unmarshal_json_response"),
    ("types.interactions", "Interaction"),
    ("types.interactions", "InteractionSSEStreamEvent"),
    ("utils.eventstreaming", "AsyncStream"),
    ("google_genai", "_add_output_properties_if_interaction"),
    ("errors", "GenAiDefaultError"),
    ("errors", "ResponseValidationError"),
    ("errors", "CreateInteractionClientErrorData"),
    ("errors", "CreateInteractionClientError"),
    ("errors", "CreateInteractionServerErrorData"),
    ("errors", "CreateInteractionServerError"),
)
# Private attributes of each client's objects: they cannot be looked up once, so
# `attach` checks them for every `interactions` resource it is given.
_SDK_METHODS = ("_build_request_async", "_get_url")  # of `interactions`
_SDK_HOOKS = "_async_hooks"  # in `sdk_configuration.__dict__`, where the SDK itself reads it
_SDK_WRAPPED_HOOK = "_sync_hook"  # the hook each `SyncToAsync…Adapter` wraps


def _sdk_key(module: str, attribute: str) -> str:
    return attribute or module.rpartition(".")[2]


@functools.cache
def _sdk() -> Mapping[str, Any] | None:
    """Every name of `_SDK_NAMES` by its key, imported once; None if any is missing."""
    try:
        found = {}
        for module, attribute in _SDK_NAMES:
            value = importlib.import_module(f"{_GAOS}.{module}")
            found[_sdk_key(module, attribute)] = getattr(value, attribute) if attribute else value
    except Exception:  # a changed SDK layout: the fast path stays off
        return None
    return MappingProxyType(found)


# -- memoized SDK helpers --------------------------------------------------------------------
# google-genai (3.3.0–3.6.1) redoes per-type work on every call: `serializers.unmarshal`
# and `marshal_json` build a fresh pydantic model (`create_model("Unmarshaller",
# body=(typ, ...), ...)`), and `utils/url.py`, `queryparams.py` and `forms.py`
# re-evaluate the request class's string annotations (`get_type_hints`): many
# times the CPU of the call's own work. The fast path memoizes those two
# pure functions per argument, and only inside GeminiBackend calls (a
# ContextVar), so other users of the SDK in the process see the stock path.
# Same arguments give an equivalent model / the same hints: results are unchanged.
_FAST = contextvars.ContextVar("reclaim_tui_fast_path", default=False)
_MODEL_CACHE: dict[Any, Any] = {}
_HINTS_CACHE: dict[type, dict[str, Any]] = {}
_HINT_MODULES = ("url", "queryparams", "forms")
_installed: list[bool] = []
_warned: list[str] = []  # the one "stock path" warning of this process, once given


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
    """True when the modules the memo patches are still stock and as verified."""
    import pydantic  # lazily, as google.genai: importing this package stays cheap

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
    """Install the memoized helpers on a verified SDK version; True when active.

    `version` overrides the detected SDK version (tests use it to check the
    fallback). An unverified version, a name of the table missing, or any other
    surprise leaves the stock SDK untouched, returns False and logs one warning
    per process (on stderr when logging is not configured).
    """
    from google import genai

    version = version or str(genai.__version__)
    if version not in FAST_PATH_SDK_VERSIONS:
        verified = ", ".join(FAST_PATH_SDK_VERSIONS)
        _warn_once(f"google-genai {version} is not one the fast path was verified on ({verified})")
        return False
    try:
        if _install():
            return True
    except Exception:  # a changed SDK layout: use the stock path
        pass
    _warn_once(f"google-genai {version} lacks an SDK internal the fast path was verified with")
    return False


def _install() -> bool:
    sdk = _sdk()
    if sdk is None:
        return False
    if _installed:
        return True
    serializers = sdk["serializers"]
    hint_modules = [sdk[name] for name in _HINT_MODULES]
    if not _sdk_shape_ok(serializers, hint_modules):
        return False
    setattr(serializers, "create_model", _memo_create_model(serializers.create_model))  # noqa: B010
    for module in hint_modules:
        setattr(module, "get_type_hints", _memo_type_hints(module.get_type_hints))  # noqa: B010
    _installed.append(True)
    return True


def _warn_once(reason: str) -> None:
    # Once per process: every GeminiBackend asks, and the answer does not change.
    if not _warned:
        _warned.append(reason)
        _log.warning("%s: using the stock SDK path (same results, more CPU per call)", reason)


@contextlib.contextmanager
def _fast_path(enabled: bool) -> Iterator[None]:
    """The memo is active inside this block when `enabled` (this task only)."""
    token = _FAST.set(enabled)
    try:
        yield
    finally:
        _FAST.reset(token)


class _FastCall:
    """What `_FastGet` and `_FastCreate` share: the layout check, the request template,
    auth, the send and the SDK's error wrapping. Use `attach(interactions)`: None when
    the SDK's layout is not the one this was written against (then the stock call is
    used). Calls return what the stock calls return (SDK objects; a 200 answer in the
    shape core/gemini/answers.py checks: the dict the backend would dump) and raise what they
    raise (the SDK's `APIError` classes), so the backend maps both the same way.
    """

    operation_id = ""

    def __init__(self, interactions: Any, parts: Mapping[str, Any]) -> None:
        self._sdk = interactions
        self._p = parts
        self._config = interactions.sdk_configuration
        self._headers: dict[str, str] = {}
        self._timeout: Any = None
        self._hook_context: Any = None
        self._requests = RequestMaker({}, None)  # replaced by the template's
        self._wire = WireSend(parts["match_response"])
        self._auth_per_call = True
        self._state: bool | None = None  # None: not prepared yet; False: unusable
        self._preparing = asyncio.Lock()

    @classmethod
    def attach(cls, interactions: Any) -> Self | None:
        """An instance of `cls` for this SDK resource, or None to keep the stock call."""
        parts = _sdk()
        if parts is None:
            return None
        try:
            config = interactions.sdk_configuration
            hooks = config.__dict__[_SDK_HOOKS]
            compat = parts["CompatErrorHook"]
            retry = config.retry_config

            def wraps(found: list[Any], adapter: type, hook: type) -> bool:
                return [type(h) for h in found] == [adapter] and isinstance(
                    getattr(found[0], _SDK_WRAPPED_HOOK), hook
                )

            # Exactly the stock hooks: the auth hook before, the error mapper after.
            if (
                not wraps(
                    hooks.before_request_hooks,
                    parts["SyncToAsyncBeforeRequestAdapter"],
                    parts["GoogleGenAIAuthHook"],
                )
                or not wraps(hooks.after_error_hooks, parts["SyncToAsyncAfterErrorAdapter"], compat)
                or not wraps(
                    hooks.after_parse_error_hooks,
                    parts["SyncToAsyncAfterParseErrorAdapter"],
                    compat,
                )
                or hooks.after_success_hooks
                # The backend turns SDK retries off; anything else keeps the stock loop.
                or not isinstance(retry, parts["RetryConfig"])
                or retry.max_retries != 0
                or not all(callable(getattr(interactions, m, None)) for m in _SDK_METHODS)
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
        self._requests = RequestMaker(self._headers, self._timeout)

    async def _authorise(self, request: Any) -> Any:
        hooks = self._config.__dict__[_SDK_HOOKS]
        context = self._p["BeforeRequestContext"](self._hook_context)
        return await hooks.before_request(context, request)

    async def _send(
        self, method: str, url: str, content: str | None = None, *, stream: bool = False
    ) -> Any:
        """One request through the SDK's httpx client (or straight to its aiohttp
        session: fastwire.py); transport errors as the SDK's. With `stream` the
        body is left unread (`_read_body`)."""
        p, client, maker = self._p, self._config.async_client, self._requests
        wire = not self._auth_per_call and self._wire.usable(client, maker, method, url, content)
        request = None if wire else maker.build(client, method, url, content)
        try:
            if request is None:
                return await self._wire.send(client, maker, method, url, content, stream)
            if self._auth_per_call:
                request = await self._authorise(request)
            return await client.send(request, stream=stream)
        except p["_WRAP_EXCEPTIONS"] as exc:
            raise p["wrap_sdk_error"](exc) from exc

    async def _read_body(self, response: Any, declared: int = 0) -> None:
        """Read a streamed answer's body (the stream is closed after it, error or
        not); transport errors as the SDK's. Its bytes are counted by the pass's
        answer budget (answer_budget.py): the `declared` length before anything
        is read, what comes beyond it (no length declared, or a compressed body)
        as it is read. Refused: `AnswerDeferred`, the rest left unread."""
        p = self._p
        try:
            answer_budget.take(declared)
            parts: list[bytes] = []
            read = 0
            async with contextlib.aclosing(response.aiter_bytes()) as chunks:
                async for part in chunks:
                    read += len(part)
                    if read > declared:
                        answer_budget.take(min(len(part), read - declared))
                    parts.append(part)
            # What httpx's own `aread` keeps: `response.text` reads it.
            response._content = b"".join(parts)
        except p["_WRAP_EXCEPTIONS"] as exc:
            raise p["wrap_sdk_error"](exc) from exc
        finally:
            await response.aclose()

    def _raise_parse_error(self, exc: Exception) -> NoReturn:
        """Raise what the stock `raise_parse_error_async` raises through `CompatErrorHook`.

        Call inside the `except` block that caught `exc`.
        """
        wrapped = self._p["wrap_sdk_error"](exc)
        if wrapped is exc:
            raise exc
        raise wrapped from exc
