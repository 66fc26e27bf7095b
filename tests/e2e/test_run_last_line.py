"""`run`'s log ends with why it stopped, whatever stopped it (issue 33, 3):
here a jobs file with a bad line, refused before the service starts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run_cli


def test_a_refused_jobs_file_is_the_logs_last_line(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"input": "fine"}\nnot json\n')
    log = tmp_path / "run.log"
    done = run_cli(["run", "--db", str(tmp_path / "l.db"), "--jobs", str(jobs), "--log", str(log)])
    assert done.returncode == 3, done.stderr
    last = json.loads(log.read_text().splitlines()[-1])
    assert (last["event"], last["code"]) == ("stopped", 3)
    assert "line 2" in last["error"] and "jobs file" in last["hint"]
