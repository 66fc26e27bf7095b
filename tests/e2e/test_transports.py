"""Each HTTP transport (`--transport`) through a real tick against the emulator:
a create whose connection is lost after the emulator stored it is recorded as
"maybe created", and the next tick adopts it by its label: one POST, one
interaction, nothing paid twice. A transport that read that loss as "not sent"
would resubmit at once (a second POST, a duplicate)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import TRANSPORTS, JobSpec
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.errors import ConfigError
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs

MODEL = "gemini-flash-latest"


def posts(emu: EmulatorProcess) -> int:
    return int(emu.stats()["calls"]["create_posts_received"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_create_whose_connection_is_lost_is_adopted_not_sent_again(
    tmp_path: Path, transport: str
) -> None:
    with EmulatorProcess(tmp_path) as emu:
        emu.set_faults(drop_rate=1.0, drop_mode="disconnect")
        ws = Workspace(
            tmp_path / "ws", emulator=emu, lookup=True, extra_flags=("--transport", transport)
        )
        text = f"connection lost after accept ({transport})"
        key = idempotency_key(JobSpec(input=text, model=MODEL))
        proc = ws.tick(jobs=write_jobs(ws.root / "j.jsonl", [{"input": text}]))
        assert proc.returncode == 0, proc.stderr
        assert "MaybeCreatedError" in proc.stderr and "create sent" in proc.stderr, proc.stderr
        assert (posts(emu), emu.stats()["creates_total"]) == (1, 1)
        row = ws.view().rows()[key]
        assert (row["status"], row["attempts"]) == ("reserving", 1), row
        emu.set_faults()
        wait = ws.view().seconds_until_due()
        if wait is not None and wait > 0:
            time.sleep(wait + 0.05)  # the orphan's own backoff, read from the ledger
        proc = ws.tick()
        assert proc.returncode == 0 and "adopted=1" in proc.stdout, proc.stdout + proc.stderr
        ws.settle(confirm=False)
        assert ws.view().rows()[key]["status"] == "consumed"
        assert posts(emu) == 1 and emu.create_counts()[key] == 1
        assert ws.view().duplicate_notes(key) == 0


def test_an_unknown_transport_is_refused() -> None:
    with pytest.raises(ConfigError, match="transport must be one of httpx, aiohttp"):
        GeminiBackend("k", "http://127.0.0.1:9", transport="urllib")


def test_the_aiohttp_transport_without_its_package_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "httpx_aiohttp" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install 'reclaim-tui\[aiohttp\]'"):
        GeminiBackend("k", "http://127.0.0.1:9", transport="aiohttp")


async def test_the_aiohttp_client_the_backend_made_is_closed_with_it() -> None:
    async with EmulatorServer(EmulatorConfig(latency=0.0)) as emu:
        backend = GeminiBackend(emu.api_key, emu.base_url, transport="aiohttp")
        await backend.create(JobSpec(input="x", model=MODEL), "b" * 32)
        client = backend._http_client
        assert type(client).__name__ == "Httpx2AiohttpClient"
        assert not client.is_closed
        await backend.aclose()
        assert client.is_closed


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_one_backend_serves_one_event_loop_after_another(tmp_path: Path, transport: str) -> None:
    """A library caller's two `asyncio.run`s with one backend: each create is
    sent once and answered (an aiohttp session opened in the first loop
    would fail the second's request half sent)."""
    import asyncio

    with EmulatorProcess(tmp_path) as emu:
        backend = GeminiBackend(emu.api_key, emu.base_url, transport=transport)
        made = []
        for i in range(2):
            made.append(asyncio.run(backend.create(JobSpec(input="x", model=MODEL), f"{i:032x}")))
        asyncio.run(backend.aclose())
        assert len({m.id for m in made}) == 2
        assert posts(emu) == 2 and emu.stats()["creates_total"] == 2
