"""Write the performance tables from the benchmark results (one source for every figure).

Each file of benchmarks/results/*.json is one measured run: its command, date,
machine and load, the rows it adds to the table, the figures, and a note on
what the figures mean. A benchmark that writes its own results file
(benchmarks/ledger_only.py --results) adds `designs` (jobs/s, commits and
server CPU per job, by design) and `ratios` (round by round), tabulated
under its section with what they imply per server core. This script writes from them:

- docs/performance.md, the manual's performance page, whole;
- the table between the markers of benchmarks/README.md.

Neither is edited by hand: change a result file (or add one, after a run) and
run `python scripts/perf_page.py`. tests/unit/test_docs.py checks that both
are what this script writes.

    python scripts/perf_page.py [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "performance.md"
BENCH_README = ROOT / "benchmarks" / "README.md"
BEGIN = "<!-- the table: written by scripts/perf_page.py from results/*.json -->"
END = "<!-- end of the table -->"

#: The table's order; a result file not named here comes after these, by name.
ORDER = [
    "cpu_per_call",
    "transport",
    "throughput",
    "latency",
    "startup",
    "service",
    "dbos",
    "sink",
    "webhooks",
    "ledger_only",
    "ledger_sqlite_processes",
    "ledger_pg_anchors",
    "postgres",
    "postgres_console",
    "console",
]
COLUMNS = ("benchmark", "reclaim_tui", "baseline", "ratio", "target")
REQUIRED = ("title", "command", "date", "machine", "load", "rows")

INTRO = """\
# Performance

Every benchmark runs reclaim-tui and the original design
(`benchmarks/baseline/seed_ledger.py`, the seed ported to the real SDK) side by
side, in one run, against one emulator process with the same jobs; each
measured run is a fresh process, and the figures are medians. The machine is
small and shared (two cores), so the ratios measured within one run are the
figures to trust; each row's date, load and command are under
[Where each figure comes from](#where-each-figure-comes-from).
`benchmarks/README.md` says how to run them.

This page is written by `scripts/perf_page.py` from `benchmarks/results/*.json`:
a figure is typed once, in its result file.
"""


def slug(text: str) -> str:
    """The anchor Python-Markdown's toc gives a heading (its default slugify)."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def load() -> list[tuple[str, dict[str, Any]]]:
    found = {path.stem: path for path in RESULTS.glob("*.json")}
    names = [n for n in ORDER if n in found] + sorted(set(found) - set(ORDER))
    results = []
    for name in names:
        result = json.loads(found[name].read_text(encoding="utf-8"))
        missing = [key for key in REQUIRED if key not in result]
        if missing:
            sys.exit(f"{found[name]}: missing {', '.join(missing)}")
        for row in result["rows"]:
            if set(row) != set(COLUMNS):
                sys.exit(f"{found[name]}: a row needs exactly {', '.join(COLUMNS)}")
        results.append((name, result))
    return results


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(results: list[tuple[str, dict[str, Any]]], link: str) -> list[str]:
    lines = [
        "| benchmark | reclaim-tui | baseline | ratio | target |",
        "| --- | --- | --- | --- | --- |",
    ]
    for _, result in results:
        anchor = f"{link}#{slug(result['title'])}"
        for row in result["rows"]:
            first = f"[{cell(row['benchmark'])}]({anchor})"
            rest = [cell(row[key]) for key in COLUMNS[1:]]
            lines.append("| " + " | ".join([first, *rest]) + " |")
    return lines


def _number(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def figures(rows: list[dict[str, Any]]) -> list[str]:
    """A run's figures per design (a results file's `designs`, written by the
    benchmark itself), with what each implies: at its CPU per job, the jobs
    one core of the client (a host's process) and one core of the server
    can carry, and the commits a second the server's rate asks."""
    lines = [
        "| design | jobs | jobs/s | commits a job | client CPU ms a job | server CPU ms a job"
        " | jobs/s a client core carries | jobs/s a server core carries"
        " | commits/s at that rate |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        ms, commits = row.get("server_cpu_ms_per_job"), row.get("commits_per_job")
        client = row.get("client_cpu_ms_per_job")
        per_core = 1000 / ms if ms else None
        rate = per_core * commits if per_core is not None and commits is not None else None
        cells = [
            cell(str(row["design"])),
            f"{row['jobs']:,}",
            _number(row["jobs_per_s"], 0),
            _number(commits, 3),
            _number(client, 2),
            _number(ms, 3),
            _number(1000 / client if client else None, 0),
            _number(per_core, 0),
            _number(rate, 0),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def ratios(found: dict[str, list[float]]) -> list[str]:
    """jobs/s ratios measured round by round (the same load for both sides)."""
    lines = []
    for name, each in found.items():
        ordered = sorted(each)
        mid = (
            ordered[len(ordered) // 2]
            if len(ordered) % 2
            else sum(ordered[len(ordered) // 2 - 1 : len(ordered) // 2 + 1]) / 2
        )
        rounds = ", ".join(f"{r:.2f}" for r in each)
        lines.append(f"- {cell(name)}: **{mid:.2f}×** (rounds: {rounds})")
    return lines


def when(result: dict[str, Any]) -> str:
    time = result.get("time_utc") or ""
    return f"{result['date']}, {time} UTC" if time else result["date"]


def page(results: list[tuple[str, dict[str, Any]]]) -> str:
    lines = [INTRO, "## The table", "", *table(results, ""), ""]
    lines += ["## Where each figure comes from", ""]
    for name, result in results:
        lines += [
            f"### {result['title']}",
            "",
            f"- command: `{result['command']}`",
            f"- measured: {when(result)}; load {result['load']}",
            f"- machine: {result['machine']}",
            f"- result file: `benchmarks/results/{name}.json`",
            "",
        ]
        if result.get("designs"):
            lines += [*figures(result["designs"]), ""]
        if result.get("ratios"):
            lines += [*ratios(result["ratios"]), ""]
        if result.get("notes"):
            lines += [result["notes"], ""]
    return "\n".join(lines).rstrip() + "\n"


def readme(results: list[tuple[str, dict[str, Any]]], text: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    block = "\n".join(["", *table(results, "../docs/performance.md"), ""])
    return text[:start] + block + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether they are current")
    args = parser.parse_args()
    results = load()
    wanted = {PAGE: page(results), BENCH_README: readme(results, BENCH_README.read_text())}
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is not what scripts/perf_page.py writes")
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
