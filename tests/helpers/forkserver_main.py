"""The fork server's own process: `python tests/helpers/forkserver_main.py SOCKET`.

It imports the third-party packages a CLI process of the suite imports (google-genai
alone is ~0.9 s of CPU a process on this machine), then forks one process per request
from the client (tests/helpers/forkserver.py), which becomes `python -m reclaim_tui
ARGS`: its own argv, environment, working folder and standard streams (the request's
file descriptors), the package imported and run as `__main__` in the child, every
module of reclaim_tui imported there, not here. The child ends as a Python process
ends (atexit handlers, non-daemon threads joined, streams flushed); its exit status
goes back to the client.

Deliberately imports nothing of `tests` or `reclaim_tui`: run by path, standalone.

Per request one fork: the CLI process, forked from the server's loop. The loop never
waits on anyone: it reads a request, forks, sends the child's pid, and watches each child
through a pidfd (Linux's file descriptor of a process, readable once it has ended) among
the sockets it selects on; an ended child is reaped there and its exit code (negative:
the signal that ended it, as `subprocess` says it) and CPU time go back to its client.
Why not a watcher process per request: each fork of a process that has the suite's
coverage on starts coverage again and writes a data file when it ends (a watcher's
empty one too), which cost the covered run as much as the watcher saved the loop.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import runpy
import select
import socket
import struct
import sys
import threading
import time
from typing import Any

#: What a CLI process of the suite imports that is not ours (`python -X importtime -m
#: reclaim_tui tick …`, `run`, `inbox`, `submit`, `console` of the suite's tests): a
#: package missing from this environment (psycopg without the extra) is left out.
PRELOAD = (
    "google.genai",
    "google.genai.types",
    # What the SDK imports on first use of `client.aio.interactions` and what the fast
    # path (reclaim_tui/core/gemini/fastpath.py) looks up there; 3.3.0 lacks some.
    "google.genai._gaos.sdk",
    "google.genai._gaos.interactions",
    "google.genai._gaos.google_genai",
    "google.genai._gaos.models",
    "google.genai._gaos.errors",
    "google.genai._gaos.utils",
    "google.genai._gaos.utils.eventstreaming",
    "google.genai._gaos.utils.unmarshal_json_response",
    "google.genai._gaos.types.interactions",
    "google.genai._gaos.lib.compat_errors",
    "google.genai._gaos._hooks.adapters",
    "google.genai._gaos._hooks.google_genai_auth",
    "google.genai._interactions_continuation",
    "httpx2",
    "httpcore2",
    "anyio",
    "aiosqlite",
    "sqlite3",
    "click",
    "pydantic",
    "asyncio",
    "concurrent.futures",
    "ssl",
    "certifi",
    "aiohttp",
    "aiohttp.web",
    "jwt",
    "standardwebhooks",
    "psycopg",
    "psycopg_pool",
    "rich",
)

_LENGTH = struct.Struct("!I")
_REQUEST_SECONDS = 10.0

Request = tuple[dict[str, Any], list[int]]


def _preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    try:  # what the SDK imports lazily when a client is built, without any network
        from google import genai

        client = genai.Client(
            api_key="preload", http_options=genai.types.HttpOptions(base_url="http://127.0.0.1:9")
        )
        _ = client.aio.interactions
    except Exception:
        pass


def _receive(conn: socket.socket) -> Request:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < _LENGTH.size:
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("the client went away mid-request")
        data += more
    (size,) = _LENGTH.unpack_from(data)
    data = data[_LENGTH.size :]
    while len(data) < size:
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("the client went away mid-request")
        data += more
    return json.loads(data), list(fds)


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _start_child(
    conn: socket.socket, children: dict[int, tuple[int, socket.socket]]
) -> Request | None:
    """Read a request from `conn` and fork its CLI process. In that process, the request
    (it then becomes the CLI); in the server, None: it now watches the child through a
    pidfd in `children` (pidfd: (pid, conn)). A request cut short is dropped with its
    connection."""
    # The loop serves every client: one that connects and never sends must not stop it
    # (the suite's clients send their request at once).
    conn.settimeout(_REQUEST_SECONDS)
    try:
        request, fds = _receive(conn)
    except (OSError, EOFError, ValueError):
        conn.close()
        return None
    conn.settimeout(None)
    if threading.active_count() != 1:  # a fork must copy one thread only
        raise RuntimeError("the fork server started a thread")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        # The server's other sockets and pidfds are no business of this process.
        for pidfd, (_, other) in children.items():
            os.close(pidfd)
            other.close()
        conn.close()
        return request, fds
    for fd in fds:
        os.close(fd)
    children[os.pidfd_open(pid)] = (pid, conn)
    try:
        _send(conn, {"pid": pid})
    except OSError:
        pass  # the client went away: the child is still reaped when it ends
    return None


def _finish(pidfd: int, children: dict[int, tuple[int, socket.socket]]) -> None:
    """Reap the ended child behind `pidfd` and send its client the exit code."""
    pid, conn = children.pop(pidfd)
    os.close(pidfd)
    _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    try:
        _send(conn, {"returncode": os.waitstatus_to_exitcode(status), "cpu": cpu})
    except OSError:
        pass  # the client went away (it timed out, or its test ended)
    finally:
        conn.close()


def serve(path: str) -> Request:
    """Accept requests until the client closes our stdin; returns only in a forked CLI
    process, with its request."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    stdin = sys.stdin.fileno()
    children: dict[int, tuple[int, socket.socket]] = {}
    while True:
        poller = select.poll()  # not select.select: a descriptor may be past 1023
        for fd in (listener.fileno(), stdin, *children):
            poller.register(fd, select.POLLIN)
        ready = [fd for fd, _ in poller.poll()]
        if stdin in ready and not os.read(stdin, 1 << 12):
            os._exit(0)  # the client (a pytest process) is gone
        for pidfd in ready:
            if pidfd in children:
                _finish(pidfd, children)
        if listener.fileno() in ready:
            conn, _ = listener.accept()
            started = _start_child(conn, children)
            if started is not None:
                listener.close()
                return started


def become(request: dict[str, Any], fds: list[int]) -> None:
    """This process as `python -m reclaim_tui ARGV` started with the request's
    environment in its folder, on the request's streams."""
    if request.get("new_session"):
        os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    started_with = os.environ.get("PYTHONPATH", "")
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    # sys.path as `python -m` builds it: the working folder, then PYTHONPATH's entries.
    ours = [p for p in started_with.split(os.pathsep) if p]
    rest = [p for p in sys.path[1:] if p not in ours]
    theirs = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *theirs, *rest]
    importlib.invalidate_caches()
    sys.argv = ["-m", *request["argv"]]
    runpy.run_module("reclaim_tui", run_name="__main__", alter_sys=True)


def main() -> None:
    gc.disable()
    _preload()
    # A pre-fork server's recipe (the gc module's documentation): what the preload made
    # goes to the permanent generation, so no collection in a child walks it and copies
    # every page it touches; the child collects as usual.
    gc.freeze()
    request, fds = serve(sys.argv[1])
    gc.enable()
    become(request, fds)


if __name__ == "__main__":
    main()
