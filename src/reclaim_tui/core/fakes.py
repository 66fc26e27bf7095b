"""An in-memory Backend for unit tests (shipped, like httpx's MockTransport).

It follows the same contract as `GeminiBackend` against the emulator; the
contract suite in tests/contract runs over both. Tests drive the remote side
with `finish`, `fail`, `forget` and `script_create`.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.core.backend import map_api_status
from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.models import ATTEMPT_LABEL, JobSpec, RemoteInteraction, make_interaction
from reclaim_tui.errors import (
    BackendError,
    InteractionGoneError,
)
from reclaim_tui.fake_answer import fake_output_text

__all__ = ["FakeBackend", "fake_output_text"]


@dataclass
class _Remote:
    id: str
    idem: str
    spec: JobSpec
    status: str = "in_progress"
    ready_at: float = 0.0
    output: str | None = None
    error: str | None = None
    #: the attempt label the create carried (models.ATTEMPT_LABEL), if any
    attempt: str | None = None


@dataclass
class FakeBackend:
    """In-memory Interactions API.

    `latency` is how long (by `clock`) an interaction runs before it completes
    by itself; None means it stays in progress until `finish`/`fail`.
    `create_faults` is a list consumed one per create: None (ok), or a
    BackendError instance to raise; a `MaybeCreatedError` marked with
    `created=True` (attribute) is raised *after* the interaction was stored,
    like an accepted-then-dropped create.
    """

    clock: Clock = field(default_factory=SystemClock)
    latency: float | None = 0.0
    supports_lookup: bool = True
    create_faults: list[BackendError | tuple[BackendError, bool] | None] = field(
        default_factory=list
    )
    get_faults: dict[str, list[BackendError]] = field(default_factory=dict)
    #: Per handle, errors its next cancels raise (one each), as `get_faults`.
    cancel_faults: dict[str, list[BackendError]] = field(default_factory=dict)
    on_call: Callable[[str, str], None] | None = None
    remotes: dict[str, _Remote] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    creates_per_label: Counter[str] = field(default_factory=Counter)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # -- the port ---------------------------------------------------------------
    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        self.calls["create"] += 1
        if self.on_call:
            self.on_call("create", idem)
        fault = self.create_faults.pop(0) if self.create_faults else None
        created_anyway = False
        if isinstance(fault, tuple):
            fault, created_anyway = fault
        if fault is not None and not created_anyway:
            raise fault
        remote = _Remote(
            id=f"fake-{next(self._ids):06d}",
            idem=idem,
            spec=spec,
            attempt=spec.labels.get(ATTEMPT_LABEL),
        )
        remote.ready_at = self.clock.now() + (self.latency or 0.0)
        self.remotes[remote.id] = remote
        self.creates_per_label[idem] += 1
        if fault is not None:
            raise fault
        return self._view(remote)

    async def get(self, handle: str) -> RemoteInteraction:
        self.calls["get"] += 1
        if self.on_call:
            self.on_call("get", handle)
        queued = self.get_faults.get(handle)
        if queued:
            raise queued.pop(0)
        remote = self._lookup(handle)
        self._advance(remote)
        return self._view(remote)

    async def cancel(self, handle: str) -> RemoteInteraction:
        self.calls["cancel"] += 1
        queued = self.cancel_faults.get(handle)
        if queued:
            raise queued.pop(0)
        remote = self._lookup(handle)
        self._advance(remote)
        if remote.status in ("queued", "in_progress"):
            remote.status = "cancelled"
        return self._view(remote)

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        self.calls["find"] += 1
        if not self.supports_lookup:
            return None
        found = [
            r
            for r in self.remotes.values()
            if r.idem == idem and (attempt is None or r.attempt == attempt)
        ]
        return self._view(found[-1]) if found else None

    async def aclose(self) -> None:
        return None

    # -- the remote side, for tests ---------------------------------------------
    def finish(self, handle: str, text: str | None = None) -> None:
        remote = self.remotes[handle]
        remote.status = "completed"
        remote.output = text if text is not None else fake_output_text(remote.spec.input)

    def fail(self, handle: str, status: str = "failed", error: str = "model error") -> None:
        remote = self.remotes[handle]
        remote.status = status
        remote.error = error

    def forget(self, handle: str) -> None:
        """The provider dropped the interaction: later gets answer 404."""
        del self.remotes[handle]

    def handle_for(self, idem: str) -> str:
        return next(r.id for r in self.remotes.values() if r.idem == idem)

    # -- helpers -------------------------------------------------------------------
    def _lookup(self, handle: str) -> _Remote:
        remote = self.remotes.get(handle)
        if remote is None:
            raise InteractionGoneError(f"interaction {handle} not found", 404)
        return remote

    def _advance(self, remote: _Remote) -> None:
        if (
            remote.status == "in_progress"
            and self.latency is not None
            and self.clock.now() >= remote.ready_at
        ):
            remote.status = "completed"
            remote.output = fake_output_text(remote.spec.input)

    def _view(self, remote: _Remote) -> RemoteInteraction:
        labels = {"idem": remote.idem}
        if remote.attempt is not None:
            labels[ATTEMPT_LABEL] = remote.attempt
        raw: dict[str, Any] = {"id": remote.id, "status": remote.status, "labels": labels}
        usage = None
        if remote.output is not None:
            raw["steps"] = [
                {"type": "model_output", "content": [{"type": "text", "text": remote.output}]}
            ]
            usage = {"total_input_tokens": 7, "total_output_tokens": len(remote.output.split())}
            raw["usage"] = usage
        return make_interaction(
            id=remote.id,
            state=map_api_status(remote.status),
            api_status=remote.status,
            output_text=remote.output,
            usage=usage,
            error=remote.error,
            raw=raw,
        )
