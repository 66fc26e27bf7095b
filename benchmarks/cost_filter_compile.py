"""What the console's `cost` filter costs to compile for a large price table:
the SQL's size and parameters, and the seconds from the table to the first
answer on an empty SQLite ledger (prepare + install + run), for 3,000 and
33,000 models. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/cost_filter_compile.py [MODELS ...] [--limit SECONDS]
        [--db postgresql://…]   (a PostgreSQL ledger instead, created if new)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import tempfile
import time
from pathlib import Path


def _table(models: int, folder: Path) -> Path:
    path = folder / f"prices-{models}.json"
    # Compact, as the attack's 0.9 MB file of 33,000 models was (the cap is 1 MiB).
    entries = {f"m{n}": {"input": n % 10, "output": n % 7 + 1} for n in range(models)}
    text = json.dumps({"as_of": "2027-01-05", "models": entries}, separators=(",", ":"))
    path.write_text(text, encoding="utf-8")
    return path


async def _measure(models: int, folder: str, db: str | None) -> tuple[int, int, float]:
    from reclaim_tui.core import cost_sql
    from reclaim_tui.core.costs import load_prices
    from reclaim_tui.core.ledger.opening import open_ledger

    prices = load_prices(_table(models, Path(folder)), environ={})
    ledger = await open_ledger(db or str(Path(folder) / f"ledger-{models}.db"))
    try:
        start = time.perf_counter()
        install = getattr(cost_sql, "install_prices", None)
        if install is not None:
            await install(ledger, prices)
        expr, params = cost_sql.row_cost_sql(prices, ledger.dialect)
        mark = "%s" if ledger.dialect == "postgres" else "?"  # each engine's own marker
        await ledger.select(f"SELECT count(*) FROM jobs WHERE {expr} > {mark}", [*params, 0.5])
        return len(expr), len(params), time.perf_counter() - start
    finally:
        await ledger.close()


def _child(models: int, folder: str, db: str | None, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    out.put(asyncio.run(_measure(models, folder, db)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", type=int, default=[3000, 33000])
    parser.add_argument("--limit", type=float, default=120.0, help="give up after (s)")
    parser.add_argument("--db", default=None, help="a PostgreSQL ledger's URL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for models in args.models:
            queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
            child = multiprocessing.Process(target=_child, args=(models, folder, args.db, queue))
            child.start()
            child.join(args.limit)
            if child.is_alive():
                child.kill()
                child.join()
                print(f"{models:>6} models: not done after {args.limit:.0f} s (killed)")
                continue
            size, params, seconds = queue.get()
            print(f"{models:>6} models: SQL {size:,} chars, {params:,} parameters, {seconds:.2f} s")


if __name__ == "__main__":
    main()
