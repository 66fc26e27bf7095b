"""`GeminiBackend`: the Backend port over google-genai's `client.aio.interactions`.

Talks to the real Gemini API or, through `base_url`, to the emulator. Every
SDK or transport exception is mapped to the `BackendError` tree (errors.py);
no SDK type leaves this package.

Retries: the client is built with `HttpRetryOptions(attempts=1)`, so the SDK
never repeats a request (its default repeats create on 408/409/429/5xx and
on connection errors, which duplicates interactions when a response is lost,
DESIGN.md §1). Reads are not retried by the SDK either: the engine polls the
row again later, with backoff, and records each failure on the row.

The SDK calls go through the fast path when the SDK is a verified version, and
through the stock SDK otherwise; its one door is fastgate.py (`attach_fast_path`).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from reclaim_tui.core.answer_budget import AnswerDeferred
from reclaim_tui.core.api_key import resolve_api_key
from reclaim_tui.core.backend import LabelFinder, map_api_status
from reclaim_tui.core.gemini.errors import Redactor, create_error, read_error
from reclaim_tui.core.ledger.inbox import ATTEMPT_FIELD, KEY_FIELD
from reclaim_tui.core.models import (
    ATTEMPT_LABEL,
    TRANSPORTS,
    JobSpec,
    RemoteInteraction,
    RemoteState,
    make_interaction,
)
from reclaim_tui.core.outputs import output_text
from reclaim_tui.errors import BackendError, ConfigError, TransientReadError

if TYPE_CHECKING:
    from reclaim_tui.core.gemini.fastgate import FastCreate, FastGet

__all__ = ["EMULATOR_DEFAULT_KEY", "GeminiBackend", "interaction_from_json", "resolve_api_key"]

EMULATOR_DEFAULT_KEY = "emulator-key"


# -- output mapping ---------------------------------------------------------------------
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
    return make_interaction(
        id=str(raw.get("id") or ""),
        state=state,
        api_status=api_status,
        output_text=output_text(raw),
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


def _webhook_config(own: Any, url: str, idem: str, attempt: str | None) -> dict[str, Any]:
    """The job's own webhook_config (if any) plus the inbox's URI, and the
    job's key and attempt in `user_metadata`: every event for the interaction
    names its job and the attempt it was created for."""
    config = dict(own) if isinstance(own, Mapping) else {}
    uris = [u for u in config.get("uris") or [] if u != url]
    metadata = dict(config.get("user_metadata") or {})
    metadata[KEY_FIELD] = idem
    metadata.pop(ATTEMPT_FIELD, None)
    if attempt is not None:
        metadata[ATTEMPT_FIELD] = attempt
    return {**config, "uris": [*uris, url], "user_metadata": metadata}


# -- the backend ------------------------------------------------------------------------
_LAZY = frozenset({"_client", "_interactions", "_fast_get", "_fast_create", "_fast_scope"})


class GeminiBackend:
    """The Backend port on google-genai (real API, or the emulator via `base_url`).

    `find_by_label` asks `finder` (the emulator's admin API, or any other
    search such as a webhook inbox); without one, `supports_lookup` is False:
    the real API cannot be searched. The backend owns the finder and closes it
    in `aclose`. `fast_path=False` keeps the stock SDK calls (benchmarks,
    tests); the default memoizes the SDK's helpers and sends get and create through
    `_FastGet` / `_FastCreate`. `http_client` is an async client of the httpx shape
    for the SDK (`HttpOptions.httpx_async_client`; benchmarks/cpu_per_call.py
    compares transports with it); None keeps the SDK's own. `transport="aiohttp"`
    (the product's default, config.Settings) sends through httpx-aiohttp's client
    for the SDK's httpx2 instead of the SDK's own httpx2 transport: less CPU per
    call; errors.py keeps "not sent" apart from "outcome unknown" for it. This
    class keeps the SDK's own client unless told, as a library caller expects.
    """

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None = None,
        request_timeout: float = 30.0,
        *,
        finder: LabelFinder | None = None,
        fast_path: bool = True,
        webhook_url: str | None = None,
        http_client: Any = None,
        transport: str = "httpx",
    ) -> None:
        if transport not in TRANSPORTS:
            raise ConfigError(
                f"transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}"
            )
        if transport == "aiohttp" and importlib.util.find_spec("httpx_aiohttp") is None:
            raise ConfigError(
                "the aiohttp transport needs httpx-aiohttp: pip install 'reclaim-tui[aiohttp]',"
                " or choose --transport httpx"
            )
        if not api_key:
            if base_url is None:
                raise ConfigError(
                    "no Gemini API key: pass --api-key or set GEMINI_API_KEY (or GOOGLE_API_KEY)"
                )
            api_key = EMULATOR_DEFAULT_KEY
        self.base_url = base_url.rstrip("/") if base_url else None
        self.request_timeout = request_timeout
        self._finder = finder
        self.supports_lookup = finder is not None
        self.webhook_url = webhook_url
        self._say = Redactor(api_key)
        self._api_key = api_key
        self._want_fast = fast_path
        self._http_client = http_client
        self.transport = transport
        # A client made in `_build` is ours to close (the SDK closes only its own).
        self._own_client = False
        self._built = False
        self._fast = False
        # _client, _interactions, _fast_get, _fast_create and _fast_scope are
        # built on first use (__getattr__ → _build).

    #: Built by `_build`, on the first access of any of them.
    _client: Any
    _interactions: Any
    _fast_get: FastGet | None
    _fast_create: FastCreate | None
    #: the memoized SDK helpers are on inside its block (fastgate.FastPath.scope)
    _fast_scope: Callable[[bool], AbstractContextManager[None]]

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes not set yet: the SDK's, before `_build`.
        if name in _LAZY and not self.__dict__.get("_built", True):
            self._build()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _build(self) -> None:
        """Import the SDK and build its client: on the first call, not at
        construction — importing google-genai is most of a cold start's CPU,
        and a cron tick with nothing due must not pay it."""
        from google import genai
        from google.genai import types

        # The fast path's modules come with the SDK: an idle tick imports none.
        from reclaim_tui.core.gemini.fastgate import attach_fast_path

        if self.transport == "aiohttp" and self._http_client is None:
            # Made without a session: it opens one on its first request, in the
            # event loop that sends it (this runs on a worker thread).
            # An optional dependency: imported by name, checked in __init__.
            aiohttp_httpx2 = importlib.import_module("httpx_aiohttp.httpx2")
            self._http_client, self._own_client = aiohttp_httpx2.Httpx2AiohttpClient(), True
        options = types.HttpOptions(
            base_url=self.base_url,
            timeout=max(1, int(self.request_timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
            httpx_async_client=self._http_client,
        )
        self._client = genai.Client(api_key=self._api_key, http_options=options)
        self._interactions = self._client.aio.interactions
        fast = attach_fast_path(self._interactions, self._want_fast)
        self._fast, self._fast_scope = fast.on, fast.scope
        self._fast_get, self._fast_create = fast.get, fast.create
        self._built = True

    async def warm(self) -> None:
        """Build the client now (the engine calls this after a claim, before
        any row of it is marked as sending: a kill during the long import
        must not find attempts committed for creates not yet sent)."""
        await self._ensure_built()

    async def _ensure_built(self) -> None:
        """Build the SDK client on a thread, the first time: the import is
        long, and on the event loop it would stall everything else —
        a ledger transaction another task holds open among them, which other
        processes would then wait on past their busy timeout."""
        if self._own_client:
            self._keep_to_one_loop()
        if self._built:
            return
        lock = self.__dict__.setdefault("_build_lock", asyncio.Lock())
        async with lock:
            if not self._built:
                await asyncio.to_thread(self._build)
        if self._own_client:
            self._keep_to_one_loop()

    def _keep_to_one_loop(self) -> None:
        """An aiohttp session belongs to the event loop it was opened in; called
        from another one (a caller's second `asyncio.run`), its requests fail
        half sent. The client is built again, for this loop, before anything
        is sent. (The SDK's own httpx client keeps a pool per loop itself.)"""
        loop = asyncio.get_running_loop()
        first = self.__dict__.setdefault("_client_loop", loop)
        if first is not loop:
            del self.__dict__["_client_loop"]
            self._http_client, self._own_client, self._built = None, False, False

    @property
    def fast_path(self) -> bool:
        """Whether calls go through the verified fast path (builds the client)."""
        if not self._built:
            self._build()
        return self._fast

    @property
    def built(self) -> bool:
        """Whether the SDK was imported and its client built (a call was made)."""
        return self._built

    def __repr__(self) -> str:
        target = self.base_url or "Gemini API"
        fast = self._fast if self._built else "not built yet"
        return f"GeminiBackend({target}, fast_path={fast})"

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        extra = dict(spec.config)
        # The job's own labels, then the ledger's key (which no job may set).
        labels = {**(extra.pop("labels", None) or {}), **spec.labels, "idem": idem}
        if self.webhook_url:
            extra["webhook_config"] = _webhook_config(
                extra.get("webhook_config"), self.webhook_url, idem, labels.get(ATTEMPT_LABEL)
            )
        await self._ensure_built()
        try:
            with self._fast_scope(self.fast_path):
                if spec.agent:
                    # Agents go through the stock create: the fast path's body
                    # template is verified for model requests only.
                    interaction = await self._interactions.create(
                        agent=spec.agent,
                        input=spec.input,
                        background=True,
                        labels=labels,
                        **extra,
                    )
                else:
                    interaction = await self._create(spec.model, spec.input, labels, extra)
            return _to_remote(interaction)
        except Exception as exc:
            raise create_error(exc, self._say) from exc

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
        await self._ensure_built()
        try:
            with self._fast_scope(self.fast_path):
                if what == "get":
                    interaction = await self._get(handle)
                else:
                    interaction = await self._interactions.cancel(handle)
            return _to_remote(interaction)
        except AnswerDeferred:
            raise  # not a failure: the answer was left unread, the row polled later
        except Exception as exc:
            raise read_error(f"{what} {handle}", exc, self._say) from exc

    async def _get(self, handle: str) -> Any:
        fast = self._fast_get
        if fast is not None and fast.accepts(handle):
            if await fast.ready():
                return await fast.get(handle)
            self._fast_get = None
        return await self._interactions.get(handle)

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        if self._finder is None:
            return None
        try:
            return await self._finder.find_by_label(idem, attempt)
        except BackendError:
            raise
        except Exception as exc:  # the Backend port raises only BackendError
            raise TransientReadError(self._say(f"lookup {idem}", exc)) from exc

    async def aclose(self) -> None:
        if self._finder is not None:
            await self._finder.aclose()
        if self._built:
            await self._client.aio.aclose()
        if self._own_client:
            await self._http_client.aclose()
