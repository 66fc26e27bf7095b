"""The PostgreSQL ledger through a real PgBouncer (issue 23, point 1).

A managed PostgreSQL service's endpoint is a pooler, PgBouncer in
`pool_mode=transaction` mostly: a client's transactions may each run on
another server connection, and what one client leaves on a server connection
(a server-side prepared statement, a session-level SET) is met by the next
one. Every command runs here through the real CLI, through a real PgBouncer
(tests/helpers/pgbouncer.py) in transaction mode and in session mode, in
front of the tests' throwaway server; the ledger is read directly on the
server (`pg_dsn`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from reclaim_tui.core.ledger.opening import open_ledger
from tests.helpers import EmulatorProcess, Workspace, run_cli
from tests.helpers.inbox import InboxProcess
from tests.helpers.ledgerdb import LedgerView
from tests.helpers.pgbouncer import PgBouncer
from tests.helpers.postgres import PostgresServer
from tests.helpers.procs import write_jobs

STATUSES = ("reserving", "submitted", "done", "consumed", "failed", "cancelled")


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    return proc


def jobs_file(path: Path, n: int, tag: str = "j") -> Path:
    return write_jobs(path, [{"input": f"{tag} {i}", "key": f"{tag}-{i}"} for i in range(n)])


def bounced(
    make_workspace: Callable[..., Workspace], bouncer_dsn: str, name: str = "ws"
) -> Workspace:
    return make_workspace(name, db_url=bouncer_dsn)


def test_every_tick_through_the_pooler_works(
    make_workspace: Callable[..., Workspace],
    pg_bouncer: PgBouncer,
    bouncer_dsn: str,
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    """Issue 23: the second tick through a transaction pooler exited 4 with
    `prepared statement "_pg3_0" already exists` (psycopg prepares a
    statement on the server after 5 executions; the pooler gave the next
    transaction a server connection that already had it)."""
    ws = bounced(make_workspace, bouncer_dsn)
    for round_ in range(4):
        ok(ws.tick(jobs=jobs_file(tmp_path / f"j{round_}.jsonl", 5, f"r{round_}")))
    ws.settle()
    view = LedgerView(pg_dsn)
    assert view.status_counts() == {"consumed": 20}


def test_no_session_state_leaks_through_a_transaction_pooler(
    make_workspace: Callable[..., Workspace],
    pg_server: PostgresServer,
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    """Issue 23: `status` ran `SET SESSION CHARACTERISTICS AS TRANSACTION READ
    ONLY` on its server connection; through a transaction pooler the next
    tick got that connection and exited 4 `cannot execute UPDATE in a
    read-only transaction`. One server connection (pool of 1): every client
    meets what the one before left on it."""
    with PgBouncer(pg_server, pool_mode="transaction", pool_size=1) as bouncer:
        ws = make_workspace("leak", db_url=bouncer.via(pg_dsn))
        ok(ws.tick(jobs=jobs_file(tmp_path / "a.jsonl", 3, "a")))
        ok(ws.cli("status", engine=False))
        ok(ws.tick(jobs=jobs_file(tmp_path / "b.jsonl", 3, "b")))
        ws.settle()
    assert LedgerView(pg_dsn).status_counts() == {"consumed": 6}


async def test_a_fresh_server_connection_finds_the_ledger(
    pg_server: PostgresServer, pg_dsn: str
) -> None:
    """Issue 23: `SET search_path` at connect stayed on the server connection
    it ran on; the pooler gave the client's next statement another one, and
    it failed `relation "jobs" does not exist`. Here the connection the
    ledger was opened on is held by another client, so its next read runs on
    a server connection that has never seen this ledger."""
    with PgBouncer(pg_server, pool_mode="transaction", pool_size=2) as bouncer:
        url = bouncer.via(pg_dsn)
        ledger = await open_ledger(url)
        try:
            await ledger.insert_jobs([("k1", '{"input": "x"}', "m")], "tick")
            async with await psycopg.AsyncConnection.connect(url, prepare_threshold=None) as other:
                # In a transaction: the pooler gives it the idle server
                # connection (the one the ledger just used) until it ends.
                await other.execute("SELECT 1")
                row = await ledger.get("k1")
                await other.rollback()
        finally:
            await ledger.close()
    assert row is not None and row.idem == "k1"


#: A server-side refusal of the "sending create" event of some rows, with the
#: SQLSTATE and text the pooler's clash gave in issue 23 (42P05).
_REFUSE_SENDING = """
CREATE FUNCTION reclaim_tui.refuse_sending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.note LIKE '%sending create' AND NEW.idem >= 'c-2' THEN
        RAISE EXCEPTION 'prepared statement "_pg3_0" already exists'
            USING ERRCODE = '42P05';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER refuse_sending BEFORE INSERT ON reclaim_tui.events
    FOR EACH ROW EXECUTE FUNCTION reclaim_tui.refuse_sending();
"""


def _refuse_sending(pg_dsn: str, on: bool) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        if on:
            conn.execute(_REFUSE_SENDING)
        else:
            conn.execute("DROP TRIGGER refuse_sending ON reclaim_tui.events")


def test_a_pass_that_could_not_record_its_sends_says_so(
    make_workspace: Callable[..., Workspace],
    pg_server: PostgresServer,
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    """Issue 23: `tick --jobs j5.jsonl --json` printed inserted=5 sent=2,
    `errors: []`, exit 0, and left 3 rows in `reserving` under a lease: the
    ledger's refusal of their attempts was swallowed by the pass. Now the
    rows are named in the JSON's errors and the tick exits 4."""
    with PgBouncer(pg_server, pool_mode="transaction") as bouncer:
        ws = make_workspace(
            "partial", db_url=bouncer.via(pg_dsn), extra_flags=("--concurrency", "1")
        )
        ok(ws.tick())  # the ledger exists
        _refuse_sending(pg_dsn, True)
        done = ws.tick("--json", jobs=jobs_file(tmp_path / "j5.jsonl", 5, "c"))
        assert done.returncode == 4, done.stderr
        document = json.loads(done.stdout)
        assert document["counts"]["inserted"] == 5
        assert document["counts"]["sent"] == 2
        rows = LedgerView(pg_dsn).rows()
        unsent = {idem for idem, row in rows.items() if row["attempts"] == 0}
        assert len(unsent) == 3
        # The pass stops at the first refused row (it claims as many as it
        # has in flight: one here); every row named is one it did not send.
        named = {e["idem"] for e in document["errors"]}
        assert named and named <= unsent
        assert all("already exists" in e["message"] for e in document["errors"])
        _refuse_sending(pg_dsn, False)
        ws.settle()
    assert LedgerView(pg_dsn).status_counts() == {"consumed": 5}


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]


def _wait_for(what: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_run_waits_out_a_poolers_statement_clash(
    make_workspace: Callable[..., Workspace],
    pg_server: PostgresServer,
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    """Issue 23: a `run` service died on the pooler's `prepared statement
    … already exists`, with no `ledger_unavailable` line and no retry. Such
    an error is the pooler's connection, not the ledger: the service says
    `ledger_unavailable`, waits, and the jobs get done once it clears."""
    with PgBouncer(pg_server, pool_mode="transaction") as bouncer:
        ws = make_workspace("run", db_url=bouncer.via(pg_dsn))
        ok(ws.tick())
        _refuse_sending(pg_dsn, True)
        log = tmp_path / "run.log"
        argv = [sys.executable, "-m", "reclaim_tui", "run", *ws.engine_flags("run")]
        argv += ["--jobs", str(jobs_file(tmp_path / "j.jsonl", 5, "c")), "--log", str(log)]
        proc = subprocess.Popen(argv, env=ws.env(), stderr=subprocess.PIPE, text=True)
        try:
            _wait_for(
                lambda: (
                    proc.poll() is not None
                    or any(x["event"] == "ledger_unavailable" for x in _lines(log))
                )
            )
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            _refuse_sending(pg_dsn, False)
            _wait_for(lambda: LedgerView(pg_dsn).status_counts() == {"consumed": 5})
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
    assert code == 0
    events = [x["event"] for x in _lines(log)]
    assert "ledger_back" in events and events[-1] == "stopped"


def _finish_running(emu: EmulatorProcess) -> None:
    """Complete every interaction still running (the cancelled one stays so)."""
    for idem in emu.creates_by_idem():
        for found in emu.find(idem):
            if found.get("status") in ("queued", "in_progress"):
                emu.finish(found["id"], "completed", f"text of {idem}")


def test_every_command_and_the_inbox_through_the_pooler(
    pg_bouncer: PgBouncer, bouncer_dsn: str, pg_dsn: str, tmp_path: Path
) -> None:
    """tick, run, status, show, retry, cancel, export, migrate (both ways,
    with --check) and the webhook inbox, through PgBouncer in transaction
    mode and in session mode."""
    # Nothing finishes on its own (an hour of latency): a loaded machine once
    # took longer than a 10 s latency between the pooled tick and `cancel`,
    # and c-0 was no longer a submitted row to cancel. Each interaction is
    # finished by the emulator's admin call when the test wants it done.
    with EmulatorProcess(tmp_path, latency=3600.0) as emu:
        local = Workspace(tmp_path / "local", emulator=emu)
        ok(local.tick(jobs=jobs_file(tmp_path / "m.jsonl", 3, "m")))
        _finish_running(emu)  # the migrated rows are polled done through the pooler
        ok(run_cli(["migrate", "--from", str(local.db), "--to", bouncer_dsn]))
        ok(run_cli(["migrate", "--from", str(local.db), "--to", bouncer_dsn, "--check"]))

        ws = Workspace(tmp_path / "pooled", emulator=emu, db_url=bouncer_dsn)
        with InboxProcess(bouncer_dsn, f"{emu.base_url}/.well-known/jwks.json", tmp_path) as inbox:
            # A missed event costs a poll after 5 s, not the default 120 s.
            ws.extra_flags = ("--webhook-url", inbox.url, "--webhook-poll", "5")
            ok(ws.tick("--json", jobs=jobs_file(tmp_path / "j5.jsonl", 5, "c")))
            # Sent, not finished (nothing finishes on its own): a submitted row to cancel.
            assert json.loads(ok(ws.cli("cancel", "c-0", "--json")).stdout)["status"] == "cancelled"
            assert json.loads(ok(ws.cli("retry", "c-0", "--json")).stdout)["status"] == "reserving"
            run = ws.engine_flags("run")
            ok(
                run_cli(
                    ["run", *run, "--once", "--jobs", str(jobs_file(tmp_path / "r.jsonl", 2, "r"))],
                    env=ws.env(),
                )
            )
            status = json.loads(ok(ws.cli("status", "--json", engine=False)).stdout)
            assert sum(status[s]["count"] for s in STATUSES) == 10
            _finish_running(emu)  # now every job may complete (webhooks tell the inbox)
            _wait_for(lambda: len(LedgerView(pg_dsn)._query("SELECT * FROM inbox")) >= 5)
            ws.settle(max_wait=5.0)
        shown = json.loads(ok(ws.cli("show", "c-1", "--json", engine=False)).stdout)
        assert shown["status"] == "consumed"
        out = tmp_path / "export.jsonl"
        ok(ws.cli("export", "-o", str(out), engine=False))
        assert len(out.read_text().splitlines()) == 10
        back = tmp_path / "back.db"
        ok(run_cli(["migrate", "--from", bouncer_dsn, "--to", str(back)]))
        ok(run_cli(["migrate", "--from", bouncer_dsn, "--to", str(back), "--check"]))
    assert LedgerView(pg_dsn).status_counts() == {"consumed": 10}


def test_lanes_through_the_pooler_create_and_deliver_each_job_once(
    make_workspace: Callable[..., Workspace],
    emulator: EmulatorProcess,
    pg_bouncer: PgBouncer,
    bouncer_dsn: str,
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    """`--lanes 2`: each lane is a client connection of its own to the
    pooler; a submit and the ticks after it create each job once and deliver
    it once, whichever server connection each lane's transactions meet."""
    ws = bounced(make_workspace, bouncer_dsn)
    ws.extra_flags = ("--lanes", "2", "--concurrency", "4")
    # The module's emulator serves both pool modes: keys of this run's own.
    tag = f"lanes{pg_bouncer.port}"
    keys = [f"{tag}-{i}" for i in range(30)]
    sent = ok(ws.cli("submit", str(jobs_file(tmp_path / "lanes.jsonl", 30, tag))))
    assert "sent=30" in sent.stdout, sent.stdout
    ws.settle()
    assert LedgerView(pg_dsn).status_counts() == {"consumed": 30}
    creates = emulator.create_counts()
    assert {k: creates[k] for k in keys} == dict.fromkeys(keys, 1)
    assert sorted(d["idem"] for d in ws.deliveries()) == sorted(keys)
