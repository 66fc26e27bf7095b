"""`Ledger`, the Python API's one object: a ledger opened by path or
PostgreSQL URL, its engine built only when something calls the API.

Every write goes through the engine the CLI and the console use (the same
leases, compare-and-sets, events and sink rules), so a job submitted here is
the job `reclaim-tui submit` would have reserved, and a pass run here is a
`tick`. Reading (`get`, `wait`, `finished`) needs no API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TextIO, cast

from reclaim_tui.api.jobs import Job, Result, job_from
from reclaim_tui.api.settings import settings_for
from reclaim_tui.config import Settings
from reclaim_tui.core.backend import Backend, NoApi
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.costs import PriceTable, load_prices
from reclaim_tui.core.jobsfile import check_job
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import port as ledger_port
from reclaim_tui.core.ledger.opening import require_folder
from reclaim_tui.core.models import Actor, JobSpec, PassReport
from reclaim_tui.core.sinks import CallableSink, Sink, load_sink
from reclaim_tui.errors import ConfigError, OperatorError, ReclaimError

if TYPE_CHECKING:
    from reclaim_tui.core.engine.engine import Engine

__all__ = ["JobLike", "Ledger", "ResultCallback", "connect"]

#: What `on_result` is called with: the job's key and its stored result. It may
#: be sync (run in a worker thread) or async; it must be idempotent by key.
ResultCallback = Callable[[str, Result], Awaitable[None] | None]
#: A job to submit: a JobSpec, or a dict shaped as a jobs file's line.
JobLike = JobSpec | Mapping[str, Any]

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
    ) -> None:
        self.settings = settings
        self._sink = sink
        self._readonly = readonly
        self._create = create
        self._backend = backend
        self._own_backend = backend is None
        self._clock = clock
        self._store: ledger_port.Ledger | None = None
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
        await self.aclose()

    async def open(self) -> None:
        """Open the ledger (created with its schema when `create` and new: a new
        SQLite ledger beside another ledger of its folder is refused, as the CLI
        refuses it, unless the `create_ledger` setting asks for it)."""
        if self._store is not None:
            return
        from reclaim_tui.bootstrap import open_ledger

        require_folder(self.settings.db)
        stack = contextlib.AsyncExitStack()
        self._store = await stack.enter_async_context(
            open_ledger(
                self.settings, readonly=self._readonly, create=self._create, clock=self._clock
            )
        )
        self._closing = stack

    async def aclose(self) -> None:
        """Close the API client (if one was built) and the ledger; a writable
        SQLite ledger's WAL is emptied into its file first, as the CLI does."""
        engine, store, closing = self._engine, self._store, self._closing
        self._engine = self._store = self._closing = None
        try:
            if engine is not None and self._own_backend:
                await engine.backend.aclose()
            if store is not None and not self._readonly:
                await store.checkpoint()
        finally:
            if closing is not None:
                await closing.aclose()

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
            sink = self._sink or load_sink(self.settings.sink, self.settings.out)
            config = self.settings.engine_config(Actor.API)
            self._engine = Engine(self.store, backend, sink, config=config)
        return self._engine

    # -- jobs in ------------------------------------------------------------------------
    def job_spec(self, job: JobLike) -> JobSpec:
        """`job` checked as a jobs file's line is (JobsFileError says what is wrong)."""
        if isinstance(job, JobSpec):
            return check_job(_spec_fields(job), source="submit", default_model=self.settings.model)
        if not isinstance(job, Mapping):
            raise ConfigError(f"a job is a dict or a JobSpec, not {type(job).__name__}")
        return check_job(dict(job), source="submit", default_model=self.settings.model)

    async def submit(self, jobs: JobLike | Iterable[JobLike], *, send: bool = False) -> list[str]:
        """Reserve each job (the same spec twice is one job) and return their
        keys, in order. `send`: create their interactions now (the API key is
        needed); else the next `tick`, `serve` or service sends them."""
        specs = [self.job_spec(job) for job in _as_list(jobs)]
        keys = [idempotency_key(spec) for spec in specs]
        if not specs:
            return []
        engine = self._engine_now() if send else self._marker()
        await engine.submit(specs, send=send)
        return keys

    def _marker(self) -> Engine:
        """An engine that never calls the API: reserving and marking need no key."""
        if self._engine is not None:
            return self._engine
        from reclaim_tui.core.engine.engine import Engine

        sink = self._sink or load_sink(self.settings.sink, self.settings.out)
        return Engine(self.store, NoApi(), sink, config=self.settings.engine_config(Actor.API))

    # -- passes -------------------------------------------------------------------------
    async def tick(self, jobs: JobLike | Iterable[JobLike] = ()) -> PassReport:
        """One pass, as `reclaim-tui tick`: recover orphans, reserve `jobs`,
        send, reclaim, deliver (`on_result`), replay what did not deliver."""
        specs = [self.job_spec(job) for job in _as_list(jobs)]
        return await self._engine_now().tick(specs)

    async def serve(
        self,
        *,
        interval: float = 5.0,
        jobs: JobLike | Iterable[JobLike] = (),
        log_to: TextIO | None = None,
    ) -> int:
        """The service loop (`reclaim-tui run`) until cancelled: passes, then
        sleeps until the next due row (at most `interval` s). Cancelling the
        task drains as SIGTERM does (the pass in progress finishes, then
        CancelledError); a second cancel cancels the pass. Its JSON lines go to
        `log_to`, else to the `reclaim_tui.service` logger."""
        from reclaim_tui.runner.service import ServiceLoop

        if not interval > 0:
            raise ConfigError("interval must be positive")
        specs = [self.job_spec(job) for job in _as_list(jobs)]
        engine = self._engine_now().acting_as(Actor.SERVICE)
        out = log_to if log_to is not None else cast(TextIO, _LogLines())
        loop = ServiceLoop(engine, out=out, max_sleep=interval, freeze_gc=False)
        loop.say("ready", db=self.settings.db)
        running = asyncio.ensure_future(loop.run(specs))
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
        await self._engine_now().operator.cancel(key, actor=Actor.API)
        return await self._job(key)

    async def retry(self, key: str) -> Job:
        """Mark a failed or cancelled job for resend; the next pass sends it."""
        await self._marker().operator.retry(key, actor=Actor.API)
        return await self._job(key)

    async def answer(self, key: str, text: str, *, refine: bool = False) -> Job:
        """Continue a job that requires action, or approve (`refine`: revise)
        its research plan, with `text` as the next turn."""
        if not text.strip():
            raise ConfigError("the answer is empty: say what the interaction should go on with")
        await self._engine_now().operator.answer(key, text, actor=Actor.API, refine=refine)
        return await self._job(key)

    async def replay(self, keys: Sequence[str] | None = None) -> PassReport:
        """Deliver stored results again (all `done` rows, or these keys)."""
        return await self._engine_now().replay(force=True, idems=keys)

    async def _job(self, key: str) -> Job:
        job = await self.get(key)
        if job is None:
            raise OperatorError(f"no job with key {key!r} in {self.settings.db}")
        return job


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


def _as_list(jobs: JobLike | Iterable[JobLike]) -> list[JobLike]:
    if isinstance(jobs, JobSpec | Mapping):
        return [jobs]
    return list(jobs)


def _spec_fields(spec: JobSpec) -> dict[str, Any]:
    """A JobSpec as a jobs file's line, so it gets every check a line gets."""
    fields: dict[str, Any] = {"input": spec.input}
    if spec.agent:
        fields["agent"] = spec.agent
    elif spec.model:
        fields["model"] = spec.model
    optional = {
        "config": dict(spec.config) or None,
        "key": spec.key,
        "labels": dict(spec.labels) or None,
        "deadline": spec.deadline,
        "previous": spec.previous,
    }
    fields.update({name: value for name, value in optional.items() if value is not None})
    return fields
