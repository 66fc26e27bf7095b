"""The suite's fork server (tests/helpers/forkserver.py) runs a CLI process as `python
-m reclaim_tui` runs it: the same output, exit code, environment, folder, standard
input, crash by signal, and a timeout that kills it. Each case runs both ways and
compares, so a difference shows here rather than as a test that passes only forked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import forkserver
from tests.helpers.procs import clean_env, run_cli


def both(
    monkeypatch: pytest.MonkeyPatch, args: list[str], **kwargs: object
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    monkeypatch.delenv("RECLAIM_TEST_EXEC", raising=False)
    forked = run_cli(args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setenv("RECLAIM_TEST_EXEC", "1")
    execd = run_cli(args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.delenv("RECLAIM_TEST_EXEC")
    return forked, execd


def same(a: subprocess.CompletedProcess[str], b: subprocess.CompletedProcess[str]) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


def test_a_forked_run_comes_from_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECLAIM_TEST_EXEC", raising=False)
    server = forkserver._get(clean_env())
    run = forkserver.run_forked(
        ["--version"], env=clean_env(), base_env=clean_env(), input=None, timeout=60, cwd=None
    )
    assert run is not None and run.returncode == 0 and "reclaim-tui" in run.stdout
    assert server.proc.poll() is None and server.proc.pid != os.getpid()


def test_help_version_and_usage_errors_match_an_execd_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for args in (["--help"], ["--version"], ["tick", "--no-such-flag"], ["no-such-command"]):
        forked, execd = both(monkeypatch, args)
        same(forked, execd)
    assert execd.returncode == 2


# Nothing listens on port 9 (discard): every create fails to connect, and is retried.
OFFLINE = ["--base-url", "http://127.0.0.1:9", "--api-key", "k", "--request-timeout", "1"]


def test_environment_folder_and_stdin_are_the_requests(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A relative --db lands in the request's folder; the jobs come on stdin
    # (`--jobs -`), the environment's RECLAIM_DB is not used because --db is given.
    jobs = '{"key": "a", "input": "hello"}\n{"key": "b", "input": "again"}\n'
    env = clean_env({"RECLAIM_DB": str(tmp_path / "not-this.db")})
    seen = []
    for mode in ("", "1"):
        monkeypatch.setenv("RECLAIM_TEST_EXEC", mode)
        folder = tmp_path / f"m{mode or 0}"
        folder.mkdir()
        tick = run_cli(
            ["tick", "--db", "here.db", "--jobs", "-", *OFFLINE], env=env, input=jobs, cwd=folder
        )
        show = run_cli(["show", "--db", "here.db", "--json", "a"], env=env, cwd=folder)
        assert show.returncode == 0, show.stderr
        seen.append((tick.returncode, '"hello"' in show.stdout, (folder / "here.db").exists()))
    assert seen[0] == seen[1] and seen[0][1:] == (True, True)
    assert not (tmp_path / "not-this.db").exists()


def test_a_crash_point_kills_the_forked_process_by_signal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # RECLAIM_CRASH_AT makes the process SIGKILL itself (core/crash.py): -9 both ways.
    env = clean_env({"RECLAIM_CRASH_AT": "after_reserve_commit"})
    codes = []
    for mode in ("", "1"):
        monkeypatch.setenv("RECLAIM_TEST_EXEC", mode)
        folder = tmp_path / f"m{mode or 0}"
        folder.mkdir()
        (folder / "jobs.jsonl").write_text('{"key": "k", "input": "x"}\n')
        run = run_cli(
            ["tick", "--db", "l.db", "--jobs", "jobs.jsonl", *OFFLINE], env=env, cwd=folder
        )
        codes.append(run.returncode)
    assert codes == [-9, -9]


def test_a_forked_run_that_overstays_its_timeout_is_killed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RECLAIM_TEST_EXEC", raising=False)
    sink = tmp_path / "slow.py"
    sink.write_text("import time\ntime.sleep(60)\n")
    env = clean_env({"PYTHONPATH": f"{tmp_path}{os.pathsep}{clean_env()['PYTHONPATH']}"})
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli(
            ["tick", "--db", str(tmp_path / "l.db"), "--sink", "slow:x", *OFFLINE],
            env=env,
            timeout=3,
        )


def test_an_interpreter_setting_is_execd_not_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECLAIM_TEST_EXEC", raising=False)
    env = clean_env({"PYTHONHASHSEED": "7"})
    assert (
        forkserver.run_forked(
            ["--version"], env=env, base_env=clean_env(), input=None, timeout=60, cwd=None
        )
        is None
    )
    run = run_cli(["--version"], env=env)
    assert run.returncode == 0 and sys.executable in run.args


def _slow_tick(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> tuple[Any, forkserver.ForkedProcess]:
    """Workspace.popen_tick's forked process, kept running by a sink that sleeps;
    with its workspace."""
    from tests.helpers.procs import Workspace

    monkeypatch.delenv("RECLAIM_TEST_EXEC", raising=False)
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(60)\n")
    ws = Workspace(tmp_path / "ws", emulator=None, use_recording_sink=False)
    ws.env_extra["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{clean_env()['PYTHONPATH']}"
    proc = ws.popen_tick("--sink", "slow:x", *OFFLINE)
    assert isinstance(proc, forkserver.ForkedProcess)
    return ws, proc


def test_a_background_tick_can_be_polled_killed_and_waited_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ws, proc = _slow_tick(monkeypatch, tmp_path)
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    proc.kill()
    assert proc.wait(timeout=60) == -9 and proc.poll() == -9
    proc.kill()  # an ended process: nothing sent, no error
    done = ws.popen_tick("--no-such-flag")
    assert done.wait(timeout=60) == 2
    assert "no-such-flag" in done.log_path.read_text()  # type: ignore[attr-defined]


def test_a_signal_in_the_moment_between_exit_and_exit_code_is_not_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The chaos soak killed a forked tick that had just ended: the fork server had
    reaped it, its exit code was not back yet, and `os.kill` raised
    ProcessLookupError into the test (CI rehearsal, stop 31). Popen ignores that
    race (bpo-40550); so does ForkedProcess."""
    from tests.helpers.procs import Workspace

    monkeypatch.delenv("RECLAIM_TEST_EXEC", raising=False)
    ws = Workspace(tmp_path / "ws", emulator=None, use_recording_sink=False)
    proc = ws.popen_tick("--no-such-flag")
    assert isinstance(proc, forkserver.ForkedProcess)
    assert proc.wait(timeout=60) == 2
    # The moment between: the process is gone, its exit code not yet arrived.
    proc._ended.clear()
    with pytest.raises(ProcessLookupError):
        os.kill(proc.pid, 0)
    proc.kill()
    proc.terminate()


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[1])  # after "pid (comm) state"


def test_the_cli_process_is_the_servers_own_child(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # One fork a request: under the suite's coverage every fork starts coverage again
    # and writes a data file, so a watcher process between the two cost as much again.
    _, proc = _slow_tick(monkeypatch, tmp_path)
    try:
        assert _parent_of(proc.pid) == forkserver._get(clean_env()).proc.pid
    finally:
        proc.kill()
    assert proc.wait(timeout=60) == -9


def test_a_client_gone_mid_request_leaves_the_server_serving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    monkeypatch.delenv("RECLAIM_TEST_EXEC", raising=False)
    server = forkserver._get(clean_env())
    for cut in (b"", b"\x00\x00\x01\x00{", b"\x00\x00\x00\x02{]"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(server.path)
            sock.sendall(cut)
    run = forkserver.run_forked(
        ["--version"], env=clean_env(), base_env=clean_env(), input=None, timeout=60, cwd=None
    )
    assert run is not None and run.returncode == 0 and "reclaim-tui" in run.stdout
    assert server.proc.poll() is None
