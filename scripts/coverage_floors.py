"""Coverage per package, printed, and held to the floors in .ci/coverage-floors.json.

    python scripts/coverage_floors.py REPORT.json            print; exit 1 below a floor
    python scripts/coverage_floors.py REPORT.json --raise    also raise the floors to
                                                            today's figures (never lower)

REPORT.json is `coverage json`'s report of a whole run (`RECLAIM_COVERAGE=1 ./dev test`
writes one). A package is a folder under src/reclaim_tui (core's folders each count as
one: core/engine, core/ledger, core/gemini; core's own modules are "core"). Its figures
are line coverage and branch coverage, in percent. A floor is today's figure less a
margin (`margin` in the floors file): the suite's processes race, and an error branch
one run meets by chance the next may not. Floors only go up: --raise never lowers one,
and tests/unit/test_coverage_floors.py fails on a commit that lowered one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ROOT / ".ci" / "coverage-floors.json"
MEASURES = ("lines", "branches")


def package_of(path: str) -> str | None:
    """The package a measured file belongs to, or None when it is not ours."""
    parts = Path(path).as_posix().split("/")
    if "reclaim_tui" not in parts:
        return None
    rel = parts[len(parts) - parts[::-1].index("reclaim_tui") :]
    if len(rel) > 2 and rel[0] == "core":
        return f"core/{rel[1]}"
    return rel[0] if len(rel) > 1 else "reclaim_tui"


def figures(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{package: {"lines": percent, "branches": percent}} from a `coverage json` report."""
    sums: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for path, data in report["files"].items():
        package = package_of(path)
        if package is None:
            continue
        summary = data["summary"]
        totals = sums[package]
        totals["statements"] += summary["num_statements"]
        totals["covered_lines"] += summary["covered_lines"]
        totals["branches"] += summary.get("num_branches", 0)
        totals["covered_branches"] += summary.get("covered_branches", 0)
    out: dict[str, dict[str, float]] = {}
    for package, t in sorted(sums.items()):
        out[package] = {
            "lines": _percent(t["covered_lines"], t["statements"]),
            "branches": _percent(t["covered_branches"], t["branches"]),
        }
    return out


def _percent(part: int, whole: int) -> float:
    return 100.0 if whole == 0 else round(100.0 * part / whole, 2)


def below(measured: dict[str, dict[str, float]], floors: dict[str, Any]) -> list[str]:
    """What is below its floor, and every package without one, in words."""
    problems = []
    for package, figs in measured.items():
        floor = floors["packages"].get(package)
        if floor is None:
            problems.append(f"{package}: no floor in {FLOORS.name} (run with --raise)")
            continue
        for measure in MEASURES:
            if figs[measure] < floor[measure]:
                problems.append(
                    f"{package}: {measure} {figs[measure]:.2f} % is below its floor "
                    f"{floor[measure]:.2f} %"
                )
    return problems


def raised(measured: dict[str, dict[str, float]], floors: dict[str, Any]) -> dict[str, Any]:
    """The floors, each raised to today's figure less the margin; none lowered."""
    margin = float(floors["margin"])
    packages = dict(floors["packages"])
    for package, figs in measured.items():
        old = packages.get(package, {m: 0.0 for m in MEASURES})
        packages[package] = {
            m: max(old[m], math.floor((figs[m] - margin) * 10) / 10) for m in MEASURES
        }
    return {**floors, "packages": dict(sorted(packages.items()))}


def table(measured: dict[str, dict[str, float]], floors: dict[str, Any]) -> str:
    lines = [f"{'package':<16} {'lines %':>8} {'floor':>6} {'branches %':>11} {'floor':>6}"]
    for package, figs in measured.items():
        floor = floors["packages"].get(package, {})
        lines.append(
            f"{package:<16} {figs['lines']:>8.2f} {floor.get('lines', float('nan')):>6.1f}"
            f" {figs['branches']:>11.2f} {floor.get('branches', float('nan')):>6.1f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report", type=Path, help="`coverage json` output")
    parser.add_argument("--floors", type=Path, default=FLOORS)
    parser.add_argument("--raise", dest="raise_", action="store_true", help="raise the floors")
    args = parser.parse_args(argv)
    measured = figures(json.loads(args.report.read_text()))
    floors = json.loads(args.floors.read_text())
    print(table(measured, floors))
    totals = json.loads(args.report.read_text()).get("totals", {})
    lines, statements = totals.get("covered_lines", 0), totals.get("num_statements", 0)
    taken, branches = totals.get("covered_branches", 0), totals.get("num_branches", 0)
    line_pct, branch_pct = _percent(lines, statements), _percent(taken, branches)
    print(
        f"{'all':<16} {line_pct:>8.2f} {'':>6} {branch_pct:>11.2f}"
        f"   ({lines}/{statements} lines, {taken}/{branches} branches)"
    )
    if args.raise_:
        floors = raised(measured, floors)
        args.floors.write_text(json.dumps(floors, indent=2) + "\n")
        print(f"floors raised where today's figures allow: {args.floors}")
    problems = below(measured, floors)
    for problem in problems:
        print(f"COVERAGE BELOW ITS FLOOR: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
