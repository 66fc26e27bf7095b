"""Issue 22 point 8: chains that can never run are refused (exit 3, naming
the lines), on every path into the ledger: a jobs file (`tick --jobs`,
`submit`, `run --jobs`), a chain closed through a job already in the ledger,
and the console's submit dialog.

A job that names itself as its `previous`, or two jobs naming each other,
would wait for each other forever (and the tick exit 0). A job whose
`previous` names no job (a typo) would fail at once and take its key:
refused too, nothing reserved."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger as LedgerPort
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.tui import operations
from reclaim_tui.tui.messages import SubmitFailed, SubmitFinished
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
    asyncio.run(_reserve_raw(Path(ws.db), JobSpec("a", "m", key="first", previous="second")))
    second = write_jobs(ws.root / "b.jsonl", [{"key": "second", "input": "b", "previous": "first"}])
    _refused(ws.cli("submit", str(second)), "second", "first")
    _refused(ws.tick(jobs=second), "second", "first")
    assert set(ws.view().rows()) == {"first"}


def test_the_console_submit_refuses_a_cycle(tmp_path: Path) -> None:
    async def go() -> tuple[object, object, int]:
        async with _console(tmp_path) as (ledger, engine):
            in_file = write_jobs(
                tmp_path / "cycle.jsonl",
                [
                    {"key": "x", "input": "x", "previous": "y"},
                    {"key": "y", "input": "y", "previous": "x"},
                ],
            )
            from_file = await submit_jobs(engine, SubmitRequest(path=str(in_file)), "m", print)
            await _insert(ledger, JobSpec("a", "m", key="a", previous="b"))
            closing = write_jobs(
                tmp_path / "b.jsonl", [{"key": "b", "input": "b", "previous": "a"}]
            )
            through_ledger = await submit_jobs(engine, SubmitRequest(path=str(closing)), "m", print)
            rows = await ledger.select("SELECT COUNT(*) FROM jobs")
            return from_file, through_ledger, int(rows[0][0])

    from_file, through_ledger, rows = asyncio.run(go())
    assert isinstance(from_file, SubmitFailed) and "never" in from_file.error
    assert "line 1" in from_file.error and "line 2" in from_file.error
    assert isinstance(through_ledger, SubmitFailed) and "never" in through_ledger.error
    assert rows == 1  # only "a", reserved before "b" was refused


@contextlib.asynccontextmanager
async def _console(tmp_path: Path) -> AsyncIterator[tuple[LedgerPort, Engine]]:
    """A ledger and an engine over the fake API, as the console's submit uses them."""
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    try:
        yield ledger, Engine(ledger, FakeBackend(clock=clock), DirectorySink(tmp_path / "out"))
    finally:
        await ledger.close()


async def _insert(ledger: LedgerPort, job: JobSpec) -> None:
    """`job` reserved as it is, unchecked: a row whose `previous` is not in
    the ledger, as an earlier version reserved it (or a prune left it)."""
    await ledger.insert_jobs([(idempotency_key(job), job.to_json(), job.target)], "test")


async def _reserve_raw(db: Path, job: JobSpec) -> None:
    ledger = await open_ledger(db, clock=ManualClock())
    try:
        await _insert(ledger, job)
    finally:
        await ledger.close()


def test_a_previous_naming_no_job_is_refused_and_takes_no_key(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "typo", emulator=emulator)
    typo = [
        {"input": "first", "key": "step-1"},
        {"input": "second", "key": "step-2", "previous": "step1"},
    ]
    jobs = write_jobs(ws.root / "j.jsonl", typo)
    for done in (ws.cli("submit", str(jobs)), ws.tick(jobs=jobs)):
        assert done.returncode == 3, done.stdout + done.stderr
        assert "'step-2'" in done.stderr and "'step1'" in done.stderr, done.stderr
        assert "nothing was reserved" in done.stderr
    assert ws.view().rows() == {}  # neither key taken
    typo[1]["previous"] = "step-1"
    done = ws.cli("submit", "--no-send", str(write_jobs(jobs, typo)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(ws.view().rows()) == {"step-1", "step-2"}
    # A `previous` already in the ledger is a job too.
    later = write_jobs(ws.root / "k.jsonl", [{"input": "third", "previous": "step-2"}])
    done = ws.cli("submit", "--no-send", str(later))
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(ws.view().rows()) == 3


def test_the_console_submits_a_file_whose_previous_comes_later_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The dialog reserves a file a chunk at a time, and a chunk's `previous`
    # must be a job of it or of the ledger: a job comes after its previous.
    monkeypatch.setattr(operations, "SUBMIT_CHUNK", 1)

    async def go() -> tuple[object, object, list[str]]:
        async with _console(tmp_path) as (ledger, engine):
            typo = write_jobs(tmp_path / "t.jsonl", [{"key": "b", "input": "b", "previous": "c"}])
            refused = await submit_jobs(engine, SubmitRequest(path=str(typo)), "m", print)
            later = write_jobs(
                tmp_path / "later.jsonl",
                [
                    {"key": "z", "input": "z", "previous": "y"},
                    {"key": "y", "input": "y", "previous": "x"},
                    {"key": "x", "input": "x"},
                ],
            )
            done = await submit_jobs(engine, SubmitRequest(path=str(later)), "m", print)
            rows = await ledger.select("SELECT idem FROM jobs ORDER BY idem")
            return refused, done, [str(r[0]) for r in rows]

    refused, done, rows = asyncio.run(go())
    assert isinstance(refused, SubmitFailed) and "'c'" in refused.error
    assert isinstance(done, SubmitFinished), done
    assert rows == ["x", "y", "z"]


def test_the_console_refuses_a_dangling_previous_before_its_first_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine checks each chunk alone: a typo in a later chunk was refused
    # after the chunks before it were reserved ("nothing was reserved" said
    # over two reserved rows). With the ledger to ask, the console refuses
    # the whole file first.
    monkeypatch.setattr(operations, "SUBMIT_CHUNK", 2)

    async def go() -> tuple[object, list[str]]:
        async with _console(tmp_path) as (ledger, engine):
            jobs = write_jobs(
                tmp_path / "j.jsonl",
                [
                    {"key": "a", "input": "a"},
                    {"key": "b", "input": "b"},
                    {"key": "c", "input": "c", "previous": "typo"},
                ],
            )
            refused = await submit_jobs(
                engine, SubmitRequest(path=str(jobs)), "m", print, ledger.get_many
            )
            rows = await ledger.select("SELECT idem FROM jobs ORDER BY idem")
            return refused, [str(r[0]) for r in rows]

    refused, rows = asyncio.run(go())
    assert isinstance(refused, SubmitFailed), refused
    assert "job 3 of 3 ('c')" in refused.error and "'typo'" in refused.error
    assert rows == []  # nothing reserved, as it says
