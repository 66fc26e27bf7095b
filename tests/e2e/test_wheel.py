"""The package as a user installs it: the wheel built from this tree,
installed into a fresh virtualenv (not editable, as pipx or `uv tool` would),
run cold — `--help`, the Python API's import, and the demo's console in a
real terminal until `q`."""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: One worker builds the wheel for both tests (the fixture is the module's).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]
#: What the build reads: pyproject.toml names the readme, the licence and `src`.
BUILT_FROM = ("pyproject.toml", "README.md", "LICENSE", "src")


def _pip(python: Path, *args: str, cwd: Path) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a fresh virtualenv holding the wheel and its dependencies."""
    work = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools writes `build/` and an egg-info beside the
    # sources, which another build of this tree (a concurrent run, the
    # developer's own) may be writing or removing at the same moment.
    tree = work / "tree"
    for name in BUILT_FROM:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
            )
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy2(source, tree / name)
    _pip(
        Path(sys.executable),
        "wheel",
        "--no-deps",
        "-q",
        "-w",
        str(work / "dist"),
        str(tree),
        cwd=work,
    )
    [wheel] = list((work / "dist").glob("reclaim_tui-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=300)
    python = work / "venv" / "bin" / "python"
    _pip(python, "install", "-q", str(wheel), cwd=work)
    return python.parent


def test_the_installed_wheel_runs_its_cli_and_its_api(installed: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECLAIM_", "PYTHON"))}
    help_text = subprocess.run(
        [str(installed / "reclaim-tui"), "--help"], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert help_text.returncode == 0 and "tick" in help_text.stdout
    code = "import reclaim_tui, reclaim_tui.api; print(reclaim_tui.__file__)"
    where = subprocess.run(
        [str(installed / "python"), "-c", code], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert "site-packages" in where.stdout  # the wheel's copy, not this tree's


def test_the_demo_runs_from_the_wheel_in_a_terminal(installed: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECLAIM_", "PYTHON"))}
    env |= {"TERM": "xterm-256color", "COLUMNS": "160", "LINES": "48"}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    pid, fd = pty.fork()
    if pid == 0:  # the child: the demo, on the pty
        os.chdir(tmp_path)
        os.execve(str(installed / "reclaim-tui"), ["reclaim-tui", "demo", "--jobs", "4"], env)
    import fcntl
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    screen = b""

    def read_for(seconds: float) -> None:
        nonlocal screen
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    return  # the child closed the terminal
                if not chunk:
                    return
                screen += chunk

    status = None
    try:
        deadline = time.monotonic() + 180
        while b"reserving" not in screen and b"submitted" not in screen:
            assert time.monotonic() < deadline, screen[-2000:]
            read_for(1.0)
        os.write(fd, b"q")
        # Keep reading while it quits: a child whose terminal is full would
        # block on its next write and never exit.
        deadline = time.monotonic() + 120
        while status is None and time.monotonic() < deadline:
            read_for(1.0)
            time.sleep(0.1)  # a closed terminal reads as ready at once
            done, waited = os.waitpid(pid, os.WNOHANG)
            if done:
                status = waited
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert status is not None, ("the demo did not quit on q", screen[-3000:])
    assert os.waitstatus_to_exitcode(status) == 0, screen[-3000:]
    assert b"The demo's files are kept" in screen
