"""Small CLI defects of issue 25 (item 8), each through the real CLI in a
fresh process (tests/helpers.run_cli), as a user meets them."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_cli
from tests.helpers.procs import write_jobs

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"


def test_run_once_with_the_api_down_exits_6_like_tick(tmp_path: Path) -> None:
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "unsent", "key": "unsent"}])
    common = ["--base-url", DEAD_API, "--api-key", "k", "--jobs", str(jobs)]
    tick = run_cli(["tick", "--db", str(tmp_path / "a.db"), *common])
    assert tick.returncode == 6, tick.stderr
    once = run_cli(["run", "--once", "--db", str(tmp_path / "b.db"), *common])
    assert once.returncode == 6, (once.stdout, once.stderr)
    assert "Traceback" not in once.stderr
