"""Every example of docs/python-api.md, run as a user runs it: its own
Python process, in an empty folder, against the emulator over HTTP (the
real google-genai SDK), configured by the environment alone."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.emulator import EmulatorProcess

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    emu = EmulatorProcess(tmp_path_factory.mktemp("emulator")).start()
    try:
        yield emu
    finally:
        emu.stop()


def test_the_page_has_its_examples() -> None:
    assert len(EXAMPLES) == 3


@pytest.mark.parametrize("number", range(len(EXAMPLES)))
def test_each_example_runs_against_the_emulator(
    number: int, emulator: EmulatorProcess, tmp_path: Path
) -> None:
    script = tmp_path / f"example_{number}.py"
    script.write_text(EXAMPLES[number], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECLAIM_", "GEMINI_"))}
    env |= {"RECLAIM_BASE_URL": emulator.base_url, "GEMINI_API_KEY": emulator.api_key}
    # The cron script is one pass a run: run it as cron would, until its jobs are in.
    for _ in range(1 if number else 40):
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        if _statuses(tmp_path) == {"consumed"}:
            break
        time.sleep(0.5)  # cron's interval, shortened
    assert _statuses(tmp_path) == {"consumed"}
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        actors = {row[0] for row in db.execute("SELECT DISTINCT actor FROM events")}
    assert actors and actors <= {"api", "service"}
    if number == 0:
        written = sorted(p.name for p in tmp_path.glob("*.md"))
        assert written == ["rfc9110-summary.md", "rfc9111-summary.md"]
        assert all((tmp_path / name).read_text(encoding="utf-8") for name in written)
    elif number == 1:
        assert len(done.stdout.splitlines()) == 3  # a line per job, each with its result
    else:
        assert done.stdout.startswith("consumed ")


def _statuses(folder: Path) -> set[str]:
    with sqlite3.connect(folder / "ledger.db") as db:
        return {row[0] for row in db.execute("SELECT status FROM jobs")}
