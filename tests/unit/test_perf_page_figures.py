"""The performance page's figures per design (a results file's `designs`,
written by benchmarks/ledger_only.py --results): each row says what its
client and server CPU per job imply for one core of each."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _perf_page() -> ModuleType:
    spec = importlib.util.spec_from_file_location("perf_page", ROOT / "scripts" / "perf_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_designs_server_cpu_becomes_its_jobs_and_commits_per_server_core() -> None:
    perf = _perf_page()
    lines = perf.figures(
        [
            {
                "design": "ours",
                "jobs": 5000,
                "jobs_per_s": 812.4,
                "commits_per_job": 0.08,
                "server_cpu_ms_per_job": 0.4,
                "client_cpu_ms_per_job": 1.25,
            },
            {
                "design": "sqlite",
                "jobs": 5000,
                "jobs_per_s": 900.0,
                "commits_per_job": 0.078,
                "server_cpu_ms_per_job": None,
            },
        ]
    )
    # 1000 / 1.25 ms = 800 jobs/s a client core; 1000 / 0.4 ms = 2,500 a
    # server core, × 0.08 commits = 200 commits/s.
    assert lines[2] == "| ours | 5,000 | 812 | 0.080 | 1.25 | 0.400 | 800 | 2,500 | 200 |"
    assert lines[3] == "| sqlite | 5,000 | 900 | 0.078 | – | – | – | – | – |"


def test_ratios_are_the_median_of_the_rounds_and_every_round_is_shown() -> None:
    perf = _perf_page()
    lines = perf.ratios({"a / b": [0.5, 2.0, 1.0], "c / d": [1.0, 3.0]})
    assert lines == [
        "- a / b: **1.00×** (rounds: 0.50, 2.00, 1.00)",
        "- c / d: **2.00×** (rounds: 1.00, 3.00)",
    ]
