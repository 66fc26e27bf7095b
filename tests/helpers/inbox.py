"""`reclaim-tui inbox` on a free loopback port, for end-to-end and chaos tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.helpers.ports import free_port

__all__ = ["InboxProcess"]


class InboxProcess:
    """Receives the emulator's dynamic webhooks (JWTs checked against its JWKS)."""

    def __init__(
        self, db: Path, jwks_url: str, log_dir: Path, *flags: str, port: int | None = None
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/webhooks/gemini"
        self.log_path = log_dir / f"inbox-{self.port}.log"
        self.args = [
            sys.executable,
            "-m",
            "reclaim_tui",
            "inbox",
            "--db",
            str(db),
            "--listen",
            f"127.0.0.1:{self.port}",
            "--jwks-url",
            jwks_url,
            *flags,
        ]
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout: float = 30.0) -> InboxProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECLAIM_")}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"inbox exited: {self.log_path.read_text()}")
            if self.up():
                return self
            time.sleep(0.05)
        raise RuntimeError(f"inbox did not start: {self.log_path.read_text()}")

    def up(self) -> bool:
        """An unsigned POST is refused with 401 once the inbox listens."""
        request = urllib.request.Request(self.url, data=b"{}", method="POST")
        try:
            urllib.request.urlopen(request, timeout=2)
        except urllib.error.HTTPError as exc:
            return exc.code == 401
        except OSError:
            return False
        return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> InboxProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
