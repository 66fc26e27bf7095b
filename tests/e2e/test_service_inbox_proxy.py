"""The inbox a service runs in its own process (`run --inbox-listen`) behind
a TLS proxy (issue 40 point 13): it took no `--trusted-proxy`, so the
proxy's connections were one client's, and past 32 of them a genuine
delivery was refused. Now the same flags as `inbox`, the same checks.
Real connections on loopback: the proxy from 127.0.0.1, a stranger from
127.0.0.2, to a real service process."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from tests.helpers.ports import free_port
from tests.helpers.procs import clean_env
from tests.unit.test_inbox import SECRET, event_body, hmac_headers

PROXY, STRANGER = "127.0.0.1", "127.0.0.2"
#: connections one client may hold (the inbox's default per-client cap)
PER_CLIENT = 32


async def _ready(proc: asyncio.subprocess.Process, log: Path) -> dict[str, object]:
    """The service's `ready` line, once it is written."""
    async with asyncio.timeout(120):
        while True:
            assert proc.returncode is None, "the service ended before it was ready"
            if log.exists() and log.read_text().strip():
                return dict(json.loads(log.read_text().splitlines()[0]))
            await asyncio.sleep(0.05)


async def _deliver(url: str, wid: str, source: str, forwarded_for: str) -> int:
    body = event_body(interaction=f"int-{wid}", key=f"job-{wid}")
    connector = aiohttp.TCPConnector(force_close=True, local_addr=(source, 0))
    headers = {**hmac_headers(body, wid), "X-Forwarded-For": forwarded_for}
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.post(url, data=body, headers=headers) as resp,
    ):
        return resp.status


async def test_run_inbox_lets_a_trusted_proxy_hold_many_clients_connections(
    tmp_path: Path,
) -> None:
    port = free_port()
    log = tmp_path / "run.log"
    args = ["run", "--db", str(tmp_path / "ledger.db"), "--out", str(tmp_path / "out")]
    args += ["--log", str(log), "--base-url", "http://127.0.0.1:9", "--api-key", "k"]
    args += ["--idle-sleep", "30", "--inbox-listen", f"127.0.0.1:{port}"]
    args += ["--inbox-secret", SECRET, "--inbox-jwks-url", "", "--trusted-proxy", PROXY]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reclaim_tui", *args, env=clean_env()
    )
    held: list[asyncio.StreamWriter] = []
    try:
        url = str((await _ready(proc, log))["inbox"])

        async def hold(source: str) -> asyncio.StreamReader:
            reader, writer = await asyncio.open_connection(PROXY, port, local_addr=(source, 0))
            held.append(writer)
            return reader

        # The proxy holds more connections than one client may (many clients' deliveries).
        for _ in range(PER_CLIENT + 1):
            await hold(PROXY)
        # A stranger past its share is closed, whatever it would say.
        strangers = [await hold(STRANGER) for _ in range(PER_CLIENT + 1)]
        assert await asyncio.wait_for(strangers[-1].read(), 60) == b""
        # A genuine delivery through the busy proxy is kept.
        assert await _deliver(url, "msg_via_proxy", PROXY, "203.0.113.7") == 200
    finally:
        for writer in held:
            writer.close()
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 60)
    assert code == 0


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--inbox-listen", "127.0.0.1:0", "--trusted-proxy", "proxy.example"],
         "expected an IP address or a network"),
        (["--inbox-listen", "127.0.0.1:0", "--forwarded-header", "X-Real-IP"],
         "X-Real-IP"),
        (["--trusted-proxy", "127.0.0.1"], "needs --inbox-listen"),
    ],
)  # fmt: skip
def test_run_checks_its_proxy_flags(tmp_path: Path, flags: list[str], said: str) -> None:
    db = str(tmp_path / "ledger.db")
    out = CliRunner().invoke(cli, ["run", "--db", db, "--api-key", "k", *flags])
    assert out.exit_code == 2, out.output
    assert said in out.output
    assert not Path(db).exists()  # refused before anything was opened
