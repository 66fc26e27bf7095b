"""The Backend port: what the engine needs from an Interactions API.

Implementations: `core.gemini.GeminiBackend` (google-genai, real API or the
emulator) and `core.fakes.FakeBackend` (in memory). Both raise only the
`BackendError` subclasses of `reclaim_tui.errors`, and return only
`RemoteInteraction`.

`LabelFinder` is the smaller port `GeminiBackend.find_by_label` delegates to:
the real API cannot be searched, so a search (the emulator's admin API,
`core.gemini.finder`) is plugged in by the wiring (bootstrap.py).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from reclaim_tui.core.models import JobSpec, RemoteInteraction, RemoteState

__all__ = ["Backend", "LabelFinder", "NoApi", "map_api_status"]

_STATUS_MAP: dict[str, RemoteState] = {
    "queued": RemoteState.PENDING,
    "in_progress": RemoteState.PENDING,
    # A background interaction's continuation is server-managed (google-genai
    # 3.3 `_interactions_continuation.py`): it is still running.
    "requires_continuation": RemoteState.PENDING,
    "completed": RemoteState.COMPLETED,
    "failed": RemoteState.FAILED,
    "cancelled": RemoteState.CANCELLED,
    # Terminal, with paid partial output: the row fails with the status as its
    # reason (steps and usage stored) and an operator can retry it.
    "incomplete": RemoteState.FAILED,
    "budget_exceeded": RemoteState.FAILED,
    # Asks someone something (Deep Research's collaborative planning, a
    # function call): an operator answers or cancels (`answer`, `cancel`).
    "requires_action": RemoteState.ACTION,
    # google-genai 3.5 adds `idle`, undocumented in meaning: polled with
    # backoff like any unknown status, bounded by the job's deadline.
}


def map_api_status(status: str | None) -> RemoteState:
    """Map an API status string (any string, or None) to a RemoteState."""
    if not status:
        return RemoteState.UNKNOWN
    return _STATUS_MAP.get(status.lower(), RemoteState.UNKNOWN)


@runtime_checkable
class Backend(Protocol):
    """An Interactions API, seen through the project's own types."""

    #: True when `find_by_label` can really search (the emulator's admin API);
    #: the real API has no search endpoint, so orphans there go to OrphanPolicy.
    supports_lookup: bool

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        """Start a background interaction labelled with `idem`; one POST, no retries.

        `spec.labels` may carry `models.ATTEMPT_LABEL`, the attempt the create
        is sent for: it goes out as a label and, with a webhook, in the
        `user_metadata` (`inbox.ATTEMPT_FIELD`), so the interaction can be
        told apart from the ones earlier attempts of the same key made."""
        ...

    async def get(self, handle: str) -> RemoteInteraction:
        """Fetch the interaction's current state (and output once completed)."""
        ...

    async def cancel(self, handle: str) -> RemoteInteraction:
        """Ask the API to cancel the interaction."""
        ...

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        """The interaction created with this idem label (and, given `attempt`,
        this attempt label), if the backend can search."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class LabelFinder(Protocol):
    """A search for the interaction created with an idem label, outside the API itself."""

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        """The newest interaction labelled `idem` (and, given `attempt`, with
        that attempt label: `models.ATTEMPT_LABEL`), or None.

        Any exception it raises reaches the engine as a `TransientReadError`.
        """
        ...

    async def aclose(self) -> None:
        """Release connections (the backend that was given the finder calls this)."""
        ...


class NoApi:
    """The Backend of a command that never calls the API (replay, retry): it needs
    no key, and a call through it is a bug, raised as one (not a BackendError,
    which would pass for an API outage)."""

    supports_lookup = False

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        raise self._called("create")

    async def get(self, handle: str) -> RemoteInteraction:
        raise self._called("get")

    async def cancel(self, handle: str) -> RemoteInteraction:
        raise self._called("cancel")

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        raise self._called("find_by_label")

    async def aclose(self) -> None:
        return None

    @staticmethod
    def _called(call: str) -> RuntimeError:
        return RuntimeError(f"{call}: this command must not call the API")
