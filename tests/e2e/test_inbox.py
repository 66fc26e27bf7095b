"""The webhook inbox end to end (issue 12): the emulator delivers signed
dynamic webhooks to a `reclaim-tui inbox` process while `tick` processes
run with --webhook-url. The inbox is down when the first jobs end (the
emulator retries), is killed and restarted in the middle, and every job
still costs one create and one get: the fallback polls never run."""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.inbox import InboxProcess
from tests.helpers.procs import write_jobs

JOBS = 12


def _events(ws: Workspace) -> int:
    rows = ws.view()._query("SELECT COUNT(*) AS n FROM inbox")
    return int(rows[0]["n"])


def _wait_until_every_job_was_refused(emu: EmulatorProcess) -> None:
    """Until every job has ended and each one's delivery failed at least once."""
    deadline = time.monotonic() + 60
    while True:
        log = emu.admin.webhook_deliveries()
        sent = {m["webhook_id"] for m in log["messages"]}
        refused = {a["webhook_id"] for a in log["attempts"] if a["outcome"] != "delivered"}
        if len(sent) >= JOBS and sent <= refused:
            return
        assert time.monotonic() < deadline, log["counters"]
        time.sleep(0.1)


def test_events_wake_rows_one_create_one_get_per_job(tmp_path: Path) -> None:
    flags = ("--latency-max", "1.5", "--webhook-backoff-base", "0.2", "--webhook-backoff-cap", "1")
    with EmulatorProcess(tmp_path, latency=0.3, seed=5, flags=flags) as emu:
        ws = Workspace(tmp_path / "hooks", emulator=emu)
        inbox = InboxProcess(ws.db, f"{emu.base_url}/.well-known/jwks.json", tmp_path)
        # --webhook-poll 600: a fallback poll in this test would mean an event was lost.
        ws.extra_flags = ("--webhook-url", inbox.url, "--webhook-poll", "600")
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"hook job {i}"} for i in range(JOBS)])
        first = ws.tick(jobs=jobs)
        assert first.returncode == 0, first.stderr
        _wait_until_every_job_was_refused(emu)  # no inbox yet: its deliveries fail
        inbox.start()
        try:
            deadline = time.monotonic() + 60
            while _events(ws) < JOBS // 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            inbox.kill()  # mid-stream: the emulator retries what it could not deliver
            inbox.start()
            while _events(ws) < JOBS and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _events(ws) == JOBS
            run = ws.tick()
            assert run.returncode == 0, run.stderr
        finally:
            inbox.stop()
        rows = ws.view().rows()
        assert {r["status"] for r in rows.values()} == {"consumed"}
        assert all(r["polls"] == 1 for r in rows.values())
        calls = emu.stats()["calls"]
        assert (calls["create"], calls["get"]) == (JOBS, JOBS)
        assert inbox.starts == 2
        counters = emu.admin.webhook_deliveries()["counters"]
        # Refused while the inbox was down, delivered once it was up, none given up.
        assert counters["failed_attempts"] >= 1 and counters["given_up"] == 0
        assert counters["delivered"] >= JOBS


def test_static_webhooks_over_the_cli_and_their_hmac_deliveries(tmp_path: Path) -> None:
    """`webhooks create|list|ping|delete` through the SDK; the static
    webhook's secret (shown once) lets the inbox verify its HMAC deliveries."""
    import json

    from tests.helpers import run_cli
    from tests.helpers.ports import free_port

    with EmulatorProcess(tmp_path, latency=0.2) as emu:
        ws = Workspace(tmp_path / "static", emulator=emu)
        api = ["--base-url", emu.base_url, "--api-key", emu.api_key]
        port = free_port()
        url = f"http://127.0.0.1:{port}/webhooks/gemini"
        made = run_cli(["webhooks", "create", url, "--name", "inbox", *api])
        assert made.returncode == 0, made.stderr
        hook = json.loads(made.stdout)
        secret = hook["new_signing_secret"]
        assert secret.startswith("whsec_") and "shown once" in made.stderr
        # No JWKS: only the static webhook's HMAC is accepted.
        with InboxProcess(ws.db, "", tmp_path, "--secret", secret, port=port):
            pinged = run_cli(["webhooks", "ping", hook["id"], *api])
            assert pinged.returncode == 0, pinged.stderr
            deadline = time.monotonic() + 30
            kept: list[object] = []
            while not kept and time.monotonic() < deadline:
                kept = ws.view()._query("SELECT type, signed_by FROM inbox")
                time.sleep(0.1)
            assert [tuple(r) for r in kept] == [("webhook.ping", "hmac")]
        listed = run_cli(["webhooks", "list", *api])
        assert listed.returncode == 0 and hook["id"] in listed.stdout
        assert secret not in listed.stdout  # the secret is shown once only
        gone = run_cli(["webhooks", "delete", hook["id"], *api])
        assert gone.returncode == 0, gone.stderr
        assert hook["id"] not in run_cli(["webhooks", "list", *api]).stdout
