"""The directory sink makes a whole batch durable at once (issue 14).

Counted, never timed: a batch of N deliveries used to cost 3N fsyncs (two
files and the directory per job); now it is staged whole, flushed once
(syncfs), renamed, and the directory synced once — in that order, and all
of it before the engine commits `consumed`.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reclaim_tui.core import sinks
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend, fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, Status, StoredResult
from reclaim_tui.core.sink_temp import TempFolder
from reclaim_tui.core.sinks import TEMP_DIR, BatchSink, DirectorySink

JOBS = 20


class Syscalls:
    """Records the flushes and renames the sink makes, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, syncfs_result: int | None) -> None:
        self.log: list[tuple[str, str]] = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd: int) -> None:
            self.log.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
            real_fsync(fd)

        def replace(src: str | Path, dst: str | Path, **dir_fds: int) -> None:
            self.log.append(("rename", str(dst)))
            real_replace(src, dst, **dir_fds)

        monkeypatch.setattr(sinks.os, "fsync", fsync)
        monkeypatch.setattr(sinks.os, "replace", replace)
        syncfs: Callable[[int], int] | None = None
        if syncfs_result is not None:

            def syncfs(fd: int) -> int:
                self.log.append(("syncfs", os.readlink(f"/proc/self/fd/{fd}")))
                if syncfs_result != 0:
                    import ctypes

                    ctypes.set_errno(errno.EIO)
                return syncfs_result

        monkeypatch.setattr(sinks, "_libc_syncfs", lambda: syncfs)
        # A kernel whose syncfs reports writeback errors (tests/unit/test_sink_kernels.py).
        monkeypatch.setattr(sinks, "kernel_release", lambda: "6.1.0")

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.log if k == kind)


@pytest.fixture
def engine(ledger: Ledger, fake: FakeBackend, out_dir: Path) -> Engine:
    """A claim takes what the process can have in flight (issue 23.6): with a
    concurrency of JOBS, one claim is the whole pass, one sink batch."""
    config = EngineConfig(concurrency=JOBS)
    return Engine(ledger, fake, DirectorySink(out_dir), config=config, owner="test|1|a")


@pytest.fixture
def done_rows(engine: Engine, fake: FakeBackend, clock: ManualClock) -> Iterator[list[str]]:
    specs = [JobSpec(input=f"job {n}", model="m") for n in range(JOBS)]
    yield [idempotency_key(s) for s in specs]


async def _finish_all(
    engine: Engine, fake: FakeBackend, clock: ManualClock, idems: list[str]
) -> None:
    specs = [JobSpec(input=f"job {n}", model="m") for n in range(JOBS)]
    await engine.submit(specs)
    for idem in idems:
        row = await engine.ledger.get(idem)
        assert row is not None and row.handle is not None
        fake.finish(row.handle)
    clock.advance(2)


async def test_a_batch_costs_two_flushes_not_three_per_job(
    engine: Engine,
    fake: FakeBackend,
    clock: ManualClock,
    out_dir: Path,
    done_rows: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await _finish_all(engine, fake, clock, done_rows)
    calls = Syscalls(monkeypatch, syncfs_result=0)
    report = await engine.reclaim()
    assert report.counts["consumed"] == JOBS
    # One syncfs for the staged data, one directory fsync for the renames.
    assert calls.count("syncfs") == 1 and calls.count("fsync") == 1, calls.log
    assert calls.count("rename") == 2 * JOBS
    kinds = [k for k, _ in calls.log]
    assert kinds[0] == "syncfs" and kinds[-1] == "fsync", "data before renames before dir sync"
    assert calls.log[-1][1] == str(out_dir.resolve())
    for idem in done_rows:
        assert (out_dir / f"{idem}.md").read_text().startswith(fake_output_text("job")[:3])
        assert json.loads((out_dir / f"{idem}.json").read_text())["id"]
    assert not list((out_dir / TEMP_DIR).iterdir())


async def test_without_syncfs_every_file_is_fsynced_before_its_rename(
    engine: Engine,
    fake: FakeBackend,
    clock: ManualClock,
    out_dir: Path,
    done_rows: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await _finish_all(engine, fake, clock, done_rows)
    calls = Syscalls(monkeypatch, syncfs_result=None)
    report = await engine.reclaim()
    assert report.counts["consumed"] == JOBS
    kinds = [k for k, _ in calls.log]
    first_rename = kinds.index("rename")
    assert kinds[:first_rename] == ["fsync"] * (2 * JOBS)
    assert kinds[-1] == "fsync" and calls.count("fsync") == 2 * JOBS + 1


async def test_a_failed_flush_leaves_the_whole_batch_done_and_no_temp_files(
    engine: Engine,
    fake: FakeBackend,
    clock: ManualClock,
    out_dir: Path,
    done_rows: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await _finish_all(engine, fake, clock, done_rows)
    calls = Syscalls(monkeypatch, syncfs_result=-1)
    report = await engine.reclaim()
    assert report.counts["completed"] == JOBS and report.counts["sink_errors"] == JOBS
    assert report.counts["consumed"] == 0
    assert calls.count("rename") == 0, "nothing is shown under its name before it is durable"
    for idem in done_rows:
        row = await engine.ledger.get(idem)
        assert row is not None and row.status == Status.DONE
        assert row.last_error is not None and "Input/output error" in row.last_error
    assert not list((out_dir / TEMP_DIR).iterdir())
    assert not list(out_dir.glob("*.md"))

    # The disk recovers: a replay delivers every row once.
    monkeypatch.setattr(sinks, "_libc_syncfs", lambda: None)
    clock.advance(3600)
    replayed = await engine.replay(force=True)
    assert replayed.counts["consumed"] == JOBS
    assert len(list(out_dir.glob("*.md"))) == JOBS


async def test_one_bad_delivery_does_not_fail_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = DirectorySink(tmp_path)
    assert isinstance(sink, BatchSink)
    items = [
        (f"k{n}", StoredResult(f"k{n}", f"emu-{n}", f"text {n}", None, '{"id": "x"}', 0.0))
        for n in range(3)
    ]
    real = TempFolder.write

    def failing(folder: TempFolder, path: Path, data: bytes) -> str:
        if path.name == "k1.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(folder, path, data)

    monkeypatch.setattr(TempFolder, "write", failing)
    outcomes = await sink.deliver_many(items)
    assert outcomes[0] is None and outcomes[2] is None
    assert outcomes[1] is not None and "No space left" in str(outcomes[1])
    assert (tmp_path / "k0.md").read_text() == "text 0"
    assert not (tmp_path / "k1.md").exists(), "a delivery is all its files or none"
    assert not list((tmp_path / TEMP_DIR).iterdir())


async def test_the_directory_is_resolved_once_per_sink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = DirectorySink(tmp_path)
    calls = 0
    real = Path.resolve

    def resolve(self: Path, strict: bool = False) -> Path:
        nonlocal calls
        calls += 1
        return real(self, strict)

    monkeypatch.setattr(Path, "resolve", resolve)
    items = [(f"k{n}", StoredResult(f"k{n}", "e", "t", None, "{}", 0.0)) for n in range(10)]
    assert await sink.deliver_many(items) == [None] * 10
    assert await sink.deliver_many(items) == [None] * 10
    assert calls == 1


async def test_a_key_whose_target_cannot_be_replaced_fails_alone(tmp_path: Path) -> None:
    sink = DirectorySink(tmp_path)
    items = [
        (f"k{n}", StoredResult(f"k{n}", f"emu-{n}", f"text {n}", None, '{"id": "x"}', 0.0))
        for n in range(3)
    ]
    (tmp_path / "k0.md").mkdir()  # something in the way of the first key's file
    outcomes = await sink.deliver_many(items)
    assert outcomes[0] is not None and "k0" in str(outcomes[0])
    assert outcomes[1] is None and outcomes[2] is None, outcomes
    assert (tmp_path / "k1.md").read_text() == "text 1"
    assert (tmp_path / "k2.json").exists()
    assert not list((tmp_path / TEMP_DIR).iterdir())


async def test_a_batch_draws_one_temp_tag_and_makes_no_file_object_per_file(
    engine: Engine,
    fake: FakeBackend,
    clock: ManualClock,
    out_dir: Path,
    done_rows: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted: each temp file used to cost a pid and a random read of its
    own and a file object (whose open asks the file's size, whether it is
    a terminal and its position); a batch now draws one random tag and
    counts on from it, and writes each file straight to its descriptor."""
    await _finish_all(engine, fake, clock, done_rows)
    calls: list[str] = []
    real_urandom, real_getpid, real_fdopen = os.urandom, os.getpid, os.fdopen
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        calls.append("write")
        return real_write(fd, data)

    def urandom(n: int) -> bytes:
        calls.append("urandom")
        return real_urandom(n)

    def getpid() -> int:
        # The tests' database pool names the databases it makes ahead with
        # the pid, on a thread of its own: not the sink's call.
        if threading.current_thread().name != "pg-database-pool":
            calls.append("getpid")
        return real_getpid()

    def fdopen(*args: object, **kw: object) -> object:
        calls.append("fdopen")
        return real_fdopen(*args, **kw)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "urandom", urandom)
    monkeypatch.setattr(os, "getpid", getpid)
    monkeypatch.setattr(os, "fdopen", fdopen)
    monkeypatch.setattr(os, "write", write)
    report = await engine.reclaim()
    monkeypatch.undo()
    assert report.counts["consumed"] == JOBS
    assert calls.count("urandom") == 1, calls
    assert calls.count("getpid") == 1, calls
    assert "fdopen" not in calls
    assert calls.count("write") == 2 * JOBS  # one a file: the .json's newline goes with it
    for idem in done_rows:
        assert (out_dir / f"{idem}.md").read_text().startswith(fake_output_text("job")[:3])
        assert json.loads((out_dir / f"{idem}.json").read_text())["id"]
    assert not list((out_dir / TEMP_DIR).iterdir())


def test_a_short_write_is_finished_and_the_tags_count_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that takes part of its bytes is carried on; the second file of
    a batch takes the next tag (no second random read)."""
    real_write = os.write

    def short_write(fd: int, data: bytes | memoryview) -> int:
        return real_write(fd, bytes(data[:3]))

    folder = TempFolder.open(tmp_path / TEMP_DIR)
    assert folder is not None
    with folder:
        monkeypatch.setattr(os, "urandom", lambda n: b"\xff\xff\xff\xfe")
        monkeypatch.setattr(os, "write", short_write)
        first = folder.write(tmp_path / "k.md", ["héllo ", b"world"])
        second = folder.write(tmp_path / "k.json", [b"{}"])
        monkeypatch.undo()
        assert (tmp_path / TEMP_DIR / first).read_text() == "héllo world"
        assert (tmp_path / TEMP_DIR / second).read_text() == "{}"
    assert first == f"k.md.{os.getpid()}-fffffffe.reclaim.tmp"
    assert second == f"k.json.{os.getpid()}-ffffffff.reclaim.tmp"
