"""Start-up (issue 14): a tick with nothing due never imports google-genai
(~1 s of CPU); the SDK is imported on the first API call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_TICK = """
import asyncio, sys
from reclaim_tui.bootstrap import open_engine
from reclaim_tui.config import Settings
from reclaim_tui.core.models import Actor, JobSpec

async def main(jobs):
    settings = Settings(db=sys.argv[1], out=sys.argv[2], base_url="http://127.0.0.1:9")
    async with open_engine(settings, actor=Actor.TICK) as engine:
        await engine.tick(jobs)

jobs = [JobSpec(input="x", model="m")] if sys.argv[3] == "job" else []
asyncio.run(main(jobs))
print("google.genai" in sys.modules)
"""


@pytest.mark.parametrize(("work", "imported"), [("idle", "False"), ("job", "True")])
def test_the_sdk_is_imported_only_when_a_call_is_due(
    tmp_path: Path, work: str, imported: str
) -> None:
    args = [sys.executable, "-c", _TICK, str(tmp_path / "l.db"), str(tmp_path / "out"), work]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == imported
