"""What the CLI says when it refuses: an ambiguous key prefix with its true
count (on both engines)."""

from __future__ import annotations

import json

import pytest

from reclaim_tui.cli.common import resolve_key
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.errors import OperatorError


async def test_an_ambiguous_prefix_says_how_many_keys_match(
    db_url: str, clock: ManualClock
) -> None:
    ledger = await open_ledger(db_url, clock=clock)
    try:
        spec = json.dumps({"input": "hello", "model": "m"})
        keys = [f"job{n}" for n in range(1, 13)] + [f"six{n}" for n in range(6)]
        keys += [f"five{n}" for n in range(5)] + ["two-a", "two-b", "only-one"]
        await ledger.insert_jobs([(k, spec, "m") for k in keys], "t")

        with pytest.raises(OperatorError) as twelve:
            await resolve_key(ledger, "job")
        assert str(twelve.value) == (
            "job is ambiguous (more than 5 keys): job1, job10, job11, job12, job2 and more"
        )
        with pytest.raises(OperatorError, match=r"^six is ambiguous \(more than 5 keys\): "):
            await resolve_key(ledger, "six")
        with pytest.raises(OperatorError) as five:
            await resolve_key(ledger, "five")
        assert str(five.value) == "five is ambiguous (5 keys): five0, five1, five2, five3, five4"
        with pytest.raises(OperatorError, match=r"^two- is ambiguous \(2 keys\): two-a, two-b$"):
            await resolve_key(ledger, "two-")
        # A unique prefix, and a key that is also a prefix of others, name one row.
        assert await resolve_key(ledger, "only") == "only-one"
        assert await resolve_key(ledger, "job1") == "job1"
        with pytest.raises(OperatorError, match="no job with key nope"):
            await resolve_key(ledger, "nope")
    finally:
        await ledger.close()
