"""`--json` on every command and `reclaim-tui prune`, through the real CLI
(`python -m reclaim_tui` in a fresh process, a clean environment): one JSON
document on stdout, times as ISO-8601 UTC, errors on stderr with their exit
codes; exports with the result's text and usage and the spec as an object;
prune's counts, refusals, archive, and a kill between archive and delete."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.cli import prune as prune_module
from reclaim_tui.cli.prune import parse_age
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.schema import EVENT_SQL
from reclaim_tui.core.models import JobSpec, Status
from tests.helpers import EmulatorProcess, Workspace, clean_env, run_cli
from tests.helpers.ledgerdb import LedgerView
from tests.helpers.procs import write_jobs

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
DAY = 86_400.0


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr


def document(proc: subprocess.CompletedProcess[str]) -> Any:
    """The one JSON document a --json command printed."""
    ok(proc)
    return json.loads(proc.stdout)


def when(value: str) -> datetime:
    """An ISO-8601 UTC time as the CLI writes it."""
    assert ISO.fullmatch(value), value
    parsed = datetime.fromisoformat(value)
    assert parsed.utcoffset() == timedelta(0)
    return parsed


def refused(proc: subprocess.CompletedProcess[str], code: int, says: str) -> None:
    """An error: its exit code, a message on stderr, nothing on stdout."""
    assert proc.returncode == code, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert says in proc.stderr, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


# -- --json ---------------------------------------------------------------------------------------
def test_pass_and_read_commands_print_one_json_document_with_iso_times(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    ws = make_workspace(use_recording_sink=False)
    texts = ["json one", "json two"]
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": t, "key": f"k{n}"} for n, t in
                                               enumerate(texts)])  # fmt: skip
    began = datetime.now(UTC)
    tick = document(ws.tick("--json", jobs=jobs))
    assert tick["counts"]["inserted"] == 2 and tick["errors"] == []
    assert tick["unavailable"] is None and "inserted=2" in tick["summary"]
    assert began.replace(microsecond=0) <= when(tick["started_at"]) <= when(tick["finished_at"])
    for run in ws.settle():
        ok(run)

    status = document(ws.cli("status", "--json", engine=False))
    assert status["consumed"]["count"] == 2 and status["consumed"]["oldest_age_s"] >= 0
    assert when(status["consumed"]["oldest_since"]) >= began.replace(microsecond=0)
    assert status["reserving"] == {"count": 0, "oldest_age_s": None, "oldest_since": None}

    show = document(ws.cli("show", "k0", "--json", engine=False))
    assert show["idem"] == "k0" and show["status"] == "consumed"
    assert show["spec"] == {"input": "json one", "model": "gemini-flash-latest"}
    assert show["output_text"] == fake_output_text("json one")
    assert isinstance(show["usage"], dict) and show["interaction"]["id"] == show["handle"]
    for name in ("created_at", "state_since", "submitted_at", "done_at", "consumed_at"):
        when(show[name])
    assert [e["to_status"] for e in show["events"]][-1] == "consumed"
    assert all(when(e["at"]) for e in show["events"])

    replay = document(ws.cli("replay", "--json"))
    assert replay["summary"] == "idle" and replay["counts"] == {}
    recover = document(ws.cli("recover", "--json"))
    assert recover["summary"] == "idle" and recover["marked_for_resend"] == 0

    target = ws.root / "all.jsonl"
    report = document(ws.cli("export", "-o", str(target), "--json", engine=False))
    assert report == {"rows": 2, "format": "jsonl", "status": None, "output": str(target)}
    lines = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [line["idem"] for line in lines] == ["k0", "k1"]
    for line, text in zip(lines, texts, strict=True):
        assert line["spec"] == {"input": text, "model": "gemini-flash-latest"}
        assert line["output_text"] == fake_output_text(text)
        assert isinstance(line["usage"], dict) and line["usage"]
        for name in ("created_at", "updated_at", "consumed_at", "result_stored_at"):
            when(line[name])

    as_csv = ws.cli("export", "--format", "csv", engine=False)
    ok(as_csv)
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [r["idem"] for r in table] == ["k0", "k1"]
    assert json.loads(table[0]["spec"])["input"] == "json one"
    assert table[0]["output_text"] == fake_output_text("json one")
    assert json.loads(table[0]["usage"]) == lines[0]["usage"]
    when(table[0]["created_at"])

    refused(ws.cli("export", "--json", engine=False), 2, "-o FILE")
    refused(ws.cli("show", "no-such-key", "--json", engine=False), 5, "no job with key")


def test_operator_commands_print_the_row_as_json_and_errors_keep_their_codes(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    ws = make_workspace(use_recording_sink=False)
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "held back", "key": "held"}])
    # Unreachable API: the report still comes as one document, the outage on stderr (exit 6).
    down = run_cli(
        ["tick", "--db", str(ws.db), "--base-url", DEAD_API, "--jobs", str(jobs), "--json"],
        env=ws.env(),
    )
    assert down.returncode == 6 and "API unreachable" in down.stderr, down.stderr
    assert json.loads(down.stdout)["unavailable"]["cause"] == "transport"

    more = write_jobs(ws.root / "submitted.jsonl", [{"input": "submitted", "key": "sub"}])
    down = run_cli(
        ["submit", "--db", str(ws.db), "--base-url", DEAD_API, str(more), "--json"], env=ws.env()
    )
    assert down.returncode == 6 and "API unreachable" in down.stderr, down.stderr
    assert json.loads(down.stdout)["counts"]["inserted"] == 1

    cancelled = document(ws.cli("cancel", "held", "--json"))
    assert cancelled["idem"] == "held" and cancelled["status"] == "cancelled"
    when(cancelled["state_since"])
    retried = document(run_cli(["retry", "--db", str(ws.db), "held", "--json"]))
    assert retried["status"] == "reserving" and retried["attempts"] == 0
    refused(run_cli(["retry", "--db", str(ws.db), "held", "--json"]), 5, "error:")
    ok(ws.tick())  # sends it

    # An orphan: the tick dies after its create was sent, before the answer. `sub`,
    # refused by the dead API above, is cancelled first: its backoff (wall clock)
    # may run out between the ticks on a loaded machine, and the crashing tick
    # would then send it first and die on *its* create (CI, stop 30).
    ok(ws.cli("cancel", "sub", "--json"))
    more = write_jobs(ws.root / "more.jsonl", [{"input": "orphaned", "key": "orphan"}])
    assert ws.tick(jobs=more, crash_at="after_create_before_handle").returncode == -9
    orphans = ws.root / "orphans.jsonl"
    listed = document(
        ws.cli("export", "--status", "orphans", "-o", str(orphans), "--json", engine=False)
    )
    assert listed["rows"] == 1 and listed["status"] == "orphans"
    assert [json.loads(line)["idem"] for line in orphans.read_text().splitlines()] == ["orphan"]
    (found,) = emulator.find("orphan")
    adopted = document(ws.cli("adopt", "orphan", found["id"], "--json"))
    assert adopted["status"] == "submitted" and adopted["handle"] == found["id"]

    refused(ws.cli("answer", "orphan", "yes, go on", "--json"), 5, "error:")  # asks nothing
    emulator.finish(found["id"], "requires_action", "Shall I go on?")
    ok(ws.tick())
    answered = document(ws.cli("answer", "orphan", "yes, go on", "--json"))
    assert answered["status"] == "submitted" and answered["handle"] != found["id"]
    when(answered["updated_at"])


# -- prune ----------------------------------------------------------------------------------------
def seed(db: str, rows: list[tuple[str, Status, float]]) -> None:
    """Rows (key, status, days in that status before now), each with an event
    and, when consumed, a stored result."""

    async def go() -> None:
        now = time.time()
        ledger = await open_ledger(db, clock=ManualClock(now))
        try:
            await ledger.insert_jobs(
                [(k, JobSpec(input=f"prompt {k}", model="m").to_json(), "m") for k, _, _ in rows],
                "test",
            )
            async with ledger.write() as con:
                for key, status, days in rows:
                    since = now - days * DAY
                    await con.execute(
                        Sql(
                            lambda d: (
                                f"UPDATE jobs SET status = {d.p}, state_since = {d.p}, updated_at"
                                f" = {d.p}, handle = {d.p}"
                                f" WHERE idem = {d.p}"
                            )
                        ),
                        (status.value, since, since, f"int-{key}", key),
                    )
                    await con.execute(
                        EVENT_SQL, (since, key, "test", "reserving", status, "x", key)
                    )
                    if status == Status.CONSUMED:
                        await con.execute(
                            Sql(
                                lambda d: (
                                    "INSERT INTO results(job, idem, interaction_id, output_text,"
                                    " usage,"
                                    f" raw_json, stored_at) SELECT id, idem, {d.p}, {d.p}, NULL,"
                                    f" '{{}}', {d.p}"
                                    f" FROM jobs WHERE idem = {d.p}"
                                )
                            ),
                            (f"int-{key}", f"text {key}", since, key),
                        )
        finally:
            await ledger.close()

    asyncio.run(go())


ROWS = [
    ("c-old-1", Status.CONSUMED, 40),
    ("c-old-2", Status.CONSUMED, 35),
    ("c-old-3", Status.CONSUMED, 31),
    ("c-new", Status.CONSUMED, 1),
    ("f-old", Status.FAILED, 40),
    ("d-old", Status.DONE, 90),
]


def prune_cli(db: str, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    """`prune` with stdin a pipe (no terminal to confirm on)."""
    kw.setdefault("input", "")
    return run_cli(["prune", "--db", db, *args], **kw)


def test_prune_counts_asks_refuses_then_prunes_and_archives(db_url: str, tmp_path: Path) -> None:
    seed(db_url, ROWS)
    view = LedgerView(db_url)
    before = view.rows()

    dry = document(prune_cli(db_url, "--older-than", "30d", "--dry-run", "--json"))
    assert dry["dry_run"] is True and dry["count"] == 3 and dry["by_status"] == {"consumed": 3}
    assert dry["older_than_s"] == 30 * DAY
    assert (when(dry["newest"]) - when(dry["oldest"])).days == 9
    assert when(dry["oldest"]) < when(dry["newest"]) < when(dry["cutoff"])
    text = prune_cli(db_url, "--older-than", "720h", "--dry-run")
    ok(text)
    assert text.stdout.startswith("would prune 3 rows (consumed=3)")
    assert view.rows() == before

    # Not on a terminal and no --yes: refused, exit 2, nothing deleted.
    refused(prune_cli(db_url, "--older-than", "30d"), 2, "pass --yes")
    refused(prune_cli(db_url, "--older-than", "30d", "--status", "done", "--yes"), 2, "not done")
    for bad in ("3x", "-1d", "d", ""):
        proc = prune_cli(db_url, "--older-than", bad, "--yes")
        assert proc.returncode == 2 and "is not an age" in proc.stderr, (bad, proc.stderr)
    assert view.rows() == before

    archive = tmp_path / "pruned.jsonl"
    flags = ["--older-than", "2592000", "--status", "consumed", "--status", "failed"]
    flags += ["--yes", "--json", "--archive", str(archive), "--batch", "2"]
    done = document(prune_cli(db_url, *flags))
    assert done["pruned"] == done["archived"] == 4 and done["batches"] == 3
    assert done["by_status"] == {"consumed": 3, "failed": 1}
    assert done["archive"] == str(archive)
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert sorted(line["idem"] for line in lines) == ["c-old-1", "c-old-2", "c-old-3", "f-old"]
    assert {line["idem"]: line["output_text"] for line in lines}["c-old-1"] == "text c-old-1"
    assert all(line["events"] and when(line["pruned_at"]) for line in lines)
    assert set(view.rows()) == {"c-new", "d-old"}
    assert set(view.results()) == {"c-new"}
    assert {e.idem for e in view.events()} == {"c-new", "d-old"}

    status = document(run_cli(["status", "--db", db_url, "--json"]))
    assert status["consumed"]["count"] == 1 and status["failed"]["count"] == 0
    nothing = prune_cli(db_url, "--older-than", "30d", "--status", "failed")
    ok(nothing)  # nothing left: no question to ask
    assert nothing.stdout.startswith("nothing to prune")


def test_prune_killed_between_archive_and_delete_loses_nothing_when_run_again(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.db")
    keys = {f"row-{n}" for n in range(5)}
    seed(db, [(k, Status.CONSUMED, 40) for k in sorted(keys)])
    archive = tmp_path / "pruned.jsonl"
    args = ["--older-than", "30d", "--yes", "--archive", str(archive), "--batch", "2"]
    killed = prune_cli(
        db, *args, env=clean_env({"RECLAIM_CRASH_AT": "after_archive_before_delete:2"})
    )
    assert killed.returncode == -9, killed.stderr
    # The first batch is gone; the second is archived and still in the ledger.
    assert len(archive.read_text().splitlines()) == 4
    assert len(LedgerView(db).rows()) == 3

    again = document(prune_cli(db, *args, "--json"))
    assert again["pruned"] == 3
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert {line["idem"] for line in lines} == keys and len(lines) == 7
    versions = [(line["idem"], line["updated_at"]) for line in lines]
    copies = [v for n, v in enumerate(versions) if v in versions[:n]]
    assert len(copies) == 2  # the second batch, archived twice: the same key and updated_at
    assert LedgerView(db).rows() == {}


def test_prune_asks_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "ledger.db")
    seed(db, [("old", Status.CONSUMED, 40), ("new", Status.CONSUMED, 1)])
    monkeypatch.setattr(prune_module, "_interactive", lambda: True)
    runner = CliRunner()
    declined = runner.invoke(cli, ["prune", "--db", db, "--older-than", "30d"], input="n\n")
    assert declined.exit_code == 2 and "prune 1 row (consumed=1)" in declined.output
    assert set(LedgerView(db).rows()) == {"old", "new"}
    accepted = runner.invoke(cli, ["prune", "--db", db, "--older-than", "30d"], input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert "pruned 1 row (consumed=1)" in accepted.output
    assert set(LedgerView(db).rows()) == {"new"}


def test_prune_with_stdin_closed_is_refused_as_off_a_terminal(tmp_path: Path) -> None:
    # `<&-`: the process starts with fd 0 closed, and Python's sys.stdin is None.
    db = str(tmp_path / "ledger.db")
    seed(db, [("old", Status.CONSUMED, 40)])
    argv = [sys.executable, "-m", "reclaim_tui", "prune", "--db", db, "--older-than", "30d"]
    proc = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *argv],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    refused(proc, 2, "pass --yes")
    assert set(LedgerView(db).rows()) == {"old"}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 30 * DAY), ("12h", 43_200), ("90m", 5_400), ("45", 45), ("45s", 45),
     ("2w", 14 * DAY), ("1.5h", 5_400), (" 7D ", 7 * DAY)],
)  # fmt: skip
def test_ages(text: str, seconds: float) -> None:
    assert parse_age(None, None, text) == seconds
