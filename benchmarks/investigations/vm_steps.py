"""SQLite's virtual machine instructions a job over the ledger-alone run, at
several sizes: whether a job's work in SQLite grows with the ledger.

ledger_only.py's run of N jobs through every state (the fake backend, a
no-op sink), untimed: a progress handler on the ledger's connection counts
every 100 instructions SQLite's VM runs, in every statement of the run.
The count does not depend on the machine's load, so two trees compare in one
run each. A figure a job that rises with N is a statement whose plan reads
rows the batch does not need (a walk of a status or of the whole table).
Run it from the checkout to measure (its venv's reclaim_tui):

    python benchmarks/investigations/vm_steps.py [--jobs 20000,60000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from ledger_only import run_ours

#: instructions between two calls of the progress handler
EVERY = 100


def instructions_a_job(n: int) -> float:
    """N jobs through every state; SQLite's VM instructions a job."""
    calls = [0]

    def counted() -> int:
        calls[0] += 1
        return 0  # go on

    async def prepare(ledger: Any) -> None:
        await ledger.connection.set_progress_handler(counted, EVERY)

    with tempfile.TemporaryDirectory() as d:
        asyncio.run(run_ours(n, Path(d), 2000, prepare=prepare))
    return EVERY * calls[0] / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="20000,60000", help="sizes, comma-separated")
    args = parser.parse_args()
    for n in (int(s) for s in args.jobs.split(",")):
        print(json.dumps({"jobs": n, "vm_instructions_per_job": round(instructions_a_job(n))}))


if __name__ == "__main__":
    main()
