"""Start-up (issue 14): a tick with nothing due never imports google-genai
(~1 s of CPU); the SDK is imported on the first API call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_TICK = """
import asyncio, sys
from reclaim_tui.bootstrap import open_engine
from reclaim_tui.config import Settings
from reclaim_tui.core.models import Actor, JobSpec

async def main(jobs):
    settings = Settings(db=sys.argv[1], out=sys.argv[2], base_url="http://127.0.0.1:9")
    async with open_engine(settings, actor=Actor.TICK) as engine:
        await engine.tick(jobs)

jobs = [JobSpec(input="x", model="m")] if sys.argv[3] == "job" else []
asyncio.run(main(jobs))
print("google.genai" in sys.modules)
"""


@pytest.mark.parametrize(("work", "imported"), [("idle", "False"), ("job", "True")])
def test_the_sdk_is_imported_only_when_a_call_is_due(
    tmp_path: Path, work: str, imported: str
) -> None:
    args = [sys.executable, "-c", _TICK, str(tmp_path / "l.db"), str(tmp_path / "out"), work]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == imported


# The CLI's own entry point, run as cron runs it; at exit, the top-level packages loaded.
_CLI = """
import json, sys
from reclaim_tui.cli import main
try:
    main()
except SystemExit:
    pass
finally:
    sys.__stderr__.write("MODULES " + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
    sys.__stderr__.write("\\nOURS " + json.dumps(sorted(m for m in sys.modules if "reclaim" in m)))
"""
#: Packages only other commands use: the emulator's and the inbox's HTTP server and
#: signatures (aiohttp, cryptography, PyJWT, standardwebhooks), the SDK and its stack,
#: the console, PostgreSQL's driver on a SQLite ledger.
_NOT_FOR_IDLE_COMMANDS = {
    "aiohttp",
    "cryptography",
    "jwt",
    "standardwebhooks",
    "google",
    "httpx",
    "pydantic",
    "textual",
    "rich",
    "psycopg",
}


@pytest.mark.parametrize(
    "command",
    [
        ["tick", "--base-url", "http://127.0.0.1:9", "--api-key", "k"],
        ["status"],
        ["show", "nothing-here"],
        ["export", "--format", "jsonl"],
    ],
    ids=["tick-nothing-due", "status", "show", "export"],
)
def test_a_command_imports_only_what_it_uses(tmp_path: Path, command: list[str]) -> None:
    """Issue 27: `cli.py` imported the emulator's command for every command, which pulled
    in aiohttp, cryptography and PyJWT: half of an idle tick's start-up."""
    db = str(tmp_path / "l.db")
    first = [sys.executable, "-m", "reclaim_tui", "tick", "--db", db, "--api-key", "k"]
    subprocess.run([*first, "--base-url", "http://127.0.0.1:9"], capture_output=True, timeout=120)
    argv = ["reclaim-tui", command[0], "--db", db, *command[1:]]
    script = f"import sys; sys.argv = {argv!r}\n" + _CLI
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("MODULES ")][-1]
    loaded = set(json.loads(line.removeprefix("MODULES ")))
    assert "reclaim_tui" in loaded and "click" in loaded
    assert not loaded & _NOT_FOR_IDLE_COMMANDS, done.stderr


def test_the_emulator_command_is_still_listed_and_runs_its_help() -> None:
    run = [sys.executable, "-m", "reclaim_tui"]
    listed = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=120)
    assert "emulator  Run the Interactions API emulator" in listed.stdout
    helped = subprocess.run(
        [*run, "emulator", "--help"], capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and "--latency" in helped.stdout


def test_submit_no_send_reserves_without_a_key_or_the_sdk(tmp_path: Path) -> None:
    """Issue 27: `submit` claimed a batch and sent it itself, a second cold process
    beside a running service (~2 s of CPU). `--no-send` validates and reserves only:
    no key, no SDK; the service (here a tick) sends them."""
    from tests.helpers import EmulatorProcess
    from tests.helpers.procs import clean_env, write_jobs

    db = str(tmp_path / "l.db")
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": f"no send {i}"} for i in range(3)])
    argv = ["reclaim-tui", "submit", "--db", db, "--json", "--no-send", str(jobs)]
    script = f"import sys; sys.argv = {argv!r}\n" + _CLI
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        cwd=tmp_path,
    )
    report = json.loads(done.stdout)
    assert report["counts"] == {"inserted": 3}, done.stdout
    line = [x for x in done.stderr.splitlines() if x.startswith("MODULES ")][-1]
    assert not set(json.loads(line.removeprefix("MODULES "))) & _NOT_FOR_IDLE_COMMANDS
    with EmulatorProcess(tmp_path, latency=0.0) as emu:
        tick = [sys.executable, "-m", "reclaim_tui", "tick", "--db", db, "--json"]
        tick += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--first-poll", "0"]
        tick += ["--out", str(tmp_path / "out")]
        sent = subprocess.run(tick, capture_output=True, text=True, timeout=120, env=clean_env())
        assert json.loads(sent.stdout)["counts"]["sent"] == 3, sent.stdout + sent.stderr


#: reclaim-tui's own modules a command must not import (issue 27, the idle tick's
#: start-up): the fast path's modules come with the SDK, when a call is due; the
#: commands that only read the ledger import neither the engine, the sinks nor the
#: Gemini backend (`config.py` imported the whole engine for `EngineConfig`, and
#: `bootstrap.py` the engine and the sinks for `open_engine`).
_FAST_PATH = {
    "reclaim_tui.core.gemini.fastpath",
    "reclaim_tui.core.gemini.fastcalls",
    "reclaim_tui.core.gemini.answers",
}
_READERS_SKIP = {"reclaim_tui.core.engine.engine", "reclaim_tui.core.sinks", *_FAST_PATH}


@pytest.mark.parametrize(
    ("command", "unused"),
    [
        (["tick", "--base-url", "http://127.0.0.1:9", "--api-key", "k"], _FAST_PATH),
        # status reads the console's views, whose age filter is pruning's: not its modules
        # ... nor the price table's (the filter's cost word prices rows only when used)
        (
            ["status"],
            _READERS_SKIP
            | {
                "reclaim_tui.core.gemini",
                "reclaim_tui.core.ledger.prune",
                "reclaim_tui.core.costs",
            },
        ),
        (["show", "nothing-here"], _READERS_SKIP | {"reclaim_tui.core.gemini"}),
        (["export", "--format", "jsonl"], _READERS_SKIP | {"reclaim_tui.core.gemini"}),
    ],
    ids=["tick-nothing-due", "status", "show", "export"],
)
def test_a_command_imports_only_our_modules_it_uses(
    tmp_path: Path, command: list[str], unused: set[str]
) -> None:
    db = str(tmp_path / "l.db")
    first = [sys.executable, "-m", "reclaim_tui", "tick", "--db", db, "--api-key", "k"]
    subprocess.run([*first, "--base-url", "http://127.0.0.1:9"], capture_output=True, timeout=120)
    argv = ["reclaim-tui", command[0], "--db", db, *command[1:]]
    script = f"import sys; sys.argv = {argv!r}\n" + _CLI
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("OURS ")][-1]
    loaded = set(json.loads(line.removeprefix("OURS ")))
    assert "reclaim_tui.cli" in loaded
    assert not loaded & unused, done.stderr


#: What an idle tick no longer imports (issue 27): it asks the ledger "anything
#: due?" synchronously first (core/ledger/sqlite/idle.py), so the event loop, aiosqlite,
#: the engine and the sinks come only with work to do.
_ASYNC_STACK = {"asyncio", "aiosqlite"}
_ENGINE = {"reclaim_tui.bootstrap", "reclaim_tui.core.engine.engine", "reclaim_tui.core.sinks"}


@pytest.mark.parametrize("due", [False, True], ids=["nothing-due", "a-row-due"])
def test_an_idle_tick_imports_no_event_loop_and_no_engine(tmp_path: Path, due: bool) -> None:
    db = str(tmp_path / "l.db")
    first = [sys.executable, "-m", "reclaim_tui", "tick", "--db", db, "--api-key", "k"]
    subprocess.run([*first, "--base-url", "http://127.0.0.1:9"], capture_output=True, timeout=120)
    if due:  # one job reserved: the tick has a send to make (to a closed port)
        jobs = tmp_path / "jobs.jsonl"
        jobs.write_text('{"input": "due"}\n', encoding="utf-8")
        no_send = [sys.executable, "-m", "reclaim_tui", "submit", "--db", db, "--no-send"]
        subprocess.run([*no_send, str(jobs)], capture_output=True, timeout=120, check=True)
    argv = ["reclaim-tui", "tick", "--db", db, "--base-url", "http://127.0.0.1:9"]
    script = f"import sys; sys.argv = {[*argv, '--api-key', 'k']!r}\n" + _CLI
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    lines = done.stderr.splitlines()
    packages = set(json.loads([x for x in lines if x.startswith("MODULES ")][-1][8:]))
    ours = set(json.loads([x for x in lines if x.startswith("OURS ")][-1][5:]))
    if due:  # the boundary is real: work to do loads them
        assert _ASYNC_STACK <= packages and _ENGINE <= ours, done.stderr
    else:
        assert not packages & _ASYNC_STACK and not ours & _ENGINE, done.stderr
