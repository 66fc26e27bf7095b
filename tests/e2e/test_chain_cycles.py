"""Issue 22 point 8: chains that can never run are refused (exit 3, naming
the lines), on every path into the ledger: a jobs file (`tick --jobs`,
`submit`, `run --jobs`), a chain closed through a job already in the ledger,
and the console's submit dialog.

A job that names itself as its `previous`, or two jobs naming each other,
would wait for each other forever (and the tick exit 0)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.tui.messages import SubmitFailed
from reclaim_tui.tui.operations import submit_jobs
from reclaim_tui.tui.screens.submit import SubmitRequest
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs


def _refused(done, *names: str) -> None:  # type: ignore[no-untyped-def]
    assert done.returncode == 3, done.stdout + done.stderr
    for name in names:
        assert name in done.stderr, done.stderr
    assert "never" in done.stderr


def test_a_job_naming_itself_as_previous_is_refused(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "self", emulator=emulator)
    jobs = write_jobs(
        ws.root / "j.jsonl",
        [{"input": "fine"}, {"key": "loop", "input": "me again", "previous": "loop"}],
    )
    creates = emulator.stats()["calls"]["create"]
    _refused(ws.tick(jobs=jobs), "line 2", "loop")
    _refused(ws.cli("submit", str(jobs)), "line 2", "loop")
    assert ws.view().rows() == {}  # nothing reserved
    assert emulator.stats()["calls"]["create"] == creates


def test_a_two_job_cycle_is_refused_naming_both_lines(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "two", emulator=emulator)
    jobs = write_jobs(
        ws.root / "j.jsonl",
        [
            {"key": "ping", "input": "a", "previous": "pong"},
            "# a comment",
            {"key": "pong", "input": "b", "previous": "ping"},
        ],
    )
    _refused(ws.tick(jobs=jobs), "line 1", "line 3", "ping", "pong")
    assert ws.view().rows() == {}


def test_a_cycle_closed_through_the_ledger_is_refused(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "ledger", emulator=emulator)
    first = write_jobs(ws.root / "a.jsonl", [{"key": "first", "input": "a", "previous": "second"}])
    done = ws.cli("submit", str(first))  # accepted (it fails: no "second" yet)
    assert done.returncode == 0, done.stdout + done.stderr
    second = write_jobs(ws.root / "b.jsonl", [{"key": "second", "input": "b", "previous": "first"}])
    _refused(ws.cli("submit", str(second)), "second", "first")
    _refused(ws.tick(jobs=second), "second", "first")
    assert set(ws.view().rows()) == {"first"}


def test_the_console_submit_refuses_a_cycle(tmp_path: Path) -> None:
    async def go() -> tuple[object, object, int]:
        clock = ManualClock()
        ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
        try:
            engine = Engine(ledger, FakeBackend(clock=clock), DirectorySink(tmp_path / "out"))
            in_file = write_jobs(
                tmp_path / "cycle.jsonl",
                [
                    {"key": "x", "input": "x", "previous": "y"},
                    {"key": "y", "input": "y", "previous": "x"},
                ],
            )
            from_file = await submit_jobs(engine, SubmitRequest(path=str(in_file)), "m", print)
            await engine.submit(
                [
                    *(
                        await _jobs(
                            write_jobs(
                                tmp_path / "a.jsonl", [{"key": "a", "input": "a", "previous": "b"}]
                            )
                        )
                    )
                ],
                send=False,
            )
            closing = write_jobs(
                tmp_path / "b.jsonl", [{"key": "b", "input": "b", "previous": "a"}]
            )
            through_ledger = await submit_jobs(engine, SubmitRequest(path=str(closing)), "m", print)
            rows = await ledger.select("SELECT COUNT(*) FROM jobs")
            return from_file, through_ledger, int(rows[0][0])
        finally:
            await ledger.close()

    from_file, through_ledger, rows = asyncio.run(go())
    assert isinstance(from_file, SubmitFailed) and "never" in from_file.error
    assert "line 1" in from_file.error and "line 2" in from_file.error
    assert isinstance(through_ledger, SubmitFailed) and "never" in through_ledger.error
    assert rows == 1  # only "a", which waits for a "b" that may still come


async def _jobs(path: Path):  # type: ignore[no-untyped-def]
    from reclaim_tui.core.jobsfile import read_jobs_file

    return read_jobs_file(path, default_model="m")
