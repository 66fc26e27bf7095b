"""`run --metrics-listen`: a real service, scraped over HTTP while an emulator
with faults (429, 503, dropped creates, failed jobs) answers it. At the end
every figure agrees with what the ledger and the emulator recorded."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.ports import free_port
from tests.helpers.procs import clean_env, write_jobs

JOBS = 40
FAULTS = ("--rate-429", "0.1", "--rate-503", "0.1", "--drop-rate", "0.05", "--fail-rate", "0.1")


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _sum(samples: dict[Any, float], name: str, **labels: str) -> float:
    return sum(
        value
        for (sample, have), value in samples.items()
        if sample == name and set(labels.items()) <= set(have)
    )


def _wait(predicate, limit: float = 180.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except (sqlite3.Error, OSError):
            pass  # the ledger or the listener not there yet
        time.sleep(0.1)
    return False


def test_every_metric_agrees_with_the_ledger_and_the_emulator(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path, latency=0.2, seed=7, flags=FAULTS) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"metric {i}"} for i in range(JOBS)])
        log = ws.root / "run.log"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--jobs", str(jobs)]
        args += ["--idle-sleep", "0.2", "--first-poll", "0.3", "--request-timeout", "2"]
        args += ["--metrics-listen", f"127.0.0.1:{port}"]
        proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
        try:
            assert _wait(lambda: _get(f"{base}/healthz")[0] == 200)
            early = _samples(_get(f"{base}/metrics")[1])

            def settled() -> bool:
                counts = ws.view().status_counts()
                return counts.get("consumed", 0) + counts.get("failed", 0) == JOBS

            assert _wait(settled)
            # The service's last pass (the one that settled the last job) has been counted.
            delivered = ws.view().status_counts()["consumed"]
            assert _wait(
                lambda: _sum(_samples(_get(f"{base}/metrics")[1]),
                             "reclaim_results_delivered_total") == delivered
            )  # fmt: skip
            # The ledger's figures are read at most every few seconds: until they show it.
            assert _wait(
                lambda: _sum(_samples(_get(f"{base}/metrics")[1]), "reclaim_jobs",
                             status="consumed") == delivered
            )  # fmt: skip
            status, text = _get(f"{base}/metrics")
            health = json.loads(_get(f"{base}/healthz")[1])
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        assert code == 0
        stats = emu.stats()

    assert status == 200
    metrics = _samples(text)
    counts = ws.view().status_counts()
    for name in ("consumed", "failed", "reserving", "submitted", "done", "cancelled"):
        assert _sum(metrics, "reclaim_jobs", status=name) == counts.get(name, 0), name
    # Every create this service sent reached the emulator: one request a call.
    assert _sum(metrics, "reclaim_api_calls_total", call="create") == stats["calls"]["create"]
    assert _sum(metrics, "reclaim_api_calls_total", call="get") == stats["calls"]["get"]
    assert _sum(metrics, "reclaim_api_calls_total", call="create", outcome="ok") >= JOBS
    assert _sum(metrics, "reclaim_api_calls_total", outcome="429") > 0
    assert _sum(metrics, "reclaim_api_calls_total", outcome="5xx") > 0
    duplicates = sum(row["duplicates"] for row in ws.view().rows().values())
    assert _sum(metrics, "reclaim_possible_duplicate_creates") == duplicates
    assert _sum(metrics, "reclaim_pass_outcomes_total", outcome="failed") == counts["failed"]
    assert _sum(metrics, "reclaim_passes_total") == health["passes"] > 0
    assert _sum(metrics, "reclaim_pass_duration_seconds_count") == health["passes"]
    assert _sum(metrics, "reclaim_spend_usd", model="gemini-flash-latest") > 0
    assert _sum(metrics, "reclaim_ledger_up") == 1
    assert _sum(metrics, "reclaim_service_state", state="passing") == 1
    assert health["state"] == "passing" and health["ledger_up"] is True
    # The figures moved while the service worked: at the first scrape nothing was delivered.
    assert _sum(early, "reclaim_results_delivered_total") < delivered
    ready = json.loads(log.read_text().splitlines()[0])
    assert ready["metrics"] == base


def test_a_bad_listen_address_is_refused_before_anything_runs(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "bad", emulator=None)
    args = ["run", "--db", str(ws.db), "--once", "--base-url", "http://127.0.0.1:9"]
    args += ["--api-key", "k", "--metrics-listen", "localhost"]
    done = subprocess.run(
        [sys.executable, "-m", "reclaim_tui", *args],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "--metrics-listen 'localhost': expected HOST:PORT" in done.stderr


def test_the_inbox_s_deliveries_are_counted_by_outcome_and_cause(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path, latency=0.3) as emu:
        ws = Workspace(tmp_path / "svc-inbox", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"hooked {i}"} for i in range(6)])
        log = ws.root / "run.log"
        inbox_port, metrics_port = free_port(), free_port()
        hook = f"http://127.0.0.1:{inbox_port}/webhooks/gemini"
        base = f"http://127.0.0.1:{metrics_port}"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--jobs", str(jobs)]
        args += ["--inbox-listen", f"127.0.0.1:{inbox_port}", "--webhook-url", hook]
        args += ["--inbox-jwks-url", f"{emu.base_url}/.well-known/jwks.json"]
        args += ["--idle-sleep", "0.2", "--metrics-listen", f"127.0.0.1:{metrics_port}"]
        proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
        try:
            assert _wait(lambda: ws.view().status_counts().get("consumed", 0) == 6)
            # A delivery nobody signed: refused, and counted by its cause.
            forged = urllib.request.Request(
                hook, data=b'{"type": "interaction.completed"}', method="POST",
                headers={"content-type": "application/json", "webhook-id": "msg_forged",
                         "webhook-timestamp": str(int(time.time())),
                         "webhook-signature": "v1,AAAA"},
            )  # fmt: skip
            assert _get_status(forged) == 401
            text = _get(f"{base}/metrics")[1]
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        assert code == 0
    metrics = _samples(text)
    with sqlite3.connect(ws.db) as db:
        kept = db.execute("SELECT COUNT(*) FROM inbox").fetchone()[0]
    assert kept >= 6
    assert _sum(metrics, "reclaim_inbox_deliveries_total", outcome="kept") == kept
    refused = {
        dict(labels)["cause"]: value
        for (name, labels), value in metrics.items()
        if name == "reclaim_inbox_deliveries_total" and dict(labels)["outcome"] == "refused"
    }
    assert sum(refused.values()) == 1 and all(refused.values())


def _get_status(request: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code
