"""Coverage floors (issue 35.6): scripts/coverage_floors.py groups a `coverage json`
report by package, fails below a floor, raises floors but never lowers them; and the
floors file in .ci only ever went up in this repository's history."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.procs import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
try:
    import coverage_floors
finally:
    sys.path.remove(str(REPO_ROOT / "scripts"))

FLOORS = REPO_ROOT / ".ci" / "coverage-floors.json"


def _file(lines: tuple[int, int], branches: tuple[int, int]) -> dict[str, Any]:
    return {
        "summary": {
            "covered_lines": lines[0],
            "num_statements": lines[1],
            "covered_branches": branches[0],
            "num_branches": branches[1],
        }
    }


REPORT = {
    "files": {
        "src/reclaim_tui/core/engine/engine.py": _file((90, 100), (40, 50)),
        "src/reclaim_tui/core/engine/sending.py": _file((10, 100), (10, 50)),
        "src/reclaim_tui/core/sinks.py": _file((75, 100), (3, 4)),
        "src/reclaim_tui/cli/common.py": _file((1, 2), (0, 0)),
        "src/reclaim_tui/config.py": _file((3, 4), (1, 2)),
        "tests/helpers/procs.py": _file((1, 1), (0, 0)),
    },
    "totals": {},
}


def test_files_are_grouped_by_package() -> None:
    assert coverage_floors.figures(REPORT) == {
        "cli": {"lines": 50.0, "branches": 100.0},
        "core": {"lines": 75.0, "branches": 75.0},
        "core/engine": {"lines": 50.0, "branches": 50.0},
        "reclaim_tui": {"lines": 75.0, "branches": 50.0},
    }


def test_below_a_floor_or_without_one_is_a_failure_and_at_it_is_not() -> None:
    measured = coverage_floors.figures(REPORT)
    floors = {
        "margin": 0.5,
        "packages": {
            "cli": {"lines": 50.0, "branches": 100.0},
            "core": {"lines": 75.0, "branches": 75.1},
            "core/engine": {"lines": 50.0, "branches": 50.0},
        },
    }
    assert coverage_floors.below(measured, floors) == [
        "core: branches 75.00 % is below its floor 75.10 %",
        "reclaim_tui: no floor in coverage-floors.json (run with --raise)",
    ]


def test_raising_never_lowers_a_floor() -> None:
    measured = {"core": {"lines": 80.0, "branches": 60.0}, "cli": {"lines": 10.26, "branches": 0}}
    floors = {"margin": 0.5, "packages": {"core": {"lines": 70.0, "branches": 65.0}}}
    assert coverage_floors.raised(measured, floors)["packages"] == {
        "cli": {"lines": 9.7, "branches": 0.0},
        "core": {"lines": 79.5, "branches": 65.0},
    }


def test_the_script_exits_1_below_a_floor(tmp_path: Path) -> None:
    report = tmp_path / "coverage.json"
    report.write_text(json.dumps({**REPORT, "totals": {"percent_covered_display": "60"}}))
    floors = tmp_path / "floors.json"
    packages = {p: {"lines": 0.0, "branches": 0.0} for p in coverage_floors.figures(REPORT)}
    floors.write_text(json.dumps({"margin": 0.5, "packages": packages}))
    script = [sys.executable, str(REPO_ROOT / "scripts" / "coverage_floors.py"), str(report)]
    ok = subprocess.run([*script, "--floors", str(floors)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "core/engine" in ok.stdout and "BELOW" not in ok.stdout
    packages["core"]["lines"] = 99.0
    floors.write_text(json.dumps({"margin": 0.5, "packages": packages}))
    low = subprocess.run([*script, "--floors", str(floors)], capture_output=True, text=True)
    assert low.returncode == 1
    assert "COVERAGE BELOW ITS FLOOR: core: lines 75.00 % is below its floor 99.00 %" in low.stdout


def test_every_package_of_the_source_has_a_floor() -> None:
    floors = json.loads(FLOORS.read_text())["packages"]
    source = REPO_ROOT / "src" / "reclaim_tui"
    packages = {
        coverage_floors.package_of(str(path))
        for path in source.rglob("*.py")
        if path.stat().st_size and path.name != "__init__.py"
    }
    assert packages <= set(floors), packages - set(floors)


def _versions() -> list[dict[str, Any]]:
    """The floors file as committed, oldest first, then as it is in this checkout."""
    rel = FLOORS.relative_to(REPO_ROOT).as_posix()
    try:
        log = subprocess.run(
            ["git", "log", "--reverse", "--format=%H", "--", rel],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no git history to read the floors' past from: {exc}")
    versions = []
    for commit in log:
        shown = subprocess.run(
            ["git", "show", f"{commit}:{rel}"], cwd=REPO_ROOT, capture_output=True, text=True
        )
        if shown.returncode == 0:
            versions.append(json.loads(shown.stdout))
    return [*versions, json.loads(FLOORS.read_text())]


def test_no_floor_was_ever_lowered() -> None:
    versions = _versions()
    for before, after in itertools.pairwise(versions):
        for package, floor in before["packages"].items():
            now = after["packages"].get(package)
            assert now is not None, f"the floor of {package} was removed"
            for measure in ("lines", "branches"):
                assert now[measure] >= floor[measure], (package, measure, floor, now)
