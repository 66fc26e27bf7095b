"""`Ledger`, the Python API's one object: a ledger opened by path or
PostgreSQL URL, its engine built only when something calls the API.

The CLI's `submit`, `tick` and `run` are clients of this object (one path,
not two): a job submitted here is checked as `reclaim-tui submit` checks it
and is the job it would have reserved, a pass run here is a `tick`, and
`serve` runs the service `reclaim-tui run` runs. Reading (`get`, `wait`,
`finished`) needs no API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TextIO, cast

from reclaim_tui.api.jobs import Job, Result, job_from
from reclaim_tui.api.settings import settings_for
from reclaim_tui.api.specs import JobLike, checked_specs
from reclaim_tui.config import Settings
from reclaim_tui.core.backend import Backend, NoApi
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.costs import PriceTable, load_prices
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import port as ledger_port
from reclaim_tui.core.ledger.opening import require_folder
from reclaim_tui.core.models import Actor, JobSpec, PassReport
from reclaim_tui.core.sinks import CallableSink, DirectorySink, Sink, load_sink
from reclaim_tui.errors import ConfigError, OperatorError, ReclaimError

if TYPE_CHECKING:
    from reclaim_tui.core.engine.engine import Engine
    from reclaim_tui.runner.service import ServiceLoop

__all__ = ["JobLike", "Ledger", "ResultCallback", "connect"]

#: What `on_result` is called with: the job's key and its stored result. It may
#: be sync (run in a worker thread) or async; it must be idempotent by key.
ResultCallback = Callable[[str, Result], Awaitable[None] | None]
log = logging.getLogger("reclaim_tui.api")

#: The longest pause between two looks at the ledger while waiting for jobs.
_WAIT_CAP = 1.0


def connect(
    db: str | Path | None = None,
    *,
    on_result: ResultCallback | None = None,
    sink: Sink | None = None,
    readonly: bool = False,
    create: bool = True,
    backend: Backend | None = None,
    clock: Clock | None = None,
    **settings: Any,
) -> Ledger:
    """A ledger to open with `async with`: a SQLite path or a PostgreSQL URL
    (else `RECLAIM_DB`, else the CLI's default file).

    `on_result(key, result)` is the side effect of a finished job (the
    default: the CLI's directory sink, `out`); `settings` are the CLI's
    settings by their `Settings` names (`base_url`, `api_key`, `model`,
    `concurrency`, `max_attempts`, …), the environment filling the rest.
    `backend` replaces the Gemini client (a test's fake)."""
    if on_result is not None and sink is not None:
        raise ConfigError("give on_result or sink, not both")
    resolved = settings_for({"db": db, **settings})
    chosen: Sink | None = sink
    if on_result is not None:
        chosen = CallableSink(on_result, getattr(on_result, "__qualname__", repr(on_result)))
    return Ledger(
        resolved, sink=chosen, readonly=readonly, create=create, backend=backend, clock=clock
    )


class Ledger:
    """A reclaim ledger from Python. Open it with `async with`; every method
    is a coroutine (see `SyncLedger` for scripts)."""

    def __init__(
        self,
        settings: Settings,
        *,
        sink: Sink | None = None,
        readonly: bool = False,
        create: bool = True,
        backend: Backend | None = None,
        clock: Clock | None = None,
        actor: Actor = Actor.API,
    ) -> None:
        self.settings = settings
        #: who the ledger's events name for this object's writes (the CLI's
        #: commands name themselves: `tick`, `cli`, `service`)
        self.actor = actor
        self._sink = sink
        self._readonly = readonly
        self._create = create
        self._backend = backend
        self._own_backend = backend is None
        self._clock = clock
        self._store: ledger_port.Ledger | None = None
        self._lanes: list[ledger_port.Ledger] = []  # lanes 2, 3 …: `lanes` (PostgreSQL)
        self._closing: contextlib.AsyncExitStack | None = None
        self._engine: Engine | None = None
        self._prices: PriceTable | None = None

    # -- opening and closing ------------------------------------------------------------
    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose(checkpoint=kind is None)

    async def open(self, *, sink: bool = False, api: bool = False) -> None:
        """Open the ledger (created with its schema when `create` and new: a new
        SQLite ledger beside another ledger of its folder is refused, as the CLI
        refuses it, unless the `create_ledger` setting asks for it).

        `sink`: load the result sink first, `api`: build the API client too, so
        that a bad sink or a missing API key is said before a ledger is created."""
        if self._store is not None:
            return
        from reclaim_tui.bootstrap import make_backend, open_with_lanes

        require_folder(self.settings.db)
        if api and self._backend is None:
            self._backend = make_backend(self.settings)
        stack = contextlib.AsyncExitStack()
        try:
            if sink or api:
                self._checked_sink()
            self._store, self._lanes = await stack.enter_async_context(
                open_with_lanes(
                    self.settings, readonly=self._readonly, create=self._create, clock=self._clock
                )
            )
        except BaseException:
            await self._close_backend(self._backend)
            raise
        self._closing = stack

    async def aclose(self, *, checkpoint: bool = True) -> None:
        """Close the API client (if one was built) and the ledger; a writable
        SQLite ledger's WAL is emptied into its file first, as the CLI does
        (not after an error: the ledger may be what failed)."""
        engine, store, closing = self._engine, self._store, self._closing
        self._engine = self._store = self._closing = None
        self._lanes = []
        try:
            await self._close_backend(engine.backend if engine is not None else self._backend)
            if store is not None and not self._readonly and checkpoint:
                await store.checkpoint()
        finally:
            if closing is not None:
                await closing.aclose()

    async def _close_backend(self, backend: Backend | None) -> None:
        if backend is not None and self._own_backend:
            self._backend = None
            await backend.aclose()

    def _checked_sink(self) -> Sink:
        """The sink (the settings' one unless given), loaded once; a directory
        sink's temp folder that is a link or not this user's is refused here,
        before any pass, as the CLI's engine refuses it."""
        if self._sink is None:
            self._sink = load_sink(self.settings.sink, self.settings.out)
        if isinstance(self._sink, DirectorySink):
            self._sink.check()
        return self._sink

    @property
    def store(self) -> ledger_port.Ledger:
        if self._store is None:
            raise ReclaimError("the ledger is not open: use `async with connect(...)`")
        return self._store

    def _engine_now(self) -> Engine:
        """The engine, its API client and sink built at the first call that needs them."""
        if self._engine is None:
            from reclaim_tui.bootstrap import make_backend
            from reclaim_tui.core.engine.engine import Engine

            backend = self._backend or make_backend(self.settings)
            sink = self._checked_sink()
            self._backend = backend
            config = self.settings.engine_config(self.actor)
            self._engine = Engine(
                self.store, backend, sink, config=config, lane_ledgers=self._lanes
            )
        return self._engine

    @property
    def owner(self) -> str:
        """The lease owner this object's passes write as (this process)."""
        return self._engine_now().owner

    # -- jobs in ------------------------------------------------------------------------
    def job_spec(self, job: JobLike) -> JobSpec:
        """`job` checked as a jobs file's line is (JobsFileError says what is wrong)."""
        return self.job_specs(job)[0]

    def job_specs(self, jobs: JobLike | Iterable[JobLike]) -> list[JobSpec]:
        """`jobs` checked as a jobs file's lines are, each and across them
        (JobsFileError names every bad one by its number, from 1)."""
        return checked_specs(jobs, default_model=self.settings.model)

    async def submit(self, jobs: JobLike | Iterable[JobLike], *, send: bool = False) -> list[str]:
        """Reserve each job (the same spec twice is one job) and return their
        keys, in order. `send`: create their interactions now (the API key is
        needed); else the next `tick`, `serve` or service sends them."""
        specs = self.job_specs(jobs)
        await self.reserve(specs, send=send)
        return [idempotency_key(spec) for spec in specs]

    async def reserve(self, jobs: JobLike | Iterable[JobLike], *, send: bool = False) -> PassReport:
        """`submit`, answered with what it did: reserved (`inserted`), already
        in the ledger (`already_present`), sent, and any row's error."""
        specs = self.job_specs(jobs)
        if not specs:
            return PassReport()
        engine = self._engine_now() if send else self._marker()
        return await engine.submit(specs, send=send)

    def _marker(self) -> Engine:
        """An engine that never calls the API: reserving and marking need no key."""
        if self._engine is not None:
            return self._engine
        from reclaim_tui.core.engine.engine import Engine

        sink = self._checked_sink()
        return Engine(self.store, NoApi(), sink, config=self.settings.engine_config(self.actor))

    # -- passes -------------------------------------------------------------------------
    async def tick(self, jobs: JobLike | Iterable[JobLike] = ()) -> PassReport:
        """One pass, as `reclaim-tui tick`: recover orphans, reserve `jobs`,
        send, reclaim, deliver (`on_result`), replay what did not deliver."""
        return await self._engine_now().tick(self.job_specs(jobs))

    async def serve(
        self,
        *,
        interval: float = 5.0,
        jobs: JobLike | Iterable[JobLike] = (),
        log_to: TextIO | None = None,
        metrics_listen: str | None = None,
    ) -> int:
        """The service loop (`reclaim-tui run`'s) until cancelled: passes, then
        sleeps until the next due row (at most `interval` s). Cancelling the
        task drains as SIGTERM does (the pass in progress finishes, then
        CancelledError); a second cancel cancels the pass. Its JSON lines go to
        `log_to`, else to the `reclaim_tui.service` logger; `metrics_listen`
        (HOST:PORT) serves its Prometheus metrics and /healthz there."""
        from reclaim_tui.runner.service import run_service

        if not interval > 0:
            raise ConfigError("interval must be positive")
        specs = self.job_specs(jobs)
        out = log_to if log_to is not None else cast(TextIO, _LogLines())
        engine = self._engine_now().acting_as(Actor.SERVICE)
        return await run_service(
            self.settings, specs, log=out, idle_sleep=interval, metrics_listen=metrics_listen,
            engine=engine, drive=_drain_on_cancel,
        )  # fmt: skip

    # -- reading ------------------------------------------------------------------------
    def _price_table(self) -> PriceTable | None:
        if self._prices is None:
            try:
                self._prices = load_prices()
            except ConfigError as exc:
                log.warning("no cost figures: %s", exc)
                return None
        return self._prices

    async def get(self, key: str, *, timeline: bool = True) -> Job | None:
        """The job with this key (its status, attempts, result, cost and
        timeline), or None when the ledger has none."""
        row = await self.store.get(key)
        if row is None:
            return None
        result = await self.store.result(key)
        events = await self.store.events(key) if timeline else ()
        return job_from(row, result, self._price_table(), events)

    async def get_many(self, keys: Sequence[str]) -> dict[str, Job]:
        """The jobs of these keys that the ledger has (no timelines)."""
        rows = await self.store.get_many(list(dict.fromkeys(keys)))
        results = await self.store.results([k for k, row in rows.items() if row.handle])
        prices = self._price_table()
        return {key: job_from(row, results.get(key), prices) for key, row in rows.items()}

    # A `timeout` argument, as asyncio.wait has: a wait API's callers expect one,
    # and `finished` cannot be wrapped in asyncio.timeout across its yields.
    async def finished(
        self,
        keys: str | Iterable[str],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> AsyncGenerator[Job, None]:
        """Each job as it settles (its result stored, or failed/cancelled), in
        the order they settle, whichever process runs the passes. TimeoutError
        when `timeout` seconds pass first; OperatorError for a key the ledger
        does not have."""
        waiting = list(dict.fromkeys([keys] if isinstance(keys, str) else keys))
        loop = asyncio.get_running_loop()
        # A deadline, not asyncio.timeout(): a timeout open across a `yield`
        # would cancel the caller's code while it handles a job.
        deadline = None if timeout is None else loop.time() + timeout
        pause = 0.05
        while waiting:
            jobs = await self.get_many(waiting)
            missing = [key for key in waiting if key not in jobs]
            if missing:
                raise OperatorError(f"no job with key {missing[0]!r} in {self.settings.db}")
            for key in list(waiting):
                if jobs[key].settled:
                    waiting.remove(key)
                    yield jobs[key]
            if not waiting:
                return
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                shown = ", ".join(waiting[:5]) + (" …" if len(waiting) > 5 else "")
                raise TimeoutError(
                    f"{len(waiting)} job(s) not settled after {timeout:g} s: {shown}"
                )
            await asyncio.sleep(pause if left is None else min(pause, left))
            pause = min(_WAIT_CAP, pause * 2)

    async def wait(
        self,
        keys: str | Iterable[str],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> dict[str, Job]:
        """Wait until every job settles; their jobs by key (see `finished`)."""
        return {job.key: job async for job in self.finished(keys, timeout=timeout)}

    # -- an operator's actions ----------------------------------------------------------
    async def cancel(self, key: str) -> Job:
        """Cancel a reserving or submitted job (at the API too when it was sent)."""
        await self._engine_now().operator.cancel(key, actor=self.actor)
        return await self._job(key)

    async def retry(self, key: str) -> Job:
        """Mark a failed or cancelled job for resend; the next pass sends it."""
        await self._marker().operator.retry(key, actor=self.actor)
        return await self._job(key)

    async def answer(self, key: str, text: str, *, refine: bool = False) -> Job:
        """Continue a job that requires action, or approve (`refine`: revise)
        its research plan, with `text` as the next turn."""
        if not text.strip():
            raise ConfigError("the answer is empty: say what the interaction should go on with")
        await self._engine_now().operator.answer(key, text, actor=self.actor, refine=refine)
        return await self._job(key)

    async def replay(self, keys: Sequence[str] | None = None) -> PassReport:
        """Deliver stored results again (all `done` rows, or these keys)."""
        return await self._engine_now().replay(force=True, idems=keys)

    async def _job(self, key: str) -> Job:
        job = await self.get(key)
        if job is None:
            raise OperatorError(f"no job with key {key!r} in {self.settings.db}")
        return job


async def _drain_on_cancel(loop: ServiceLoop, jobs: Sequence[JobSpec], once: bool) -> int:
    """Run the loop; a cancel of the caller drains it as SIGTERM does, a
    second cancels its pass, and the CancelledError is raised once it ended."""
    running = asyncio.ensure_future(loop.run(jobs, once=once))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        if running.done():
            raise
        loop.signal()  # drain: finish the pass in progress, start no other
        while not running.done():
            try:
                await asyncio.shield(running)
            except asyncio.CancelledError:
                loop.signal()  # asked again: cancel the pass
        raise


class _LogLines:
    """A text stream whose lines go to the `reclaim_tui.service` logger."""

    _log = logging.getLogger("reclaim_tui.service")

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self._log.info("%s", line)
        return len(text)

    def flush(self) -> None:
        return None
