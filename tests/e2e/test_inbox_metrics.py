"""`reclaim-tui inbox --metrics-listen`: a real inbox process, scraped while
signed, redelivered, forged and ledger-refused deliveries reach it, with the
service's listener (runner/metrics.py) and the service's metric names."""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import standardwebhooks
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.inbox import InboxProcess
from tests.helpers.ports import free_port

SECRET = "whsec_" + base64.b64encode(b"m" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 32).decode()


def _post(url: str, wid: str, n: int, secret: str = SECRET) -> int:
    body = json.dumps(
        {"type": "interaction.completed", "data": {"id": f"int-{n}", "status": "completed"}}
    )
    stamp = datetime.now(tz=UTC)
    headers = {
        "webhook-id": wid,
        "webhook-timestamp": str(int(stamp.timestamp())),
        "webhook-signature": standardwebhooks.Webhook(secret).sign(wid, stamp, body),
        "content-type": "application/json",
    }
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    return _status(request)


def _status(request: urllib.request.Request | str) -> int:
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _health(base: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _deliveries(m: dict[Any, float], outcome: str, cause: str = "") -> float:
    key = ("reclaim_inbox_deliveries_total", (("cause", cause), ("outcome", outcome)))
    return m.get(key, 0.0)


def test_a_running_inbox_counts_its_deliveries_and_its_ledger(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    metrics_port = free_port()
    base = f"http://127.0.0.1:{metrics_port}"
    flags = ("--jwks-url", "", "--secret", SECRET, "--metrics-listen", f"127.0.0.1:{metrics_port}")
    inbox = InboxProcess(db, "", tmp_path, *flags)
    inbox.args.remove("--jwks-url")  # the helper's JWKS flag: this inbox takes HMAC only
    inbox.args.remove("")
    inbox.start()  # its readiness probe is one unsigned delivery: refused
    try:
        first = _scrape(base)
        assert _post(inbox.url, "msg_1", 1) == 200
        assert _post(inbox.url, "msg_2", 2) == 200
        assert _post(inbox.url, "msg_1", 1) == 200  # a redelivery: nothing changes
        assert _post(inbox.url, "msg_3", 3, secret=OTHER) == 401
        moved = _scrape(base)
        assert _health(base) == (
            200,
            {"state": "receiving", "kept": 2, "redelivered": 1, "refused": 2, "ledger_up": True},
        )
        # A writer holding the ledger past the inbox's busy timeout: 503, the API retries.
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            assert _post(inbox.url, "msg_4", 4) == 503
            down = _scrape(base)
            status, health = _health(base)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert _post(inbox.url, "msg_4", 4) == 200  # the retry, once the ledger answers
        back = _scrape(base)
        back_health = _health(base)
    finally:
        inbox.stop()
    assert inbox.proc is not None and inbox.proc.returncode == 0  # SIGTERM: a clean stop
    log = inbox.log_path.read_text()
    assert f"inbox: metrics on {base} (/metrics, /healthz)" in log

    assert _deliveries(first, "kept") == 0 and _deliveries(first, "refused", "missing-headers") == 1
    assert (_deliveries(moved, "kept"), _deliveries(moved, "redelivered")) == (2, 1)
    refused = {
        dict(labels)["cause"]: value
        for (name, labels), value in moved.items()
        if name == "reclaim_inbox_deliveries_total" and dict(labels)["outcome"] == "refused"
    }
    assert sum(refused.values()) == 2
    # The ledger unavailable: said by the gauge, the counter, the cause and /healthz.
    assert down[("reclaim_ledger_up", ())] == 0
    assert down[("reclaim_ledger_unavailable_total", ())] == 1
    assert _deliveries(down, "refused", "ledger-unavailable") == 1
    assert status == 503 and health["state"] == "waiting_for_ledger"
    # And back.
    assert back[("reclaim_ledger_up", ())] == 1
    assert back[("reclaim_ledger_unavailable_total", ())] == 1
    assert back_health[0] == 200 and back_health[1]["state"] == "receiving"
    with sqlite3.connect(db) as con:
        kept = con.execute("SELECT COUNT(*) FROM inbox").fetchone()[0]
    assert _deliveries(back, "kept") == kept == 3
    assert not any(name.startswith("reclaim_passes") for name, _ in back)  # no service here
