"""`./dev`, the README's set-up commands (issues 32.16 and 35.5): the first install says
what it is doing, installs come from the lock (constraints.txt) unless the newest are
asked for, and an interrupted test run leaves nothing running."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.test_cli_defects import FAKE_PYTHON
from tests.helpers.procs import REPO_ROOT, clean_env


def _dev(tmp_path: Path, *args: str, sdk: str | None = None) -> tuple[list[str], str]:
    """`./dev ARGS` with a stand-in python3 (its pip and reclaim-tui log their calls):
    (the calls, stderr)."""
    fake = tmp_path / "python3"
    if not fake.exists():
        fake.write_text(FAKE_PYTHON)
        fake.chmod(0o755)
    log = tmp_path / "dev.log"
    log.unlink(missing_ok=True)
    extra = {"PYTHON": str(fake), "RECLAIM_VENV": str(tmp_path / "venv"), "DEV_LOG": str(log)}
    if sdk is not None:
        extra["RECLAIM_SDK"] = sdk
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "dev"), *args],
        env=clean_env(extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines(), done.stderr


def _installs(calls: list[str]) -> list[str]:
    return [c for c in calls if " pip install " in c and "--upgrade pip" not in c]


def test_the_first_demo_says_what_it_installs_and_takes_it_from_the_lock(
    tmp_path: Path,
) -> None:
    calls, said = _dev(tmp_path, "demo")
    (install,) = _installs(calls)
    assert " -c constraints.txt " in install and install.endswith(" -e ."), install
    assert "installing reclaim-tui into" in said and str(tmp_path / "venv") in said, said
    assert re.search(r"installed in \d+ s", said), said
    calls, said = _dev(tmp_path, "demo")
    assert _installs(calls) == [] and "install" not in said, said  # done: not again


def test_a_pinned_sdk_takes_everything_else_from_the_lock(tmp_path: Path) -> None:
    calls, _ = _dev(tmp_path, "demo", sdk="3.3.0")
    (install,) = _installs(calls)
    lock = (tmp_path / "venv" / "constraints-without-sdk.txt").read_text()
    assert f" -c {tmp_path / 'venv' / 'constraints-without-sdk.txt'} " in install, install
    assert install.endswith(" google-genai==3.3.0"), install
    assert "google-genai==" not in lock and "textual==" in lock


def test_newest_ignores_the_lock(tmp_path: Path) -> None:
    calls, said = _dev(tmp_path, "demo", sdk="newest")
    (install,) = _installs(calls)
    assert "constraints" not in install and "--upgrade --upgrade-strategy eager" in install
    assert "google-genai: newest" in said


def test_the_lock_pins_every_package_and_a_verified_sdk() -> None:
    from reclaim_tui.core.gemini.fastpath import FAST_PATH_SDK_VERSIONS

    lines = [
        line
        for line in (REPO_ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^ ;]+( ; .+)?", ln) for ln in lines)
    pins = dict(line.split(" ;")[0].split("==") for line in lines)
    assert pins["google-genai"] in FAST_PATH_SDK_VERSIONS
    assert {"ruff", "mypy", "coverage", "pytest"} <= set(pins)


def _tagged(tag: str) -> list[int]:
    """The processes whose environment carries DEV_TEST_RUN=tag."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"DEV_TEST_RUN={tag}".encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_an_interrupted_test_run_leaves_nothing_behind(tmp_path: Path) -> None:
    """32.16: Ctrl-C of `./dev test` left a fork server and an inbox running 45 s later."""
    ready = tmp_path / "ready.json"
    env = clean_env(
        {"PROBE_READY": str(ready), "RECLAIM_VENV": sys.prefix, "RECLAIM_TEST_WORKERS": "1"}
    )
    dev = subprocess.Popen(
        [
            "bash",
            str(REPO_ROOT / "dev"),
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/fixtures/dev/interrupted_run_probe.py",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a terminal gives a command
        # A terminal's command starts with SIGINT at its default. A suite started in the
        # background of a non-interactive shell (`nohup ./dev test &`) ignores SIGINT, and
        # an ignored signal stays ignored through exec: bash would not even run its trap.
        preexec_fn=_sigint_default,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert dev.poll() is None, dev.communicate()[0]
            assert time.monotonic() < deadline, "the probe never said it was ready"
            time.sleep(0.1)
        probe = json.loads(ready.read_text())
        assert probe["tag"] and all(_alive(pid) for pid in probe["pids"].values()), probe
        os.killpg(dev.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
        out, _ = dev.communicate(timeout=120)
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGKILL)
    text = out.decode(errors="replace")
    left = {name: pid for name, pid in probe["pids"].items() if _alive(pid)}
    tagged = _tagged(probe["tag"])
    for pid in {*left.values(), *tagged}:  # this test leaves nothing either
        os.kill(pid, signal.SIGKILL)
    assert dev.returncode == 130, text
    assert tagged == [], text
    assert left == {}, text


def test_a_run_without_postgresql_ends_by_saying_what_it_did_not_test(tmp_path: Path) -> None:
    """35.8: the PostgreSQL tests skipped silently where the server is not installed."""
    env = clean_env(
        {
            "RECLAIM_VENV": sys.prefix,
            "RECLAIM_TEST_WORKERS": "0",
            "RECLAIM_PG_BIN": str(tmp_path),  # no server here
            "CI": "",  # under CI a missing server fails instead
        }
    )
    run = subprocess.run(
        [
            "bash",
            str(REPO_ROOT / "dev"),
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/unit/test_pg_ledger.py::test_a_cancelled_read_keeps_its_connection",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.strip().splitlines()[-3:]
    assert last[0] == "!!! 1 test NOT RUN (skipped), by reason:", run.stdout
    assert str(tmp_path) in last[1]
    assert "PostgreSQL ledger engine's: it was NOT tested" in last[2]
