"""The CLI end to end: real `python -m reclaim_tui` processes, a real ledger file,
the emulator over HTTP through the real google-genai SDK."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec
from tests.helpers import EmulatorProcess, Workspace, run_cli
from tests.helpers.procs import FAST_FLAGS, clean_env, write_jobs

MODEL = "gemini-flash-latest"


def key_of(text: str, model: str = MODEL) -> str:
    return idempotency_key(JobSpec(input=text, model=model))


def ok(proc: object) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]


def test_tick_until_consumed_then_status_show_export(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    ws = make_workspace(use_recording_sink=False)
    texts = [f"e2e article {i}" for i in range(4)]
    jobs = [{"input": t} for t in texts[:3]] + [{"input": texts[3], "key": "own-key-1"}]
    keys = [key_of(t) for t in texts[:3]] + ["own-key-1"]
    first = ws.tick(jobs=write_jobs(ws.root / "jobs.jsonl", jobs))
    ok(first)
    assert "inserted=4" in first.stdout and "sent=4" in first.stdout
    for run in ws.settle():
        ok(run)

    rows = ws.view().rows()
    assert {r["status"] for r in rows.values()} == {"consumed"} and set(rows) == set(keys)
    creates = emulator.create_counts()
    for text, key in zip(texts, keys, strict=True):
        assert creates[key] == 1
        found = emulator.find(key)
        (answer,) = [s for s in found[0]["steps"] if s["type"] == "model_output"]
        emulator_text = answer["content"][0]["text"]
        assert emulator_text == fake_output_text(text)
        assert (ws.out / f"{key}.md").read_text(encoding="utf-8") == emulator_text
        article = json.loads((ws.out / f"{key}.json").read_text(encoding="utf-8"))
        assert article["id"] == rows[key]["handle"] == found[0]["id"]
        assert article["status"] == "completed"

    status = ws.cli("status", "--json", engine=False)
    ok(status)
    counts = json.loads(status.stdout)
    assert counts["consumed"]["count"] == 4 and counts["reserving"]["count"] == 0
    assert counts["orphans"]["count"] == 0

    show = ws.cli("show", keys[0][:8], engine=False)
    ok(show)
    assert keys[0] in show.stdout and "consumed" in show.stdout
    assert "timeline:" in show.stdout and "done → consumed" in show.stdout
    assert fake_output_text(texts[0]) in show.stdout

    jsonl = ws.cli("export", "--format", "jsonl", engine=False)
    ok(jsonl)
    exported = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert sorted(e["idem"] for e in exported) == sorted(keys)
    assert all(e["status"] == "consumed" and e["handle"] for e in exported)

    as_csv = ws.cli("export", "--format", "csv", engine=False)
    ok(as_csv)
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert sorted(r["idem"] for r in table) == sorted(keys)
    assert {r["status"] for r in table} == {"consumed"}

    target = ws.root / "consumed.jsonl"
    to_file = ws.cli("export", "--status", "consumed", "-o", str(target), engine=False)
    ok(to_file)
    assert len(target.read_text().splitlines()) == 4 and "4 rows written" in to_file.stderr


def test_jobs_from_stdin(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace()
    lines = "\n".join(json.dumps({"input": f"from stdin {i}"}) for i in range(3)) + "\n"
    ok(ws.tick(jobs="-", input=lines))
    ws.settle(confirm=False)
    rows = ws.view().rows()
    assert set(rows) == {key_of(f"from stdin {i}") for i in range(3)}
    assert {r["status"] for r in rows.values()} == {"consumed"}


def test_bad_jobs_file_exits_3_names_every_line_and_reserves_nothing(
    make_workspace: Callable[..., Workspace],
) -> None:
    ws = make_workspace()
    ok(ws.tick(jobs=write_jobs(ws.root / "good.jsonl", [{"input": "already here"}])))
    before = ws.view().fingerprint()
    bad = write_jobs(
        ws.root / "bad.jsonl",
        [
            {"input": "fine"},
            "{not json",
            {"input": "fine too"},
            {"input": ""},
            {"input": "x", "key": "../escape"},
            {"input": "x", "key": "a/b"},
            {"input": "x", "colour": "red"},
            "[1, 2]",
        ],
    )
    for command in ("submit", "tick"):
        args = [str(bad)] if command == "submit" else ["--jobs", str(bad)]
        proc = ws.cli(command, *args)
        assert proc.returncode == 3, proc.stderr
        assert "Traceback" not in proc.stderr
        for line in (2, 4, 5, 6, 7, 8):
            assert f"line {line}:" in proc.stderr
        for line in (1, 3):
            assert f"line {line}:" not in proc.stderr
        assert "nothing was reserved" in proc.stderr
        assert ws.view().fingerprint() == before

    fresh = ws.root / "never.db"
    proc = run_cli(["submit", "--db", str(fresh), "--base-url", "http://127.0.0.1:9", str(bad)])
    assert proc.returncode == 3 and not fresh.exists()


def test_missing_key_for_the_real_api_exits_2_before_the_ledger_exists(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "x"}])
    env = clean_env()  # no GEMINI_API_KEY / GOOGLE_API_KEY, no --base-url
    for args in (
        ["tick", "--db", str(db), "--jobs", str(jobs)],
        ["submit", "--db", str(db), str(jobs)],
        ["tick", "--db", str(db)],
    ):
        proc = run_cli(args, env=env, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "API key" in proc.stderr and "Traceback" not in proc.stderr
        assert not db.exists() and not (tmp_path / "reclaim_ledger.db").exists()


def test_operator_retry_cancel_adopt(tmp_path: Path) -> None:
    # Interactions here run until the admin API finishes them.
    with EmulatorProcess(tmp_path, latency=3600) as emu:
        ws = Workspace(tmp_path / "ops", emulator=emu)
        texts = ["will fail then retry", "will be cancelled", "keeps going"]
        keys = [key_of(t) for t in texts]
        ok(ws.tick(jobs=write_jobs(ws.root / "jobs.jsonl", [{"input": t} for t in texts])))
        rows = ws.view().rows()
        emu.finish(rows[keys[0]]["handle"], "failed")
        emu.finish(rows[keys[2]]["handle"], "completed")

        cancel = ws.cli("cancel", keys[1][:10])
        ok(cancel)
        assert cancel.stdout.strip() == f"{keys[1]}: cancelled"
        assert emu.find(keys[1])[0]["status"] == "cancelled"
        notes = [e.note for e in ws.view().events(keys[1])]
        assert f"remote {rows[keys[1]]['handle']} is cancelled" in notes
        again = ws.cli("cancel", keys[1])
        assert again.returncode == 5 and "cancelled" in again.stderr

        ws.settle(confirm=False)
        rows = ws.view().rows()
        assert rows[keys[0]]["status"] == "failed"
        assert "API status failed" in rows[keys[0]]["last_error"]
        assert rows[keys[1]]["status"] == "cancelled" and rows[keys[2]]["status"] == "consumed"

        retry = ws.cli("retry", keys[0][:12])
        ok(retry)
        assert retry.stdout.startswith(f"{keys[0]}: reserving (marked for resend")
        ok(ws.tick())
        new_handle = ws.view().rows()[keys[0]]["handle"]
        assert new_handle and new_handle != rows[keys[0]]["handle"]
        emu.finish(new_handle, "completed")
        ws.settle(confirm=False)
        assert ws.view().rows()[keys[0]]["status"] == "consumed"
        assert emu.create_counts()[keys[0]] == 2
        notes = [e.note for e in ws.view().events(keys[0])]
        assert any(n.startswith("operator retry (was failed") for n in notes)

        refused = ws.cli("retry", keys[2])
        assert refused.returncode == 5 and "consumed" in refused.stderr
        unknown = ws.cli("retry", "zzzz")
        assert unknown.returncode == 5 and "no job" in unknown.stderr

        # adopt: see tests/reliability/test_crash_sweep.py (held orphans adopted).


def test_two_ticks_at_once_create_and_consume_each_job_once(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    ws = make_workspace()
    texts = [f"two at once {i}" for i in range(40)]
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": t} for t in texts])
    # Two writers at once wait for each other's write lock: the default busy
    # timeout (10 s), not the tests' fast 1 s. SQLite's busy handler is not
    # fair (it sleeps and retries, up to 100 ms apart): a tick committing its
    # groups back to back kept the other out for over a second once, in a
    # loaded CI run (exit 4, "locked past busy_timeout"; nothing lost). The
    # lease must outlast 3 × (request timeout + busy timeout).
    slow_lock = ("--busy-timeout", "10", "--lease-seconds", "40")
    for round_ in range(2):
        procs = [
            ws.popen_tick(*slow_lock, jobs=jobs, log_name=f"r{round_}-{i}.log") for i in range(2)
        ]
        for proc in procs:
            assert proc.wait(120) == 0, proc.log_path.read_text()  # type: ignore[attr-defined]
            assert "locked" not in proc.log_path.read_text()  # type: ignore[attr-defined]
        if round_ == 0:
            time.sleep(max(0.0, ws.view().seconds_until_due() or 0.0) + 0.05)
    ws.settle(confirm=False)
    keys = {key_of(t) for t in texts}
    creates = emulator.create_counts()
    assert {k: creates[k] for k in keys} == dict.fromkeys(keys, 1)
    assert {r["status"] for r in ws.view().rows().values()} == {"consumed"}
    delivered = [d["idem"] for d in ws.deliveries()]
    assert sorted(delivered) == sorted(keys)  # each consumed exactly once


def test_fast_flags_are_accepted_and_a_short_lease_refused(tmp_path: Path) -> None:
    base = ["tick", "--db", str(tmp_path / "l.db"), "--base-url", "http://127.0.0.1:9"]
    proc = run_cli([*base, "--request-timeout", "1", "--busy-timeout", "1", "--lease-seconds", "5"])
    assert proc.returncode == 2 and "lease" in proc.stderr
    assert not (tmp_path / "l.db").exists()
    assert FAST_FLAGS[-1] == "6"


def test_a_refused_key_exits_6_spends_nothing_and_the_jobs_resume_once_fixed(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    """Issue 10: a wrong key is not the jobs' fault. Before: every job `failed`
    after ~80 s of ticks, each tick exiting 0, and nothing resumed by itself."""
    ws = make_workspace(use_recording_sink=False, pass_api_key=False)
    texts = [f"wrong key {i}" for i in range(8)]
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": t} for t in texts])
    wrong = {"GEMINI_API_KEY": "not-the-key"}
    # The first tick opens the breaker after 5 refusals; the second is refused
    # for the 3 rows still due (fewer than 5 calls, every one refused).
    for _ in range(2):
        proc = ws.tick(jobs=jobs, env=wrong)
        assert proc.returncode == 6, (proc.returncode, proc.stdout, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and "(auth)" in lines[0] and "$GEMINI_API_KEY" in lines[0]
        assert "not-the-key" not in proc.stderr + proc.stdout
    rows = ws.view().rows()
    assert {r["status"] for r in rows.values()} == {"reserving"}
    assert all(r["attempts"] == 0 for r in rows.values()), "a refused key spent attempts"
    created = emulator.create_counts()  # the emulator is shared by the module
    assert all(created[key_of(t)] == 0 for t in texts)

    # The key is fixed: every job completes with no operator action.
    fixed = {"GEMINI_API_KEY": emulator.api_key}
    conn = sqlite3.connect(ws.db)
    with conn:  # skip the outside-failure backoff (16 s and up) rather than sleep through it
        conn.execute("UPDATE jobs SET next_at = 0")
    conn.close()
    for _ in range(6):
        proc = ws.tick(env=fixed)
        ok(proc)
        if {r["status"] for r in ws.view().rows().values()} == {"consumed"}:
            break
        time.sleep(max(0.0, ws.view().seconds_until_due() or 0.0) + 0.05)
    rows = ws.view().rows()
    assert {r["status"] for r in rows.values()} == {"consumed"}
    assert all(r["attempts"] == 1 and r["duplicates"] == 0 for r in rows.values())
