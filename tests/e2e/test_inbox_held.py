"""The inbox held by strangers (issue 22, point 4), end to end: a real
`reclaim-tui inbox` process under systemd's default limit of 1024 open
files, 1,100 connections that never send a request from 40 addresses, and
a real signed delivery must still be kept, with a log that stays small.
Counts only: no wall-clock assertion (the timeouts are generous bounds)."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.helpers.ports import free_port
from tests.helpers.procs import clean_env
from tests.unit.test_inbox import SECRET, event_body, hmac_headers

HOLDERS = 1_100


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _up(url: str) -> bool:
    """An unsigned POST is refused with 401 once the inbox listens."""
    try:
        return _post(url, b"{}", {}, 2) == 401
    except OSError:
        return False


def _systemd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def test_eleven_hundred_idle_connections_do_not_lock_a_delivery_out(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/webhooks/gemini"
    log = tmp_path / "inbox.log"
    args = ["inbox", "--db", str(tmp_path / "ledger.db"), "--listen", f"127.0.0.1:{port}"]
    args += ["--secret", SECRET, "--jwks-url", ""]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reclaim_tui", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=clean_env(),
            preexec_fn=_systemd_limit,
        )
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        while not _up(url):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        for n in range(HOLDERS):
            source = f"127.0.0.{2 + n % 40}"
            held.append(socket.create_connection(("127.0.0.1", port), 10, (source, 0)))
        body = event_body(interaction="int-held", key="job-held")
        assert _post(url, body, hmac_headers(body, "msg_held"), 60) == 200
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        proc.wait(30)
    text = log.read_text()
    assert "Traceback" not in text
    assert len(text.splitlines()) < 20, text[-3000:]
