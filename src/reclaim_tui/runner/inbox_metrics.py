"""The standalone inbox's Prometheus metrics and health check (`reclaim-tui
inbox --metrics-listen HOST:PORT`), served by the service's listener
(metrics.py's `serve_metrics`) with the service's names where the figure is
the same: the deliveries kept, redelivered and refused by cause
(`reclaim_inbox_deliveries_total`, as a service's own inbox counts them), the
ledger becoming unusable (`reclaim_ledger_unavailable_total`: each time the
inbox found it so, after answering from it) and whether it answers
(`reclaim_ledger_up`). `/healthz` says `receiving`, or `waiting_for_ledger`
(503) while deliveries are refused for the ledger.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reclaim_tui.runner.metrics import InboxCollector, InboxCounts, serve_metrics

__all__ = ["InboxLedgerCounts", "inbox_metrics"]


class InboxLedgerCounts(InboxCounts, Protocol):
    """What a standalone inbox says of its ledger (inbox/server.py's InboxServer)."""

    ledger_outages: int
    ledger_is_up: bool


class _LedgerCollector(Collector):
    """The inbox's view of its ledger, under the service's names."""

    def __init__(self, inbox: InboxLedgerCounts) -> None:
        self._inbox = inbox

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "reclaim_ledger_unavailable",
            "Times the ledger could not be used (the inbox answered 503 until it was back).",
            value=self._inbox.ledger_outages,
        )
        yield GaugeMetricFamily(
            "reclaim_ledger_up",
            "1 while the ledger answers, 0 while deliveries are refused for it.",
            value=1 if self._inbox.ledger_is_up else 0,
        )


def _health(inbox: InboxLedgerCounts) -> tuple[dict[str, Any], bool]:
    up = inbox.ledger_is_up
    document = {
        "state": "receiving" if up else "waiting_for_ledger",
        "kept": inbox.accepted,
        "redelivered": inbox.duplicates,
        "refused": sum(inbox.refused.values()) + inbox.ledger_refusals,
        "ledger_up": up,
    }
    return document, up


@contextlib.asynccontextmanager
async def inbox_metrics(listen: str | None, inbox: InboxLedgerCounts) -> AsyncIterator[str | None]:
    """`/metrics` and `/healthz` of this inbox on `listen` while the block
    runs; its URL (None, and nothing served, without `listen`)."""
    if listen is None:
        yield None
        return
    registry = CollectorRegistry(auto_describe=True)
    registry.register(InboxCollector(inbox))
    registry.register(_LedgerCollector(inbox))
    async with serve_metrics(listen, registry, lambda: _health(inbox)) as url:
        yield url
