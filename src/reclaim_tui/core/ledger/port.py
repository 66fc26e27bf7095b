"""The ledger as its callers see it: one port, two engines behind it.

The engine (core/engine/), the runner, the CLI, the console and the ledger's
own helper modules (queries, inbox, prune, transfer…) are typed against
`Ledger`, never against an engine's class. `core/ledger/sqlite/ledger.py`
(`SqliteLedger`) and `core/ledger/postgres/ledger.py` (`PgLedger`) implement it side
by side, neither a subclass of the other; `core/ledger/opening.py`
(`open_ledger`) picks one by the `--db` it is given.
tests/unit/test_ledger_port.py checks that both classes have every member
below with a compatible signature, and the suite runs on both (`db_url`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.identity import FileSnapshot
from reclaim_tui.core.models import Actor, Event, Row, Status, StoredResult, Transition

__all__ = ["Claim", "Ledger"]


@dataclass(frozen=True, slots=True)
class Claim:
    """Rows a process now holds, and under which owner."""

    owner: str
    rows: list[Row]


class Ledger(Protocol):
    """A durable ledger of jobs: claims under leases, compare-and-set writes
    that append their events, and the reads the console and exports page
    through. Safe to share between the tasks of one event loop (writes are
    serialised); open one per process or per client (engine, console)."""

    #: where the ledger is, as messages may show it (a URL without secrets)
    path: str
    clock: Clock
    readonly: bool
    #: the ledger's own id (core/ledger/identity.py); None on PostgreSQL
    ledger_id: str | None
    #: which engine's SQL this ledger speaks: "sqlite" or "postgres"
    dialect: str
    #: why the console's text filter has no index (None: it has one)
    text_index_note: str | None
    #: (before,): deletes the engine's own bookkeeping that ran out before
    #: then, run by the process registry's prune (None: it has none)
    prune_before_sql: str | None

    @property
    def connection(self) -> Any:
        """The driver's connection (tests and tracing only)."""
        ...

    # -- transactions and raw reads --------------------------------------------------
    def write(self) -> AbstractAsyncContextManager[Any]:
        """One write transaction; the session it yields runs `execute` and
        `executemany` in SQLite's SQL (rewritten for PostgreSQL)."""
        ...

    async def select(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def select_each(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[Any]]: ...

    async def select_then(
        self,
        statements: Sequence[tuple[str, Sequence[Any]]],
        then: Callable[[list[list[Any]]], Sequence[tuple[str, Sequence[Any]]]],
    ) -> tuple[list[list[Any]], list[list[Any]] | None]: ...

    # -- inserting and claiming ------------------------------------------------------
    async def insert_jobs(
        self, jobs: Sequence[tuple[str, str, str]], actor: str
    ) -> tuple[list[str], list[str]]: ...

    async def dead_holders(self, me: str) -> list[str]: ...

    async def claim_sendable(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        idems: Sequence[str] | None = None,
    ) -> Claim: ...

    async def claim_pollable(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        exclude: Collection[str] = (),
    ) -> Claim: ...

    async def apply_and_claim_pollable(
        self,
        owner: str,
        actor: Actor,
        transitions: Sequence[Transition],
        *,
        limit: int,
        lease_seconds: float,
        exclude: Collection[str] = (),
        now: float | None = None,
    ) -> tuple[list[str], Claim]: ...

    async def write_and_claim_sendable(
        self,
        owner: str,
        actor: Actor,
        *,
        sending: Sequence[str] = (),
        transitions: Sequence[Transition] = (),
        limit: int,
        lease_seconds: float,
        idems: Sequence[str] | None = None,
    ) -> tuple[dict[str, Row], list[str], Claim]: ...

    async def claim_cancel_pending(
        self, owner: str, *, limit: int, lease_seconds: float
    ) -> Claim: ...

    async def claim_undelivered(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        force: bool = False,
        idems: Sequence[str] | None = None,
        exclude: Collection[str] = (),
    ) -> Claim: ...

    async def claim_orphans(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        force: bool = False,
        idems: Sequence[str] | None = None,
        exclude: Collection[str] = (),
    ) -> Claim: ...

    async def renew(self, owner: str, idems: Iterable[str], lease_seconds: float) -> set[str]: ...

    async def release(self, owner: str, idems: Iterable[str]) -> int: ...

    # -- compare-and-set writes ------------------------------------------------------
    async def apply(
        self, owner: str, actor: Actor, transitions: Sequence[Transition]
    ) -> list[str]: ...

    async def write_batch(
        self,
        owner: str,
        actor: Actor,
        *,
        sending: Sequence[str] = (),
        transitions: Sequence[Transition] = (),
    ) -> tuple[dict[str, Row], list[str]]: ...

    async def operator_update(
        self,
        idem: str,
        expect: Sequence[Status],
        to: Status,
        actor: str,
        note: str,
        changes: Mapping[str, Any],
        *,
        me: str,
        inflight: bool | None = None,
    ) -> Row | None: ...

    async def add_event(self, idem: str, actor: str, note: str, status: str | None) -> None: ...

    # -- copying between ledgers (core/ledger/transfer.py) ---------------------------
    async def before_copy(self) -> None: ...

    async def after_copy(self) -> None: ...

    async def sequences_behind(self) -> list[str]: ...

    # -- reading ---------------------------------------------------------------------
    async def get(self, idem: str) -> Row | None: ...

    async def get_many(self, idems: Sequence[str]) -> dict[str, Row]: ...

    async def find(self, prefix: str, limit: int = 5) -> list[Row]: ...

    def iter_rows(self, batch: int = 2000) -> AsyncIterator[Row]: ...

    async def result(self, idem: str) -> StoredResult | None: ...

    async def results(self, idems: Sequence[str]) -> dict[str, StoredResult]: ...

    async def events(self, idem: str, limit: int = 10_000) -> list[Event]: ...

    async def counts(self) -> dict[str, tuple[int, float | None]]: ...

    async def orphan_count(self, me: str = "", *, dead: Sequence[str] | None = None) -> int: ...

    # -- the connection --------------------------------------------------------------
    async def schema_version(self) -> int: ...

    async def pragmas(self) -> dict[str, Any]: ...

    async def interrupt(self) -> None: ...

    async def checkpoint(self) -> None:
        """At a clean exit: the ledger whole in its main file (SQLite's WAL
        copied in and emptied, where no other process holds it); PostgreSQL:
        nothing to do."""
        ...

    async def close(self) -> None: ...

    # -- a service's guard against a ledger that went back in time --------------------
    async def guard_generation(self, owner: str) -> None:
        """Bump `owner`'s generation at each commit from now on (a no-op
        where a ledger cannot be put back under a process: PostgreSQL)."""
        ...

    async def generation_change(self, main: FileSnapshot | None = None) -> str | None:
        """What happened when the ledger no longer holds the generation this
        process last committed; None when it does, or when not guarded."""
        ...
