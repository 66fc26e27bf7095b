"""The directory sink's flush on each kernel: syncfs(2) only where it reports
writeback errors (Linux 5.8 on), an fsync of every file elsewhere.

Before 5.8 syncfs returned 0 whatever became of the data (RHEL 8's 4.18, Debian
10's 4.19, Ubuntu 20.04's 5.4): taken as success, rows were marked consumed whose
files might not be on disk. The kernel's release is injected (`sinks.kernel_release`),
the system calls recorded (tests/unit/test_batch_sink.py's Syscalls), never timed.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from reclaim_tui.core import sinks
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from tests.unit.test_batch_sink import Syscalls

JOBS = 5

OLD_KERNELS = ["4.18.0-553.el8_10.x86_64", "4.19.0-27-amd64", "5.4.0-26-generic", "5.7.19", ""]
NEW_KERNELS = ["5.8.0", "5.15.0-91-generic", "6.1.0-13-amd64", "10.0.0"]


async def _done_batch(
    ledger: Ledger, fake: FakeBackend, clock: ManualClock, out_dir: Path
) -> tuple[Engine, list[str]]:
    engine = Engine(
        ledger, fake, DirectorySink(out_dir), config=EngineConfig(concurrency=JOBS), owner="t|1|a"
    )
    specs = [JobSpec(input=f"kernel job {n}", model="m") for n in range(JOBS)]
    await engine.submit(specs)
    idems = [idempotency_key(s) for s in specs]
    for idem in idems:
        row = await ledger.get(idem)
        assert row is not None and row.handle is not None
        fake.finish(row.handle)
    clock.advance(2)
    return engine, idems


@pytest.mark.parametrize("release", NEW_KERNELS)
async def test_a_kernel_whose_syncfs_reports_errors_gets_one_syncfs(
    release: str,
    ledger: Ledger,
    fake: FakeBackend,
    clock: ManualClock,
    out_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine, _ = await _done_batch(ledger, fake, clock, out_dir)
    calls = Syscalls(monkeypatch, syncfs_result=0)
    monkeypatch.setattr(sinks, "kernel_release", lambda: release)
    report = await engine.reclaim()
    assert report.counts["consumed"] == JOBS
    assert calls.count("syncfs") == 1 and calls.count("fsync") == 1, calls.log


@pytest.mark.parametrize("release", OLD_KERNELS)
async def test_an_older_kernel_gets_an_fsync_of_each_file_and_the_directory(
    release: str,
    ledger: Ledger,
    fake: FakeBackend,
    clock: ManualClock,
    out_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine, _ = await _done_batch(ledger, fake, clock, out_dir)
    calls = Syscalls(monkeypatch, syncfs_result=0)  # present, and would say 0
    monkeypatch.setattr(sinks, "kernel_release", lambda: release)
    report = await engine.reclaim()
    assert report.counts["consumed"] == JOBS
    assert calls.count("syncfs") == 0, calls.log
    kinds = [k for k, _ in calls.log]
    first_rename = kinds.index("rename")
    assert kinds[:first_rename] == ["fsync"] * (2 * JOBS), "each file before its rename"
    assert kinds[-1] == "fsync" and calls.log[-1][1] == str(out_dir.resolve())
    assert calls.count("fsync") == 2 * JOBS + 1


async def test_an_older_kernels_failed_fsync_leaves_the_batch_done(
    ledger: Ledger,
    fake: FakeBackend,
    clock: ManualClock,
    out_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine, idems = await _done_batch(ledger, fake, clock, out_dir)
    Syscalls(monkeypatch, syncfs_result=0)
    monkeypatch.setattr(sinks, "kernel_release", lambda: "4.18.0-553.el8_10.x86_64")

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(sinks.os, "fsync", failing_fsync)
    report = await engine.reclaim()
    assert report.counts["consumed"] == 0 and report.counts["sink_errors"] == JOBS
    for idem in idems:
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.DONE
        assert row.last_error is not None and "Input/output error" in row.last_error
    assert not list(out_dir.glob("*.md"))


def test_the_release_is_the_running_linux_kernels() -> None:
    uname = os.uname()
    expected = uname.release if uname.sysname == "Linux" else ""
    assert sinks.kernel_release() == expected
