"""Regenerate the fleet's screenshots (issue 25), at 160×48 and at 80×24: a
ledger real processes work on, each as its own "host" (RECLAIM_OWNER_HOST,
the host of its owner string), as a fleet would on PostgreSQL:

    cron-01    a cron `tick` (it passed once and stopped)
    batch-02   a `run` service, up, passing every 5 s
    edge-01    the webhook `inbox`
    here       a service killed with SIGKILL (gone: no clean exit) and the
               console's own engine

all on an emulator (`reclaim-tui emulator`), then the console's `:fleet`.

    python scripts/screenshots_fleet.py [--out screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from screenshots import SIZE, SMALL, fresh_run_dir, shoot, type_keys

from reclaim_tui.config import Settings
from reclaim_tui.tui.launch import make_app

KEY = "fleet-shots"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "reclaim_tui", *args]


def _env(host: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RECLAIM_OWNER_HOST", None)
    if host:
        env["RECLAIM_OWNER_HOST"] = host
    return env


def _wait(predicate: Callable[[], bool], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the fleet's processes did not start")
        time.sleep(0.1)


def _jobs(path: Path, what: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"input": f"{what} {i}"}) + "\n" for i in range(n)))
    return path


def _passed(log: Path) -> bool:
    return log.exists() and '"event":"pass"' in log.read_text()


def _start(procs: list[subprocess.Popen[bytes]], args: list[str], host: str | None, log: Path):  # type: ignore[no-untyped-def]
    with open(log, "ab") as out:
        proc = subprocess.Popen(args, env=_env(host), stdout=out, stderr=subprocess.STDOUT)
    procs.append(proc)
    return proc


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    run = fresh_run_dir("fleet")
    db = str(run / "ledger.db")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        emulator_log = run / "emulator.log"
        _start(procs, _cli("emulator", "--port", "0", "--latency", "3"), None, emulator_log)
        _wait(lambda: "emulator on http" in emulator_log.read_text())
        found = re.search(r"emulator on (http://\S+)", emulator_log.read_text())
        assert found is not None
        api = ["--base-url", found[1], "--api-key", KEY, "--db", db, "--out", str(run / "out")]
        subprocess.run(
            _cli("tick", *api, "--jobs", str(_jobs(run / "cron.jsonl", "nightly digest", 4))),
            env=_env("cron-01"),
            check=True,
            capture_output=True,
        )
        batch = run / "batch-02.log"
        service = _cli("run", *api, "--idle-sleep", "5")
        jobs = _jobs(run / "batch.jsonl", "catalogue summary", 12)
        _start(procs, [*service, "--jobs", str(jobs), "--log", str(batch)], "batch-02", batch)
        inbox = _cli(
            "inbox", "--db", db, "--listen", "127.0.0.1:0", "--secret", "whsec_" + "A" * 32
        )
        _start(procs, inbox, "edge-01", run / "edge-01.log")
        doomed_log = run / "doomed.log"
        doomed = _start(procs, [*service, "--log", str(doomed_log)], None, doomed_log)
        _wait(lambda: _passed(batch) and _passed(doomed_log))
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        settings = Settings(db=db, out=str(run / "out"), base_url=found[1], api_key=KEY)
        asyncio.run(_shots(settings, out))
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)


async def _shots(settings: Settings, out: Path) -> None:
    """The console on that ledger (its own engine registers too): `:fleet`."""
    app = make_app(settings, interval=2.0)
    app.animation_level = "none"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(4.0)  # the console's engine up, a pass or two
        for size, suffix in ((SIZE, ""), (SMALL, "-80x24")):
            await pilot.resize_terminal(*size)
            await pilot.press("colon")
            await type_keys(pilot, "fleet")
            await pilot.press("enter")
            await shoot(app, pilot, out, f"fleet{suffix}", wait=1.0)
            await pilot.press("escape")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    main(parser.parse_args().out)
