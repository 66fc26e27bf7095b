"""The emulator as its own process (`python -m reclaim_tui emulator`), so it
outlives every worker a test kills, plus a small sync client of its admin API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from reclaim_tui.emulator.admin import AdminClient
from tests.helpers.forkserver import popen_forked
from tests.helpers.ports import free_port

__all__ = ["EmulatorProcess"]


class EmulatorProcess:
    """`reclaim-tui emulator` on a free loopback port.

    `flags` are extra command-line flags (`--drop-rate 0.05` …); faults can
    also be changed at run time with `set_faults`.
    """

    def __init__(
        self,
        log_dir: Path,
        *,
        api_key: str = "emulator-key",
        latency: float = 0.0,
        seed: int = 0,
        flags: tuple[str, ...] = (),
    ) -> None:
        self.api_key = api_key
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.admin = AdminClient(self.base_url)
        self.log_path = log_dir / f"emulator-{self.port}.log"
        self._args = [
            sys.executable,
            "-m",
            "reclaim_tui",
            "emulator",
            "--port",
            str(self.port),
            "--api-key",
            api_key,
            "--latency",
            str(latency),
            "--seed",
            str(seed),
            *flags,
        ]
        self._proc: subprocess.Popen[bytes] | None = None

    # -- lifecycle -------------------------------------------------------------------
    def start(self, timeout: float = 20.0) -> EmulatorProcess:
        log = open(self.log_path, "wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECLAIM_")}
        env["PYTHONUNBUFFERED"] = "1"
        # Forked from the suite's fork server when it can be (tests/helpers/forkserver.py).
        from tests.helpers.procs import clean_env  # procs imports this module

        forked = popen_forked(
            self._args[3:],
            env=env,
            base_env=clean_env(),
            output=log.fileno(),
            new_session=True,
        )
        self._proc = forked or subprocess.Popen(  # type: ignore[assignment]
            self._args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"emulator exited: {self.log_path.read_text()}")
            try:
                self.stats()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"emulator did not start: {self.log_path.read_text()}")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- admin API (reclaim_tui.emulator.admin) ---------------------------------------
    def stats(self) -> dict[str, Any]:
        return self.admin.stats()

    def creates(self) -> list[dict[str, Any]]:
        """The emulator's own log of every interaction it created (the
        independent record the ledger is checked against)."""
        return self.admin.creates()

    def creates_by_idem(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for entry in self.creates():
            out.setdefault(entry["idem"], []).append(entry)
        return out

    def create_counts(self) -> Counter[str]:
        return Counter(entry["idem"] for entry in self.creates())

    def set_faults(self, **faults: Any) -> dict[str, Any]:
        return self.admin.set_faults(faults)

    def find(self, idem: str) -> list[dict[str, Any]]:
        return self.admin.find(idem)

    def finish(self, interaction_id: str, status: str, text: str | None = None) -> Any:
        return self.admin.finish(interaction_id, status, text)

    def alive(self) -> bool:
        try:
            self.stats()
        except OSError:  # AdminError: no answer, or not a 2xx one
            return False
        return True
