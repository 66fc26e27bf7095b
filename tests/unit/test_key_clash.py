"""A job's own key already in the ledger for another spec (issue 22, point 5),
on both ledger engines: refused naming both, nothing reserved."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import JobsFileError


async def test_a_keyed_job_with_another_spec_is_refused_and_nothing_reserved(
    db_url: str, tmp_path: Path
) -> None:
    ledger = await open_ledger(db_url)
    try:
        engine = Engine(ledger, FakeBackend(), DirectorySink(tmp_path / "out"))
        await engine.submit([JobSpec(input="old text", model="m", key="weekly")], send=False)
        same = await engine.submit([JobSpec(input="old text", model="m", key="weekly")], send=False)
        assert same.counts["already_present"] == 1
        other = JobSpec(input="new text", model="m", key="weekly")
        fresh = JobSpec(input="unrelated", model="m", key="daily")
        with pytest.raises(JobsFileError, match="'weekly'") as err:
            await engine.submit([fresh, other], send=False)
        assert "'old text'" in str(err.value) and "'new text'" in str(err.value)
        assert await ledger.get("daily") is None, "nothing reserved"
        row = await ledger.get("weekly")
        assert row is not None and row.job.input == "old text"
    finally:
        await ledger.close()
