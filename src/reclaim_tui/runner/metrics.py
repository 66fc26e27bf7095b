"""A service's Prometheus metrics and health check, on an opt-in listener
(`run --metrics-listen HOST:PORT`): `GET /metrics` in Prometheus's text
format, `GET /healthz` as JSON.

Two kinds of figures:
- **what this process did**, counted as it happens: passes and their
  duration, each pass's outcomes, results delivered, API calls by call and
  outcome (the backend is wrapped: `CountingBackend`), the ledger becoming
  unavailable and coming back, and with `--inbox-listen` the inbox's
  deliveries kept, redelivered and refused by cause;
- **what the ledger holds**, read when scraped (at most every few seconds,
  the spend at most once a minute: it sums every stored usage): jobs by
  status and the age of the oldest in each, the possible duplicate creates
  recorded, the spend by model from the stored usage and the price table.
  These agree with `reclaim-tui status` and `costs` whichever process did
  the work, and survive a restart of the service.

Names follow Prometheus's conventions: `reclaim_` prefix, base units,
`_total` on counters, `_seconds` on durations.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter as CounterType
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reclaim_tui.core.backend import Backend
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, PassReport, RemoteInteraction, Status
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
    "CountingBackend",
    "InboxCollector",
    "ServiceMetrics",
    "metrics_listener",
    "parse_listen",
    "serve_metrics",
]

log = logging.getLogger("reclaim_tui.metrics")

# A counter's `_created` series doubles every counter's lines and no alert reads it.
disable_created_metrics()  # type: ignore[no-untyped-call]

#: Seconds a scrape reuses the ledger's counts, and its spend.
COUNTS_EVERY = 5.0
SPEND_EVERY = 60.0
#: Pass durations: a quiet pass is milliseconds, a big batch seconds.
PASS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
#: The service states /healthz and `reclaim_service_state` name.
STATES = ("passing", "paused", "draining", "waiting_for_ledger")


def parse_listen(listen: str) -> tuple[str, int]:
    """`HOST:PORT` (an IPv6 host in brackets) → (host, port)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--metrics-listen {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9464")
    return (host.strip("[]") or "127.0.0.1"), int(port)


def call_outcome(exc: BaseException | None) -> str:
    """An API call's outcome as a label: `ok`, the HTTP status class the API
    answered (`429`, `5xx`, `4xx`), else what the error means."""
    if exc is None:
        return "ok"
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return "429" if status == 429 else f"{status // 100}xx"
    kinds: tuple[tuple[type[BaseException], str], ...] = (
        (NotCreatedError, "not_created"),
        (MaybeCreatedError, "maybe_created"),
        (InteractionGoneError, "gone"),
        (TransientReadError, "transient"),
        (PermanentReadError, "refused"),
        (BackendError, "error"),
    )
    for kind, word in kinds:
        if isinstance(exc, kind):
            return word
    return "error"


@dataclass
class _LedgerFigures:
    """What the ledger held at the last read (monotonic times of the reads)."""

    jobs: dict[str, tuple[int, float | None]]
    duplicates: int
    spend: dict[str, float]
    counts_at: float = float("-inf")
    spend_at: float = float("-inf")
    #: the counts the spend was read at
    spend_counts: dict[str, int] | None = None


class ServiceMetrics:
    """Every metric of one service, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.passes = Counter("reclaim_passes", "Passes the service ran.", registry=r)
        self.pass_seconds = Histogram(
            "reclaim_pass_duration_seconds", "How long each pass took.", buckets=PASS_BUCKETS,
            registry=r,
        )  # fmt: skip
        self.outcomes = Counter(
            "reclaim_pass_outcomes", "What passes did to rows, by outcome (sent, completed,"
            " consumed, failed, resubmitted, …).", ["outcome"], registry=r,
        )  # fmt: skip
        self.delivered = Counter(
            "reclaim_results_delivered", "Results whose side effect (the sink) finished.",
            registry=r,
        )  # fmt: skip
        self.api_calls = Counter(
            "reclaim_api_calls", "Calls to the Interactions API by call and outcome.",
            ["call", "outcome"], registry=r,
        )  # fmt: skip
        self.unavailable = Counter(
            "reclaim_ledger_unavailable", "Times the ledger could not be used and the"
            " service waited for it.", registry=r,
        )  # fmt: skip
        self.ledger_up = Gauge(
            "reclaim_ledger_up", "1 while the ledger answers, 0 while the service waits for it.",
            registry=r,
        )  # fmt: skip
        self.ledger_up.set(1)
        self.last_pass = Gauge(
            "reclaim_last_pass_timestamp_seconds", "When the last pass finished (Unix time).",
            registry=r,
        )  # fmt: skip
        self.state = Gauge(
            "reclaim_service_state", "1 for the state the service is in.", ["state"], registry=r
        )
        #: the same figures as plain values, for /healthz
        self.pass_count = 0
        self.last_pass_at: float | None = None
        self.ledger_is_up = True
        self._figures = _LedgerFigures({}, 0, {})
        self.registry.register(_LedgerCollector(self._figures))
        self.set_state("passing")

    # -- what this process did ------------------------------------------------------------
    def passed(self, report: PassReport, seconds: float) -> None:
        self.passes.inc()
        self.pass_seconds.observe(seconds)
        for outcome, n in report.counts.items():
            if n:
                self.outcomes.labels(outcome).inc(n)
        if report.counts["consumed"]:
            self.delivered.inc(report.counts["consumed"])
        self.pass_count += 1
        self.last_pass_at = time.time()
        self.last_pass.set(self.last_pass_at)
        self.ledger_is_up = True
        self.ledger_up.set(1)

    def ledger_waiting(self) -> None:
        self.unavailable.inc()
        self.ledger_is_up = False
        self.ledger_up.set(0)

    def watch_inbox(self, inbox: InboxCounts) -> None:
        """Count the deliveries of the service's own inbox (`--inbox-listen`)."""
        self.registry.register(InboxCollector(inbox))

    def set_state(self, state: str) -> None:
        for name in STATES:
            self.state.labels(name).set(1 if name == state else 0)

    # -- what the ledger holds ------------------------------------------------------------
    async def refresh(self, ledger: Ledger, prices: Callable[[], Any] | None) -> None:
        """Read the ledger's figures if the last read is older than its period."""
        now, figures = time.monotonic(), self._figures
        if now - figures.counts_at >= COUNTS_EVERY:
            figures.jobs = await ledger.counts()
            rows = await ledger.select("SELECT COALESCE(SUM(duplicates), 0) FROM jobs")
            figures.duplicates = int(rows[0][0] or 0)
            figures.counts_at = now
        # The spend changes only when a result is stored: read it again when the
        # counts moved, else once a minute.
        sizes = {status: n for status, (n, _) in figures.jobs.items()}
        moved = sizes != figures.spend_counts
        if prices is not None and (moved or now - figures.spend_at >= SPEND_EVERY):
            from reclaim_tui.core.cost_totals import cost_totals

            totals = await cost_totals(ledger, prices(), by="model")
            figures.spend = {row.key: row.usd for row in totals if row.priced}
            figures.spend_at, figures.spend_counts = now, sizes


class _LedgerCollector(Collector):
    """The ledger's figures as of the last `refresh`, as gauges."""

    def __init__(self, figures: _LedgerFigures) -> None:
        self._figures = figures

    def collect(self) -> Iterator[Metric]:
        figures = self._figures
        jobs = GaugeMetricFamily("reclaim_jobs", "Jobs in the ledger by status.", labels=["status"])
        oldest = GaugeMetricFamily(
            "reclaim_oldest_job_age_seconds",
            "Age in its status of the oldest job of each status.",
            labels=["status"],
        )
        now = time.time()
        for status in Status:
            n, since = figures.jobs.get(status.value, (0, None))
            jobs.add_metric([status.value], n)
            if since is not None:
                oldest.add_metric([status.value], max(0.0, now - since))
        yield jobs
        yield oldest
        yield GaugeMetricFamily(
            "reclaim_possible_duplicate_creates",
            "Creates recorded as possible duplicate spends (orphans sent again).",
            value=figures.duplicates,
        )
        spend = GaugeMetricFamily(
            "reclaim_spend_usd",
            "Spend by model from the stored usage and the price table (priced rows only).",
            labels=["model"],
        )
        for model, usd in sorted(figures.spend.items()):
            spend.add_metric([model], usd)
        yield spend


class InboxCounts(Protocol):
    """What an inbox counts (inbox/server.py's InboxServer)."""

    accepted: int
    duplicates: int
    refused: CounterType[str]
    #: deliveries answered 503 because the ledger could not be written
    ledger_refusals: int


class InboxCollector(Collector):
    """The inbox's deliveries as one counter: kept, redelivered (already kept:
    a no-op), refused by cause."""

    def __init__(self, inbox: InboxCounts) -> None:
        self._inbox = inbox

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "reclaim_inbox_deliveries",
            "Webhook deliveries the service's inbox answered, by outcome and cause.",
            labels=["outcome", "cause"],
        )
        family.add_metric(["kept", ""], self._inbox.accepted)
        family.add_metric(["redelivered", ""], self._inbox.duplicates)
        for cause, n in sorted(self._inbox.refused.items()):
            family.add_metric(["refused", cause], n)
        if self._inbox.ledger_refusals:  # as the other causes: once one was counted
            family.add_metric(["refused", "ledger-unavailable"], self._inbox.ledger_refusals)
        yield family


class CountingBackend:
    """A Backend that counts each call by its outcome, then hands it on."""

    def __init__(self, inner: Backend, metrics: ServiceMetrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self.supports_lookup = inner.supports_lookup

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # warm, built, …: the inner backend's own

    @contextlib.contextmanager
    def _counted(self, call: str) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            self.metrics.api_calls.labels(call, call_outcome(exc)).inc()
            raise
        self.metrics.api_calls.labels(call, "ok").inc()

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        with self._counted("create"):
            return await self.inner.create(spec, idem)

    async def get(self, handle: str) -> RemoteInteraction:
        with self._counted("get"):
            return await self.inner.get(handle)

    async def cancel(self, handle: str) -> RemoteInteraction:
        with self._counted("cancel"):
            return await self.inner.cancel(handle)

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        with self._counted("find_by_label"):
            return await self.inner.find_by_label(idem, attempt)

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.asynccontextmanager
async def metrics_listener(
    listen: str,
    metrics: ServiceMetrics,
    ledger: Ledger,
    state: Callable[[], str],
    prices: Callable[[], Any] | None,
) -> AsyncIterator[str]:
    """A service's `/metrics` and `/healthz` on `listen` while the block runs; its URL."""

    async def before_scrape() -> None:
        metrics.set_state(state())
        try:
            await metrics.refresh(ledger, prices)
        except Exception as exc:  # the ledger's figures stay as last read
            log.warning("metrics: the ledger could not be read: %s", exc)

    def health() -> tuple[dict[str, Any], bool]:
        word = state()
        metrics.set_state(word)
        document = {
            "state": word,
            "passes": metrics.pass_count,
            "last_pass_at": metrics.last_pass_at,
            "ledger_up": metrics.ledger_is_up,
        }
        return document, word in ("passing", "paused")

    async with serve_metrics(listen, metrics.registry, health, before_scrape) as url:
        yield url


@contextlib.asynccontextmanager
async def serve_metrics(
    listen: str,
    registry: CollectorRegistry,
    health: Callable[[], tuple[dict[str, Any], bool]],
    before_scrape: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[str]:
    """`GET /metrics` (the registry, in Prometheus's text format) and `GET
    /healthz` (`health()`'s document; 200 when it says healthy, else 503) on
    `listen` while the block runs; its URL. The service's and the inbox's."""
    host, port = parse_listen(listen)

    async def scrape(request: web.Request) -> web.Response:
        if before_scrape is not None:
            await before_scrape()
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        document, healthy = health()
        return web.json_response(document, status=200 if healthy else 503)

    app = web.Application()
    app.router.add_get("/metrics", scrape)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise ConfigError(f"--metrics-listen {listen}: {exc.strerror or exc}") from None
    bound = runner.addresses[0][1] if runner.addresses else port
    try:
        yield f"http://{host}:{bound}"
    finally:
        await runner.cleanup()
