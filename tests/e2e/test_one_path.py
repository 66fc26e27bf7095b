"""The CLI's `submit`, `tick` and `run` are clients of the Python API (one
path, not two): the same bad batch is refused in the same words by both, each
path's writes name its own actor, and `Ledger.serve` runs the service `run`
runs (its `ready` line, its registry row, its metrics listener)."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
import urllib.request
from pathlib import Path

import pytest

import reclaim_tui
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.fakes import FakeBackend
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.ports import free_port
from tests.helpers.procs import write_jobs

#: A batch with a bad job alone (4) and two bad only together (3 reuses 2's key).
BAD_BATCH = [
    {"input": "fine"},
    {"input": "first", "key": "shared"},
    {"input": "second", "key": "shared"},
    {"input": ""},
]


def test_the_api_and_the_cli_refuse_a_bad_batch_in_the_same_words(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, emulator=None, use_recording_sink=False)
    jobs = write_jobs(tmp_path / "jobs.jsonl", BAD_BATCH)
    done = ws.cli("submit", "--no-send", str(jobs))
    assert done.returncode == 3, done.stderr
    cli_lines = [line for line in done.stderr.splitlines() if line.startswith("  line ")]

    with reclaim_tui.connect_sync(tmp_path / "api.db") as ledger:
        with pytest.raises(reclaim_tui.JobsFileError) as refused:
            ledger.submit(BAD_BATCH)
    api_lines = [f"  line {n}: {why}" for n, why in refused.value.problems]
    # Every bad job named by its number, each in the words the jobs file gets.
    assert api_lines == cli_lines
    assert [n for n, _ in refused.value.problems] == [3, 4]
    assert "nothing was reserved" in str(refused.value)


def _actors(db: Path) -> dict[str, set[str]]:
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT idem, actor FROM events").fetchall()
    out: dict[str, set[str]] = {}
    for idem, actor in rows:
        out.setdefault(idem, set()).add(actor)
    return out


def test_each_path_records_its_own_actor(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path) as emu:
        ws = Workspace(tmp_path / "ws", emulator=emu, use_recording_sink=False)
        by_cli = write_jobs(ws.root / "cli.jsonl", [{"input": "from the cli"}])
        assert ws.cli("submit", "--no-send", str(by_cli)).returncode == 0
        with reclaim_tui.connect_sync(
            ws.db, base_url=emu.base_url, api_key=emu.api_key, out=str(ws.out)
        ) as ledger:
            (api_key,) = ledger.submit({"input": "from python"})
        ticked = ws.tick()
        assert ticked.returncode == 0, ticked.stderr
    actors = _actors(Path(ws.db))
    (cli_key,) = set(actors) - {api_key}
    # Reserved by its submitter; sent by the tick, which names itself.
    assert actors[cli_key] == {"cli", "tick"}
    assert actors[api_key] == {"api", "tick"}


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.status, answer.read().decode()


async def test_serve_runs_the_service_that_run_runs(tmp_path: Path) -> None:
    clock = ManualClock()
    fake = FakeBackend(clock=clock, latency=0.0)
    lines = io.StringIO()
    port = free_port()
    async with reclaim_tui.connect(
        tmp_path / "ledger.db", backend=fake, clock=clock, out=str(tmp_path / "out")
    ) as ledger:
        (key,) = await ledger.submit({"input": "served"})
        service = asyncio.create_task(
            ledger.serve(interval=0.01, log_to=lines, metrics_listen=f"127.0.0.1:{port}")
        )
        for _ in range(500):
            job = await ledger.get(key, timeline=False)
            if job is not None and job.status == reclaim_tui.Status.CONSUMED:
                break
            clock.advance(60)
            await asyncio.sleep(0.01)
        # The row is consumed inside a pass; the pass is counted when it
        # ends: wait for the count, not for a moment after the row.
        for _ in range(500):
            status, body = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/healthz")
            if json.loads(body).get("passes", 0) >= 1:
                break
            await asyncio.sleep(0.01)
        registered = await ledger.store.select("SELECT kind, state FROM processes")
        service.cancel()
        with pytest.raises(asyncio.CancelledError):
            await service
    said = [json.loads(line) for line in lines.getvalue().splitlines()]
    ready = said[0]
    # `run`'s ready line, field for field (runner/service.py's run_service).
    assert ready["event"] == "ready"
    assert set(ready) == {
        "at",
        "event",
        "pid",
        "db",
        "inbox",
        "webhooks",
        "control",
        "metrics",
        "sdk",
        "loop",
    }
    assert ready["loop"] == "asyncio"  # serve() runs on the caller's loop
    assert ready["metrics"] == f"http://127.0.0.1:{port}"
    assert status == 200 and json.loads(body)["state"] == "passing"
    assert json.loads(body)["passes"] >= 1
    assert [tuple(row) for row in registered] == [("service", "up")]
    assert said[-1]["event"] == "stopped"


def test_reserve_answers_what_submit_did_as_the_cli_prints_it(tmp_path: Path) -> None:
    with reclaim_tui.connect_sync(tmp_path / "ledger.db") as ledger:
        first = ledger.reserve([{"input": "once"}, {"input": "twice"}])
        again = ledger.reserve({"input": "twice"})
    assert (first.counts["inserted"], first.counts["already_present"]) == (2, 0)
    assert (again.counts["inserted"], again.counts["already_present"]) == (0, 1)
    assert first.counts["sent"] == 0  # reserved only: send=False needs no API key
