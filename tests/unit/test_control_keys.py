"""Issue 40 item 14: the control socket accepted a job key `../../etc/evil`.

No traversal happened (a key is only looked up in the ledger), but a line
from a socket is input from outside: a key that is no job key is refused
with a clear reply, and the session goes on."""

from __future__ import annotations

import asyncio
import io
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.runner.control_server import ControlServer
from reclaim_tui.runner.service import ServiceLoop


@pytest.fixture
async def socket_path(tmp_path: Path) -> AsyncIterator[Path]:
    path = Path(f"/tmp/rt-keys-{os.getpid()}-{id(tmp_path)}.sock")
    ledger = await open_ledger(str(tmp_path / "ledger.db"))
    engine = Engine(ledger, FakeBackend(), DirectorySink(tmp_path / "out"), config=EngineConfig())
    loop = ServiceLoop(engine, out=io.StringIO(), min_sleep=0.01, max_sleep=0.05)
    server = ControlServer(path, engine, loop, Settings(db=str(tmp_path / "ledger.db")))
    await server.start()
    task = asyncio.create_task(loop.run())
    try:
        yield path
    finally:
        loop.stopping = True
        loop.wake.set()
        await asyncio.wait_for(task, 60)
        await server.stop()
        await ledger.close()


async def _ask(path: Path, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    """Lines to the control socket as any client may write them; the replies."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    replies = []
    try:
        json.loads(await reader.readline())  # Started
        for n, message in enumerate(messages, start=1):
            writer.write(json.dumps({"id": n, **message}).encode() + b"\n")
            await writer.drain()
            replies.append(dict(json.loads(await asyncio.wait_for(reader.readline(), 30))))
    finally:
        writer.close()
    return replies


@pytest.mark.parametrize(
    "message",
    [
        {"type": "Retry", "idems": ["../../etc/evil"]},
        {"type": "Cancel", "idems": ["ok-key", "/etc/passwd"]},
        {"type": "PollNow", "idems": ["UPPER"]},
        {"type": "Discard", "idems": ["a/b"], "archive": "/tmp/x.jsonl"},
        {"type": "Replay", "idems": ["..", "k"]},
    ],
)
async def test_a_key_that_is_no_job_key_is_refused(
    socket_path: Path, message: dict[str, Any]
) -> None:
    refused, after = await _ask(socket_path, message, {"type": "Retry", "idems": ["valid-key"]})
    assert refused["type"] == "Failed", refused
    assert "not a job key" in json.dumps(refused), refused
    bad = next(k for k in message["idems"] if k not in ("ok-key", "k"))
    assert refused["kind"] == "OperatorError" and repr(bad) in refused["error"], refused
    assert after["type"] == "RowsOutcome", after  # the session goes on
