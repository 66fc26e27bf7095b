"""`python -m reclaim_tui ARGS` to completion, forked from a process that has already
imported the third-party packages (tests/helpers/forkserver_main.py).

Why: a CLI process of the suite spends ~1 s of CPU importing google-genai, pydantic,
httpx and aiohttp before it runs a line of ours, and the suite runs ~1,000 of them on two
cores: most of its time. A forked child is still a separate process running the real
CLI from `reclaim_tui.__main__` with its own argv, environment, working folder and
streams (it can be killed, it crashes as a process crashes, its exit code is its own);
what it shares is the interpreter's start and the third-party modules already imported.

Not forked, exec'd as before (`subprocess.run`):
- when `RECLAIM_TEST_EXEC=1` (the whole suite the old way: run it so before trusting a
  change to start-up, imports or the interpreter's settings);
- when the child's environment changes how the interpreter starts (a `PYTHON*`
  variable other than PYTHONPATH, the locale), which a fork cannot redo;
- the tests of start-up itself (tests/unit/test_startup.py, test_idle_tick.py: which
  modules a command imports) and the services, inboxes and consoles the tests start
  with `subprocess.Popen` themselves. Background ticks (`Workspace.popen_tick`: the
  chaos soaks' workers) are forked too (`popen_forked`).
One fork server per pytest process (each xdist worker), started on first use, ended
when that process ends (it reads its stdin until EOF).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import locale
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["ForkedProcess", "forking_enabled", "popen_forked", "run_forked"]

_MAIN = Path(__file__).with_name("forkserver_main.py")
_LENGTH = struct.Struct("!I")
#: What the interpreter reads only when it starts: a child whose environment differs
#: here from the server's is exec'd.
_STARTUP_PREFIXES = ("PYTHON", "LC_")
_STARTUP_NAMES = frozenset({"LANG", "LANGUAGE"})


class _Server:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.folder = tempfile.mkdtemp(prefix="rt-fork-")
        self.path = os.path.join(self.folder, "s")
        self.proc = subprocess.Popen(
            [sys.executable, str(_MAIN), self.path],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=self.folder,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line != b"ready\n":
            raise RuntimeError(f"the fork server did not start: {line!r}")

    def compatible(self, env: Mapping[str, str]) -> bool:
        def startup(e: Mapping[str, str]) -> dict[str, str]:
            return {
                k: v
                for k, v in e.items()
                if (k.startswith(_STARTUP_PREFIXES) or k in _STARTUP_NAMES) and k != "PYTHONPATH"
            }

        return startup(env) == startup(self.env)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.folder, ignore_errors=True)  # the socket's folder


_lock = threading.Lock()
_server: _Server | None = None
_server_pid: int | None = None


def forking_enabled() -> bool:
    return os.environ.get("RECLAIM_TEST_EXEC", "") not in ("1", "true", "yes")


def _get(base_env: Mapping[str, str]) -> _Server:
    global _server, _server_pid
    with _lock:
        if _server is None or _server_pid != os.getpid() or _server.proc.poll() is not None:
            _server = _Server(base_env)
            _server_pid = os.getpid()
            atexit.register(_server.close)
        return _server


class _Lines:
    """The server's one-line replies; a timeout leaves what was read in place."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def next(self) -> bytes:
        while b"\n" not in self.buffer:
            more = self.sock.recv(1 << 12)
            if not more:
                return b""
            self.buffer += more
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


def _text(data: bytes) -> str:
    # As subprocess.run(text=True) decodes: the locale's encoding, universal newlines.
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _start(
    server: _Server,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: Path | None,
    fds: list[int],
    new_session: bool = False,
) -> tuple[socket.socket, _Lines, int]:
    request = json.dumps(
        {
            "argv": list(args),
            "env": dict(env),
            "cwd": str(cwd or os.getcwd()),
            "new_session": new_session,
        }
    )
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(server.path)
        socket.send_fds(sock, [_LENGTH.pack(len(request)) + request.encode()], fds)
        replies = _Lines(sock)
        pid = json.loads(replies.next())["pid"]
    except BaseException:
        sock.close()
        raise
    return sock, replies, pid


def _server_for(env: Mapping[str, str], base_env: Mapping[str, str]) -> _Server | None:
    if not forking_enabled():
        return None
    server = _get(base_env)
    return server if server.compatible(env) else None


def run_forked(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    base_env: Mapping[str, str],
    input: str | None,
    timeout: float,
    cwd: Path | None,
) -> subprocess.CompletedProcess[str] | None:
    """The finished process, as `subprocess.run(capture_output=True, text=True)` gives
    it; None when this child must be exec'd instead (see the module's docstring)."""
    server = _server_for(env, base_env)
    if server is None:
        return None
    argv = [sys.executable, "-m", "reclaim_tui", *args]
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryFile() as stdin,
    ):
        if input is not None:
            stdin.write(input.encode(locale.getpreferredencoding(False)))
            stdin.flush()
            stdin.seek(0)
        sock, replies, pid = _start(
            server, args, env, cwd, [stdin.fileno(), out.fileno(), err.fileno()]
        )
        with sock:
            sock.settimeout(timeout)
            try:
                line = replies.next()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):  # ended just then
                    os.kill(pid, signal.SIGKILL)
                sock.settimeout(30)
                replies.next()
                out.seek(0)
                err.seek(0)
                raise subprocess.TimeoutExpired(
                    argv, timeout, output=_text(out.read()), stderr=_text(err.read())
                ) from None
        if not line:
            raise RuntimeError("the fork server went away")
        returncode = json.loads(line)["returncode"]
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, returncode, _text(out.read()), _text(err.read()))


class ForkedProcess:
    """What the suite uses of `subprocess.Popen` (pid, poll, wait, send_signal, kill,
    terminate, returncode) for a process the fork server started; a thread waits for
    its exit code (the tests poll and kill from other threads than the one waiting).
    A signal goes to the pid until the exit code has arrived (the server reaps at once,
    so a signal sent in between meets no process: ignored, as Popen does)."""

    def __init__(self, args: list[str], sock: socket.socket, replies: _Lines, pid: int) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()
        self._waiter = threading.Thread(target=self._wait_for_exit, args=(sock, replies))
        self._waiter.daemon = True
        self._waiter.start()

    def _wait_for_exit(self, sock: socket.socket, replies: _Lines) -> None:
        with sock:
            line = replies.next()
        # No line: the server died (never seen); as an unknown failure, not a hang.
        self.returncode = json.loads(line)["returncode"] if line else -signal.SIGKILL
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode if self._ended.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if not self._ended.is_set():
            # Reaped by the server, its exit code not back yet: ended, as Popen
            # ignores the same race (bpo-40550).
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def popen_forked(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    base_env: Mapping[str, str],
    output: int,
    cwd: Path | None = None,
    new_session: bool = False,
) -> ForkedProcess | None:
    """`python -m reclaim_tui ARGS` in the background, stdout and stderr on the file
    descriptor `output` (stdin: /dev/null), in a session of its own if `new_session`
    (Popen's `start_new_session`); None when it must be exec'd instead."""
    server = _server_for(env, base_env)
    if server is None:
        return None
    with open(os.devnull, "rb") as null:
        fds = [null.fileno(), output, output]
        sock, replies, pid = _start(server, args, env, cwd, fds, new_session)
    return ForkedProcess([sys.executable, "-m", "reclaim_tui", *args], sock, replies, pid)
