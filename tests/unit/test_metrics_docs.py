"""The metrics page, its alert rules and the Grafana dashboard name only
metrics the service serves, and every metric the service serves is on the
page; the outcome labels are the ones `call_outcome` gives."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from reclaim_tui.core.models import PassReport
from reclaim_tui.errors import MaybeCreatedError, NotCreatedError, TransientReadError
from reclaim_tui.runner.metrics import ServiceMetrics, call_outcome, parse_listen

DOCS = Path(__file__).resolve().parents[2] / "docs"
NAME = re.compile(r"\breclaim_[a-z_]+\b")


def _served() -> set[str]:
    metrics = ServiceMetrics()
    report = PassReport()
    report.counts["consumed"] += 1
    metrics.passed(report, 0.5)
    metrics.api_calls.labels("create", "ok").inc()
    metrics.ledger_waiting()
    metrics.watch_inbox(
        SimpleNamespace(accepted=2, duplicates=1, refused=Counter(rate=1), ledger_refusals=1)
    )
    text = generate_latest(metrics.registry).decode()
    families = list(text_string_to_metric_families(text))
    # A family's own name too: the ledger's gauges have no sample on an empty ledger.
    return {f.name for f in families} | {s.name for f in families for s in f.samples}


def test_every_name_the_docs_use_is_served_and_every_served_one_is_documented() -> None:
    served = _served()
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text(encoding="utf-8"))
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    named = set(NAME.findall(page)) | set(NAME.findall(exprs))
    assert named - served == set()
    documented = set(NAME.findall(page))
    kept = {n for n in served if not re.search(r"_(bucket|count|sum)$", n)}
    assert {n for n in kept if n not in documented and f"{n}_total" not in documented} == set()


def test_an_api_call_s_outcome_label() -> None:
    assert call_outcome(None) == "ok"
    assert call_outcome(NotCreatedError("x", 429, retryable=True)) == "429"
    assert call_outcome(MaybeCreatedError("x", status=503)) == "5xx"
    assert call_outcome(MaybeCreatedError("timed out")) == "maybe_created"
    assert call_outcome(NotCreatedError("bad request", retryable=False)) == "not_created"
    assert call_outcome(TransientReadError("reset")) == "transient"
    assert call_outcome(RuntimeError("bug")) == "error"


def test_the_listen_address() -> None:
    assert parse_listen("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_listen("[::1]:9") == ("::1", 9)
    assert parse_listen(":9464") == ("127.0.0.1", 9464)
