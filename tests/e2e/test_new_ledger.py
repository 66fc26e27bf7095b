"""A mistyped --db no longer starts a new ledger without a word (issue 32,
item 8): a new ledger is said on stderr, and refused beside another ledger
of the same folder without --create. Real CLI processes."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_cli
from tests.helpers.procs import write_jobs

DEAD_API = "http://127.0.0.1:9"


def test_a_first_ledger_is_said_and_a_typo_beside_it_is_refused(tmp_path: Path) -> None:
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "one", "key": "one"}])
    folder = tmp_path / "jobs"
    folder.mkdir()
    ledger, typo = folder / "reclaim_ledger.db", folder / "reclaim_ledgr.db"
    first = run_cli(["submit", str(jobs), "--no-send", "--db", str(ledger)])
    assert first.returncode == 0, first.stderr
    assert f"created a new ledger at {ledger}" in first.stderr
    again = run_cli(["submit", str(jobs), "--no-send", "--db", str(ledger)])
    assert again.returncode == 0 and "created a new ledger" not in again.stderr, again.stderr

    # The repro: a tick with a jobs file on a mistyped --db sent every job again.
    tick = run_cli(
        ["tick", "--db", str(typo), "--jobs", str(jobs), "--base-url", DEAD_API, "--api-key", "k"]
    )
    assert tick.returncode == 2, (tick.stdout, tick.stderr)
    assert str(ledger) in tick.stderr and "--create" in tick.stderr, tick.stderr
    assert "inserted" not in tick.stdout
    assert not typo.exists()
    # An operator's command never starts a ledger: the job it names is not there.
    retry = run_cli(["retry", "--db", str(typo), "one"])
    assert retry.returncode == 4 and "no ledger here" in retry.stderr, retry.stderr
    assert not typo.exists()

    asked = run_cli(["submit", str(jobs), "--no-send", "--create", "--db", str(typo)])
    assert asked.returncode == 0, asked.stderr
    assert f"created a new ledger at {typo}" in asked.stderr and typo.exists()
