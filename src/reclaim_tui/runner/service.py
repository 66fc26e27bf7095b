"""`reclaim-tui run`: the reclaim loop as a long-lived service.

One process, one engine — one SDK client with its connection pool, one
ledger connection — instead of a cron tick paying start-up every minute:

- **the loop**: a pass (`Engine.tick`), then sleep until the ledger's next
  due row (at most `max_sleep`, at least `min_sleep`), or until woken early
  (an inbox event when `--inbox-listen` runs the webhook inbox in the same
  process);
- **signals**: the first SIGTERM/SIGINT drains — the pass in progress
  finishes, no new one starts, the process exits 0; a second one cancels
  the pass (its leases are released or expire; every row stays recoverable)
  and exits 130;
- **lines for a supervisor** (systemd, a container runtime): `ready` once
  the engine is up, one line per pass that did something (and one a minute
  when idle), `stopped` at the end — on stderr, or appended to `--log`;
- `--once`: one pass, then exit (a cron tick in the service's shape).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.registry import BEAT, Beacon
from reclaim_tui.core.ledger.urls import shown_db
from reclaim_tui.core.models import JobSpec, PassReport
from reclaim_tui.errors import (
    LedgerBusyError,
    LedgerError,
    LedgerPermissionError,
    ReclaimError,
)
from reclaim_tui.runner.commands import ServiceState, SetPace
from reclaim_tui.runner.ledger_watch import LedgerWatch
from reclaim_tui.runner.service_start import (
    InboxOptions,
    control_socket,
    engine_when_reachable,
    inbox_server,
    loop_name,
    metrics_endpoint,
    warm,
)
from reclaim_tui.runner.service_state import ServiceRecord, checked_pace

if TYPE_CHECKING:
    from reclaim_tui.runner.metrics import ServiceMetrics

__all__ = ["InboxOptions", "ServiceLoop", "next_due", "run_service"]

#: Statuses a pass can act on (a `done` row waits for its sink's replay).
_ACTIVE = "('reserving', 'submitted', 'done')"
#: Ledger errors a running service waits out (see ServiceLoop._run).
_WAITED_FOR = (LedgerBusyError, LedgerPermissionError)
#: `run --once`'s exit when the API was unreachable or refusing us (cli/common.py's, as `tick`).
EXIT_API_UNAVAILABLE = 6


async def next_due(ledger: Ledger) -> float | None:
    """When the next row a pass could take is due, or None when there is none.

    Held rows wait for an operator whatever their `next_at` (an orphan held
    by `--orphan-policy hold` keeps a past one), and a row leased by another
    process is not free before its lease ends: counting either would make
    the service pass every `min_sleep` with nothing to do."""
    rows = await ledger.select(
        "SELECT MIN(CASE WHEN next_at > COALESCE(lease_until, 0) THEN next_at"
        " ELSE COALESCE(lease_until, 0) END) FROM jobs"
        f" WHERE status IN {_ACTIVE} AND held = 0"
    )
    value = rows[0][0] if rows else None
    return float(value) if value is not None else None


@dataclass
class ServiceLoop:
    """Passes until stopped. `wake` (set by anyone) cuts a sleep short."""

    engine: Engine
    min_sleep: float = 0.05
    max_sleep: float = 5.0
    idle_every: float = 60.0
    out: TextIO = field(default_factory=lambda: sys.stderr)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    passes: int = 0
    stopping: bool = False
    #: set over the control socket (`set_pace`): no pass starts while paused
    paused: bool = False
    #: its passes, the last one's time and outcome (`state`, over the control socket)
    record: ServiceRecord = field(default_factory=ServiceRecord)
    #: the first wait after a ledger that could not be used (doubles to 30 s)
    retry_after: float = 1.0
    _pass: asyncio.Task[PassReport] | None = None
    _ledger_failures: int = 0
    _said_idle_at: float = float("-inf")
    #: attached consoles waiting for the next pass's report (control.py)
    _waiters: list[asyncio.Future[PassReport]] = field(default_factory=list)
    #: freeze what is alive once the API client is built (`_freeze_once`)
    freeze_gc: bool = True
    _froze: bool = False
    #: the ledger file as last checked (`_check_file`)
    _watch: LedgerWatch | None = None
    #: this process's row in the registry (core/ledger/registry.py); None: unregistered
    beacon: Beacon | None = None
    _draining: asyncio.Task[None] | None = None
    #: its Prometheus metrics (`--metrics-listen`, runner/metrics.py); None: not kept
    metrics: ServiceMetrics | None = None

    async def next_pass(self) -> PassReport:
        """The report of the next pass to finish (the service's own schedule:
        this starts none). Fails once the service is stopping."""
        if self.stopping:
            raise ReclaimError("the service is stopping")
        waiter: asyncio.Future[PassReport] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def _tell_waiters(self, report: PassReport | None) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if waiter.done():
                continue
            if report is None:
                waiter.set_exception(ReclaimError("the service stopped"))
            else:
                waiter.set_result(report)

    def state(self) -> ServiceState:
        """How the service runs now (its control socket's `ServiceStatus`)."""
        config = self.engine.config
        return self.record.state(
            stopping=self.stopping,
            paused=self.paused,
            interval=self.max_sleep,
            concurrency=config.concurrency,
            max_concurrency=config.max_concurrency,
        )

    def set_pace(self, command: SetPace) -> ServiceState:
        """Pause/resume, the pass interval, the calls in flight: all checked
        first (ConfigError: nothing changed), said in the log, then the loop
        woken so a new pace or a resume does not wait out the old sleep."""
        pace = checked_pace(command)
        if pace.paused is not None:
            self.paused = pace.paused
        if pace.interval is not None:
            self.max_sleep = pace.interval
            self.min_sleep = min(self.min_sleep, pace.interval)
        if pace.concurrency is not None:
            n = pace.concurrency
            self.engine.config = dataclasses.replace(
                self.engine.config, concurrency=n, max_concurrency=n
            )
        changed = {k: v for k, v in dataclasses.asdict(pace).items() if v is not None}
        if changed:
            self.say("pace", **changed)
        self.wake.set()
        return self.state()

    def say(self, event: str, **fields: object) -> None:
        """One JSON line: what a supervisor or a log reader greps for."""
        line = {"at": round(time.time(), 3), "event": event, "pid": os.getpid(), **fields}
        print(json.dumps(line, separators=(",", ":")), file=self.out, flush=True)

    def install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.signal, sig)

    def signal(self, sig: int = signal.SIGTERM) -> None:
        """First: drain (finish the pass, start no other). Second: cancel the pass."""
        if not self.stopping:
            self.stopping = True
            self.say("draining", signal=signal.Signals(sig).name)
            self.wake.set()
            if self.beacon is not None:  # said now: the pass may run a while yet
                with contextlib.suppress(RuntimeError):  # no loop running (a test)
                    self._draining = asyncio.get_running_loop().create_task(
                        self.beacon.changed(state="draining")
                    )
            return
        if self._pass is not None and not self._pass.done():
            self.say("cancelling", signal=signal.Signals(sig).name)
            self._pass.cancel()

    async def run(self, jobs: Sequence[JobSpec] = (), *, once: bool = False) -> int:
        """Passes until drained (0), cancelled (130) or, with `once`, after one."""
        try:
            return await self._run(jobs, once)
        finally:
            if self._froze:
                gc.unfreeze()  # in-process callers (the tests) get their collector back
                self._froze = False

    def _freeze_once(self) -> None:
        """After the first pass that found the API client built (it is built
        only when something is due), move everything alive out of the garbage
        collector's sight: google-genai's modules and models are most of the
        process's objects, and each full collection scanned them all, a
        share of the service's CPU worth saving (benchmarks/service.py with a
        gc callback shows it). Frozen objects are
        still freed by reference counting."""
        if self._froze or not self.freeze_gc:
            return
        if getattr(self.engine.backend, "built", True) is False:
            return  # the SDK is imported with the client: wait for it
        gc.collect()
        gc.freeze()
        self._froze = True

    async def _check_file(self) -> None:
        """Stop loudly (`ledger_replaced`) when the ledger is no longer the one
        opened (runner/ledger_watch.py)."""
        if self._watch is None:
            self._watch = LedgerWatch(self.engine.ledger, self.say)
        await self._watch.check()

    async def _run(self, jobs: Sequence[JobSpec], once: bool) -> int:
        first: Sequence[JobSpec] = jobs
        code = 0
        # A ledger put back in time under the service is seen at each pass
        # and refused at each commit (core/ledger/sqlite/generation.py).
        await self.engine.ledger.guard_generation(self.engine.owner)
        while not self.stopping:
            self.wake.clear()
            if self.beacon is not None and not once:  # a pause or a new interval
                await self.beacon.changed(
                    state="paused" if self.paused else "up", interval=self.max_sleep
                )
            if self.paused and not once:
                # Until a resume, a new pace or a signal; its row said alive meanwhile.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), BEAT)
                if self.beacon is not None:
                    await self.beacon.beat()
                continue
            await self._check_file()
            started = time.monotonic()
            self._pass = asyncio.create_task(self.engine.tick(first))
            try:
                report = await self._pass
            except asyncio.CancelledError:
                if self.stopping:
                    self._tell_waiters(None)
                    # Bounded: a second signal asks to be out now, whatever the ledger does.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._registry_stopped(), 5.0)
                    self.say("stopped", passes=self.passes, cancelled=True, code=130)
                    return 130
                raise
            except _WAITED_FOR as exc:
                # Locked past the busy timeout, no room on its disk
                # (LedgerFullError), or its server restarting or out of
                # reach (PostgreSQL): what the pass committed stands,
                # its leases run out, and a service waits and goes on rather
                # than exit on a moment's trouble. A right revoked mid-run is
                # waited for too: an administrator's change is often undone
                # (a grant being redone, a migration by the owner), and a
                # service that exited would be restarted into the same
                # refusal; it says what it lacks at every wait. Other ledger
                # errors (a newer schema, a foreign file) still end it.
                if once:
                    raise
                self.record.failed(f"ledger unavailable: {exc}")
                await self._wait_for_ledger(exc)
                continue
            except LedgerError:
                # A file replaced while the pass read it fails as "malformed"
                # before the next pass's check: say what happened to the file
                # (ledger_replaced), not only that it cannot be read.
                await self._check_file()
                raise
            if self._ledger_failures:
                self.say("ledger_back", after_failures=self._ledger_failures)
                self._ledger_failures = 0
            first = ()
            self.passes += 1
            self.record.passed(report)
            if self.metrics is not None:
                self.metrics.passed(report, time.monotonic() - started)
            if self.beacon is not None:
                await self.beacon.passed(report)
            self._report(report)
            self._freeze_once()
            self._tell_waiters(report)
            if once:
                # As `tick`: the API unreachable or refusing us is exit 6.
                code = EXIT_API_UNAVAILABLE if report.unavailable is not None else 0
                break
            try:
                await self._sleep()
            except _WAITED_FOR as exc:
                await self._wait_for_ledger(exc)
            except LedgerError:
                await self._check_file()  # as for a pass: what happened to the file
                raise
        self._tell_waiters(None)
        await self._registry_stopped()
        self.say("stopped", passes=self.passes, code=code)
        return code

    async def _registry_stopped(self) -> None:
        """A clean exit, in the registry (after its `draining`, if said)."""
        if self._draining is not None:
            await asyncio.gather(self._draining, return_exceptions=True)
        if self.beacon is not None:
            await self.beacon.stopped()

    def _report(self, report: PassReport) -> None:
        now = time.monotonic()
        busy = any(v for k, v in report.counts.items() if k not in ("polled",)) or report.errors
        if busy or now - self._said_idle_at >= self.idle_every:
            self._said_idle_at = now
            fields: dict[str, object] = {"summary": report.summary()}
            if report.unavailable is not None:
                fields["unavailable"] = report.unavailable[0]
            self.say("pass", n=self.passes, **fields)

    def health(self) -> str:
        """What the service is doing, as its health check says it."""
        if self.stopping:
            return "draining"
        if self._ledger_failures:
            return "waiting_for_ledger"
        return "paused" if self.paused else "passing"

    async def _wait_for_ledger(self, exc: LedgerError) -> None:
        if self.metrics is not None:
            self.metrics.ledger_waiting()
        self._ledger_failures += 1
        wait = min(30.0, self.retry_after * 2 ** (self._ledger_failures - 1))
        refused = {"refused": True} if isinstance(exc, LedgerPermissionError) else {}
        self.say("ledger_unavailable", error=str(exc), retry_in_s=wait, **refused)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), wait)
        self.wake.clear()

    async def _sleep(self) -> None:
        due = await next_due(self.engine.ledger)
        now = self.engine.clock.now()
        wait = self.max_sleep if due is None else due - now
        wait = min(self.max_sleep, max(self.min_sleep, wait))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), wait)


#: What runs a service's loop once it is up: (loop, first jobs, once) → exit code.
Drive = Callable[[ServiceLoop, Sequence[JobSpec], bool], Awaitable[int]]


async def run_service(
    settings: Settings,
    jobs: Sequence[JobSpec] = (),
    *,
    once: bool = False,
    log: TextIO | None = None,
    inbox: InboxOptions | None = None,
    idle_sleep: float = 5.0,
    control: str | None = None,
    metrics_listen: str | None = None,
    engine: Engine | None = None,
    drive: Drive | None = None,
) -> int:
    """`reclaim-tui run`, and the Python API's `serve`: the engine up (opened
    here once its ledger is reachable, or the caller's `engine`), `ready`
    said, passes until stopped (`drive` runs the loop: by default until a
    signal; the API's, until its task is cancelled)."""
    out = log or sys.stderr
    async with contextlib.AsyncExitStack() as stack:
        own = engine is None  # --once is a tick in the service's shape: it exits 4 as a tick does
        if engine is None:
            engine = await engine_when_reachable(stack, settings, out, wait=not once)
        kind, interval = ("run", None) if once else ("service", idle_sleep)
        beacon = Beacon(engine.ledger, engine.owner, kind, interval=interval)
        loop = ServiceLoop(engine, out=out, max_sleep=idle_sleep, beacon=beacon, freeze_gc=own)
        if metrics_listen is not None:
            from reclaim_tui.runner.metrics import CountingBackend, ServiceMetrics

            loop.metrics, inner = ServiceMetrics(), engine.backend
            engine.parts.backend = CountingBackend(inner, loop.metrics)
            stack.callback(setattr, engine.parts, "backend", inner)
        if drive is None:
            loop.install_signals()
        # A service is started to work: build the SDK's client (its import is
        # long) before `ready`, not inside the first job's window.
        sdk = await warm(engine)
        async with (
            inbox_server(settings, inbox, loop.wake.set, loop.metrics) as url,
            control_socket(settings, control, engine, loop),
            metrics_endpoint(metrics_listen, loop.metrics, engine, loop.health) as metrics_url,
        ):
            await beacon.start()
            loop.say(
                "ready", db=shown_db(settings.db), inbox=url, webhooks=bool(settings.webhook_url),
                control=control, metrics=metrics_url, sdk=sdk, loop=loop_name(),
            )  # fmt: skip
            return await (drive or _until_signalled)(loop, jobs, once)


async def _until_signalled(loop: ServiceLoop, jobs: Sequence[JobSpec], once: bool) -> int:
    return await loop.run(jobs, once=once)
