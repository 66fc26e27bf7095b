"""The database server's time: leases are written in it, whatever the host's
wall clock says (core/ledger/postgres/ledger.py, "Time")."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg

__all__ = ["SYNC_EVERY", "ServerClock"]

#: Seconds between two readings of the server's clock.
SYNC_EVERY = 30.0


class ServerClock:
    """The database server's time, counted locally on the monotonic clock
    between readings (one `SELECT` every SYNC_EVERY seconds). The host's
    wall clock is never read."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._server = 0.0
        self._at = -float("inf")

    def now(self) -> float:
        return self._server + (self._monotonic() - self._at)

    @property
    def stale(self) -> bool:
        return self._monotonic() - self._at >= SYNC_EVERY

    async def sync(self, conn: psycopg.AsyncConnection[Any]) -> None:
        sent = self._monotonic()
        cur = await conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
        row = await cur.fetchone()
        back = self._monotonic()
        assert row is not None
        # The server read its clock somewhere in the round trip: its middle.
        self._server, self._at = float(row[0]), (sent + back) / 2
