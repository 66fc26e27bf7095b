"""Regressions for the CLI defects of issue 15 (items 12 and 13), each run
through the real CLI: `python -m reclaim_tui` in a fresh process with a clean
environment (no API key), as tests/e2e/test_cli.py does."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.tui.app import ReclaimApp
from tests.helpers import EmulatorProcess, Workspace, clean_env, run_cli
from tests.helpers.procs import REPO_ROOT, SINK_SPEC, write_jobs

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr


def due_now(db: Path) -> None:
    """Every row due at once: skips a back-off instead of sleeping through it."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE jobs SET next_at = 0")
    conn.close()


def test_a_missing_db_folder_is_named_and_exits_4(tmp_path: Path) -> None:
    """12f: SQLite only says "unable to open database file"; the CLI names the
    folder and why, with the ledger-error exit code (4)."""
    db = tmp_path / "no-such-folder" / "ledger.db"
    for args in (
        ["tick", "--db", str(db), "--base-url", DEAD_API],
        ["status", "--db", str(db)],
        ["inbox", "--db", str(db), "--listen", "127.0.0.1:0"],
    ):
        proc = run_cli(args, timeout=60)
        assert proc.returncode == 4, (args, proc.stderr)
        assert f"{db.parent} does not exist" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert not db.parent.exists()


def test_replay_needs_no_api_key(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    """12b: replay delivers stored results and never calls the API, yet it
    refused to start without a key (exit 2, "no Gemini API key")."""
    ws = make_workspace()
    full_disk = ws.root / "disk-full"
    full_disk.touch()
    ws.env_extra["RECLAIM_TEST_SINK_FAIL_FLAG"] = str(full_disk)
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "replayed without a key"}])
    ok(ws.tick("--first-poll", "0", jobs=jobs))
    for _ in range(5):  # until the result is stored and waits for its sink
        if set(ws.view().status_counts()) == {"done"}:
            break
        due_now(ws.db)
        ok(ws.tick())
    assert set(ws.view().status_counts()) == {"done"}
    full_disk.unlink()
    due_now(ws.db)

    # ws.env(): no GEMINI_API_KEY / GOOGLE_API_KEY; no --api-key, no --base-url.
    proc = run_cli(["replay", "--db", str(ws.db), "--sink", SINK_SPEC], env=ws.env())
    ok(proc)
    assert "consumed=1" in proc.stdout
    assert set(ws.view().status_counts()) == {"consumed"} and len(ws.deliveries()) == 1


def test_retry_and_recover_say_the_next_tick_sends(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    """12a: retry and recover only mark a job for resend (the next tick sends
    it); their output said it was sent. retry needs no API key for that."""
    ws = make_workspace(use_recording_sink=False)
    # Refused before sending (nothing listens): the row stays `reserving`, unsent.
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "retried", "key": "retried"}])
    unsent = run_cli(["tick", "--db", str(ws.db), "--base-url", DEAD_API, "--jobs", str(jobs)])
    assert unsent.returncode == 6, unsent.stderr
    ok(ws.cli("cancel", "retried"))
    retry = run_cli(["retry", "--db", str(ws.db), "retried"])  # no key, no --base-url
    ok(retry)
    assert retry.stdout.strip() == "retried: reserving (marked for resend: the next tick sends it)"
    assert emulator.create_counts()["retried"] == 0
    ok(ws.tick())
    assert emulator.create_counts()["retried"] == 1

    # An orphan: the tick is killed after its create was sent, before the answer.
    jobs = write_jobs(ws.root / "more.jsonl", [{"input": "orphaned", "key": "orphaned"}])
    killed = ws.tick(jobs=jobs, crash_at="after_create_before_handle")
    assert killed.returncode == -9, killed.stderr
    recover = ws.cli("recover")
    ok(recover)
    assert recover.stdout.strip() == "marked for resend=1 (the next tick sends them)"
    assert emulator.create_counts()["orphaned"] == 1
    ok(ws.tick())
    assert emulator.create_counts()["orphaned"] == 2


def test_status_shows_the_oldest_orphans_age(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    """12c: the `orphans` line showed "-" for its age. An orphan's age runs
    from the send of the create whose outcome is unknown (sent_at), not from
    when the row entered `reserving` (state_since, here an hour earlier)."""
    ws = make_workspace()
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "orphaned", "key": "orphaned"}])
    killed = ws.tick(jobs=jobs, crash_at="after_create_before_handle")
    assert killed.returncode == -9, killed.stderr
    now = time.time()
    conn = sqlite3.connect(ws.db)
    with conn:
        conn.execute("UPDATE jobs SET sent_at = ?, state_since = ?", (now - 3600, now - 7200))
    conn.close()

    as_json = ws.cli("status", "--json", engine=False)
    ok(as_json)
    orphans = json.loads(as_json.stdout)["orphans"]
    assert orphans["count"] == 1
    assert 3600 <= orphans["oldest_age_s"] < 7200, orphans
    text = ws.cli("status", engine=False)
    ok(text)
    (line,) = [line for line in text.stdout.splitlines() if line.startswith("orphans")]
    assert line.split()[1:] in (["1", "60m"], ["1", "61m"]), line


def test_bare_command_in_an_empty_folder_points_at_the_demo(tmp_path: Path) -> None:
    """12d: bare `reclaim-tui` with no ledger and no key said only "no Gemini
    API key"; it now says there is no ledger either and suggests the demo.
    Where a ledger exists (RECLAIM_DB is honoured too) it still goes on to
    the console, which is what asks for the key."""
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli([], cwd=empty)
    assert proc.returncode == 2, proc.stderr
    assert "no ledger at ./reclaim_ledger.db" in proc.stderr, proc.stderr
    assert "reclaim-tui demo" in proc.stderr and "reclaim-tui --help" in proc.stderr
    assert list(empty.iterdir()) == []

    elsewhere = tmp_path / "ledger.db"
    ok(run_cli(["tick", "--db", str(elsewhere), "--base-url", DEAD_API]))
    proc = run_cli([], cwd=empty, env=clean_env({"RECLAIM_DB": str(elsewhere)}))
    assert proc.returncode == 2, proc.stderr
    assert "no Gemini API key" in proc.stderr and "demo" not in proc.stderr, proc.stderr
    assert list(empty.iterdir()) == []


#: What a pass does and how fast: no business of a command that changes one row.
PASS_FLAGS = {
    "--concurrency",
    "--lease-seconds",
    "--max-attempts",
    "--first-poll",
    "--orphan-policy",
    "--on-gone",
    "--deadline",
    "--retention-days",
    "--webhook-grace",
    "--webhook-poll",
    "--out",
    "--sink",
    "--model",
    "--verbose",
}


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the lazy ones too (the emulator's)
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[prefix + name] = command
    return found


def _flags(command: click.Command) -> set[str]:
    return {o for p in command.params if isinstance(p, click.Option) for o in p.opts}


def test_each_command_takes_only_its_flags_each_with_a_help_text(tmp_path: Path) -> None:
    """12e: every ledger command took all 21 engine flags (`cancel
    --first-poll`), several without a help text."""
    commands = _commands(cli)
    for name in ("retry", "cancel", "adopt", "answer"):
        assert not _flags(commands[name]) & PASS_FLAGS, name
    assert not _flags(commands["replay"]) & {"--base-url", "--api-key", "--request-timeout"}
    for name, command in commands.items():
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts[0]} has no help text"

    # The same, as an operator meets it.
    assert "--first-poll" not in run_cli(["cancel", "--help"]).stdout
    refused = run_cli(["cancel", "--db", str(tmp_path / "l.db"), "--first-poll", "1", "k"])
    assert refused.returncode == 2 and "No such option '--first-poll'" in refused.stderr


#: A stand-in for python3 in `./dev`: `-m venv DIR` makes a virtualenv whose
#: python, pip and reclaim-tui only log how they were called.
FAKE_PYTHON = r"""#!/usr/bin/env bash
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  cp "$0" "$3/bin/python"
  echo "PATH=\"$3/bin:\$PATH\"" >"$3/bin/activate"
  printf '#!/usr/bin/env bash\necho "reclaim-tui $*" >>"$DEV_LOG"\n' >"$3/bin/reclaim-tui"
  chmod +x "$3/bin/reclaim-tui"
  exit 0
fi
echo "python $*" >>"$DEV_LOG"
"""


def test_dev_demo_installs_only_what_the_demo_needs(tmp_path: Path) -> None:
    """13a: `./dev demo` installed the `test` extra (pytest, hypothesis, ruff,
    mypy …) to open the console. It installs the package alone, and a
    virtualenv `./dev test` set up (a superset) is used as it is."""
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp_path / "dev.log"
    venv = tmp_path / "venv"
    env = clean_env({"PYTHON": str(fake), "RECLAIM_VENV": str(venv), "DEV_LOG": str(log)})

    def dev_demo() -> list[str]:
        log.unlink(missing_ok=True)
        done = subprocess.run(
            ["bash", str(REPO_ROOT / "dev"), "demo", "--seed", "3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return log.read_text().splitlines()

    calls = dev_demo()
    installs = [c for c in calls if " pip install " in c and "--upgrade pip" not in c]
    assert len(installs) == 1 and " -e . " in f"{installs[0]} ", calls
    assert "[test]" not in installs[0]
    assert calls[-1] == "reclaim-tui demo --seed 3"
    assert [c for c in dev_demo() if "pip" in c] == []  # installed: not again

    for stamp in venv.glob(".installed-*"):
        stamp.unlink()
    (venv / ".installed-test-google-genai-locked").touch()  # what `./dev test` leaves
    assert [c for c in dev_demo() if "pip" in c] == []


def test_demo_says_where_it_left_its_ledger_and_articles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """13b: each demo left a temp folder behind without saying where. On exit
    it names the ledger and the articles, and how to look at them again
    (read-only: the demo's emulator is gone with it)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # The screen is not under test here (tests/tui drive it): it closes at once.
    monkeypatch.setattr(ReclaimApp, "run", lambda self, *args, **kwargs: None)
    result = CliRunner().invoke(cli, ["demo", "--jobs", "2"])
    assert result.exit_code == 0, result.output
    (workdir,) = tmp_path.glob("reclaim-demo-*")
    db = workdir / "demo-ledger.db"
    assert f"ledger    {db}" in result.output, result.output
    assert f"articles  {workdir / 'articles'}" in result.output
    assert f"reclaim-tui console --readonly --db {db}" in result.output


def test_the_license_is_the_spdx_string_setuptools_wants() -> None:
    """13c: `license = { text = ... }` makes setuptools warn on every install
    (deprecated, refused from 2027-02-18). The SPDX string form needs
    setuptools>=77, so the build requires that much."""
    with open(REPO_ROOT / "pyproject.toml", "rb") as f:
        pyproject = tomllib.load(f)
    assert pyproject["project"]["license"] == "Apache-2.0"
    (setuptools,) = [r for r in pyproject["build-system"]["requires"] if "setuptools" in r]
    lower = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools.replace(" ", ""))
    assert lower is not None and int(lower[1]) >= 77, setuptools
