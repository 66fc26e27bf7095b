"""Running the real CLI in subprocesses against one ledger file.

A `Workspace` is one ledger, one article directory and one delivery log (the
recording sink of `tests.helpers.sinks`), wired to an emulator. Every run is
`python -m reclaim_tui …` in a fresh process with a clean environment: no
API key or RECLAIM_* variable leaks in from the outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from tests.helpers.emulator import EmulatorProcess
from tests.helpers.forkserver import popen_forked, run_forked
from tests.helpers.ledgerdb import LedgerView

__all__ = [
    "FAST_FLAGS",
    "REPO_ROOT",
    "Workspace",
    "clean_env",
    "run_cli",
    "write_jobs",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Short timeouts: the CLI refuses a lease < 3 × (request + busy timeout).
FAST_FLAGS = ("--request-timeout", "1", "--busy-timeout", "1", "--lease-seconds", "6")
SINK_SPEC = "tests.helpers.sinks:record"
_SCRUB = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without keys or RECLAIM_* settings, with the
    repository on PYTHONPATH so `--sink tests.helpers.sinks:record` imports."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB and not k.startswith("RECLAIM_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def run_cli(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120.0,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m reclaim_tui ARGS` to completion (text output captured): forked from
    the fork server when it can be (tests/helpers/forkserver.py says when and why)."""
    forked = run_forked(
        args,
        env=env if env is not None else clean_env(),
        base_env=clean_env(),
        input=input,
        timeout=timeout,
        cwd=cwd,
    )
    if forked is not None:
        return forked
    return subprocess.run(
        [sys.executable, "-m", "reclaim_tui", *args],
        env=dict(env) if env is not None else clean_env(),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def write_jobs(path: Path, jobs: Iterable[Mapping[str, Any] | str]) -> Path:
    lines = [j if isinstance(j, str) else json.dumps(j) for j in jobs]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def only_taken_by(command: str, flags: Sequence[str]) -> list[str]:
    """`flags` (`--name value` pairs and bare switches) without those `command`
    does not take: each command has only the flags it uses (`cancel` has no
    `--concurrency`), and a workspace holds one set for all of them."""
    from reclaim_tui.cli import cli  # the CLI itself says which flags each command takes

    def switches(name: str) -> dict[str, bool]:
        found = cli.get_command(click.Context(cli), name)  # lazy commands too
        assert found is not None, name
        params = found.params
        return {o: p.is_flag for p in params if isinstance(p, click.Option) for o in p.opts}

    taken, known = switches(command), switches("tick")
    kept: list[str] = []
    i = 0
    while i < len(flags):
        width = 1 if known.get(flags[i], taken.get(flags[i], False)) else 2
        if flags[i] in taken:
            kept += flags[i : i + width]
        i += width
    return kept


@dataclass
class Workspace:
    """One ledger + article directory + delivery log, wired to an emulator."""

    root: Path
    emulator: EmulatorProcess | None
    lookup: bool = False
    orphan_policy: str | None = None
    use_recording_sink: bool = True
    pass_api_key: bool = True
    extra_flags: tuple[str, ...] = ()
    env_extra: dict[str, str] = field(default_factory=dict)

    #: a PostgreSQL URL: the ledger lives there instead of root/ledger.db
    db_url: str | None = None

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.db: Path | str = self.db_url or self.root / "ledger.db"
        self.out = self.root / "articles"
        self.sink_log = self.root / "deliveries.log"

    # -- commands ----------------------------------------------------------------------
    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        base = {
            "RECLAIM_TEST_SINK_DIR": str(self.out),
            "RECLAIM_TEST_SINK_LOG": str(self.sink_log),
            **self.env_extra,
        }
        return clean_env({**base, **(extra or {})})

    def engine_flags(self, command: str = "tick") -> list[str]:
        """This workspace's flags, those `command` takes (tick takes them all)."""
        flags = ["--db", str(self.db), "--out", str(self.out), *FAST_FLAGS]
        if self.emulator is not None:
            flags += ["--base-url", self.emulator.base_url]
            if self.pass_api_key:
                flags += ["--api-key", self.emulator.api_key]
        if self.lookup:
            flags.append("--emulator-lookup")
        if self.orphan_policy:
            flags += ["--orphan-policy", self.orphan_policy]
        if self.use_recording_sink:
            flags += ["--sink", SINK_SPEC]
        return only_taken_by(command, [*flags, *self.extra_flags])

    def tick_args(self, *extra: str, jobs: Path | str | None = None) -> list[str]:
        args = ["tick", *self.engine_flags(), *extra]
        if jobs is not None:
            args += ["--jobs", str(jobs)]
        return args

    def tick(
        self,
        *extra: str,
        jobs: Path | str | None = None,
        crash_at: str | None = None,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
        timeout: float = 120.0,
    ) -> subprocess.CompletedProcess[str]:
        more = dict(env or {})
        if crash_at:
            more["RECLAIM_CRASH_AT"] = crash_at
        return run_cli(
            self.tick_args(*extra, jobs=jobs), env=self.env(more), input=input, timeout=timeout
        )

    def popen_tick(
        self,
        *extra: str,
        jobs: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        log_name: str | None = None,
    ) -> subprocess.Popen[bytes]:
        """A tick in the background; stdout+stderr go to a file under root."""
        log_path = self.root / (log_name or f"tick-{time.monotonic_ns()}.log")
        args = self.tick_args(*extra, jobs=jobs)
        with open(log_path, "wb") as log:
            forked = popen_forked(
                args, env=self.env(env), base_env=clean_env(), output=log.fileno()
            )
            if forked is not None:
                forked.log_path = log_path  # type: ignore[attr-defined]
                return forked  # type: ignore[return-value]  # Popen's part the tests use
            proc = subprocess.Popen(
                [sys.executable, "-m", "reclaim_tui", *args],
                env=self.env(env),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        proc.log_path = log_path  # type: ignore[attr-defined]
        return proc

    def cli(
        self,
        command: str,
        *args: str,
        engine: bool = True,
        env: Mapping[str, str] | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Any CLI command on this ledger; `engine=False` for the read-only
        commands that take only `--db` (status, show, export)."""
        flags = self.engine_flags(command) if engine else ["--db", str(self.db)]
        return run_cli([command, *flags, *args], env=self.env(env), input=input)

    # -- reading -----------------------------------------------------------------------
    def view(self) -> LedgerView:
        return LedgerView(self.db)

    def deliveries(self) -> list[dict[str, str]]:
        """One entry per completed delivery of the recording sink."""
        if not self.sink_log.exists():
            return []
        out = []
        for line in self.sink_log.read_text(encoding="utf-8").splitlines():
            idem, interaction_id, digest = line.split("\t")
            out.append({"idem": idem, "interaction_id": interaction_id, "sha256": digest})
        return out

    # -- driving -----------------------------------------------------------------------
    def settle(
        self,
        *,
        max_ticks: int = 12,
        max_wait: float = 3.0,
        extra: Sequence[str] = (),
        confirm: bool = True,
    ) -> list[subprocess.CompletedProcess[str]]:
        """Run ticks until every row is terminal or held, then (`confirm`) one
        more tick that must change nothing (same rows, same events). Waits for
        the next due row between ticks instead of spinning."""
        runs: list[subprocess.CompletedProcess[str]] = []
        for _ in range(max_ticks):
            view = self.view()
            if view.quiescent():
                if not confirm:
                    return runs
                before = view.fingerprint()
                runs.append(self.tick(*extra))
                after = self.view().fingerprint()
                if before == after:
                    return runs
                continue
            # Not spinning through the ticks while a killed host's lease runs.
            wait = view.seconds_until_workable()
            if wait is not None and wait > 0:
                time.sleep(min(wait + 0.05, max_wait))
            runs.append(self.tick(*extra))
        raise AssertionError(
            f"ledger did not settle after {max_ticks} ticks: {self.view().status_counts()}\n"
            + "\n".join(r.stderr[-2000:] for r in runs[-3:])
        )
