"""What a run skipped, and why, said loudly at its end: a green run that skipped a whole
ledger engine (no PostgreSQL installed) must not read as one that tested it.

Printed in pytest's terminal summary, and written to the file RECLAIM_SKIPS_FILE names
(`./dev test` sets it and prints that file last, after the coverage report)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["skipped_lines", "skipped_summary"]

SKIPS_FILE_ENV = "RECLAIM_SKIPS_FILE"


def _reason(report: Any) -> str:
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def skipped_lines(reports: list[Any]) -> list[str]:
    """The summary of these skipped reports: a headline, then each reason with its count."""
    reasons = Counter(_reason(r) for r in reports if r.skipped)
    if not reasons:
        return []
    total = sum(reasons.values())
    lines = [f"!!! {total} test{'s' * (total != 1)} NOT RUN (skipped), by reason:"]
    for reason, count in reasons.most_common():
        lines.append(f"!!!   {count:>5} × {reason}")
    on_pg = sum(1 for r in reports if r.skipped and "postgres" in r.keywords)
    if on_pg:
        lines.append(
            f"!!! {on_pg} of them are the PostgreSQL ledger engine's: it was NOT tested. Install"
            " postgresql and pgbouncer (`./dev test` does, as root with apt-get) or set"
            " RECLAIM_TEST_PG_DSN."
        )
    return lines


def skipped_summary(terminalreporter: Any) -> None:
    lines = skipped_lines(terminalreporter.stats.get("skipped", []))
    path = os.environ.get(SKIPS_FILE_ENV)
    if path and not hasattr(terminalreporter.config, "workerinput"):
        Path(path).write_text("".join(f"{line}\n" for line in lines))
    if lines:
        terminalreporter.section("not run", sep="!")
        for line in lines:
            terminalreporter.write_line(line, yellow=True, bold=True)
