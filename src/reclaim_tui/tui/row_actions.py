"""Poll now and discard (issue 25): the main screen's `n` and `x`.

`n` makes the marked rows, or the highlighted one, due at once — in-flight
(submitted) rows only, nothing is sent — and wakes the loop, whose next
pass polls them (Sidekiq's "retry now", Oban's "run now"). `x` deletes the
highlighted finished row (consumed, failed, cancelled) with its events and
result, after asking; its archive line is appended and fsync'd first, to the
same daily file `:prune` uses (core/ledger/prune.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from reclaim_tui.core.ledger.prune import PRUNABLE
from reclaim_tui.core.models import Status
from reclaim_tui.runner.commands import Discard, PollNow
from reclaim_tui.tui import operations
from reclaim_tui.tui.messages import ActionFinished
from reclaim_tui.tui.screens.tools import archive_path

if TYPE_CHECKING:
    from reclaim_tui.tui.screens.main import MainScreen

__all__ = ["discard_row", "poll_now"]


async def poll_now(screen: MainScreen) -> None:
    checked = await screen._check("poll now", (Status.SUBMITTED,))
    if checked is None:
        return
    host, command = screen.engine_host(), PollNow(tuple(checked.eligible))

    async def run() -> operations.Done:
        done = await operations.run_rows(host, "due now, polled at the next pass", command)
        screen.pace.kick()  # the next pass, now (a paused loop stays paused)
        return done

    screen.operate(run)


def discard_row(screen: MainScreen) -> None:
    row = screen.table.current_row()
    if row is None:
        screen.notify("no row to discard", severity="warning")
        return
    if row.status not in PRUNABLE:
        screen.notify(
            f"{row.idem} is {row.status}; discard applies to consumed, failed and cancelled rows",
            severity="error",
        )
        return
    archive = archive_path(screen.config.files_dir, screen.config.clock.now())
    host, command = screen.engine_host(), Discard((row.idem,), str(archive))
    question = (
        f"Discard {row.idem} ({row.status})? The row, its timeline and its stored result"
        f" are deleted from the ledger; its archive line is written first to\n{archive}"
    )

    async def run() -> operations.Done:
        try:
            await asyncio.to_thread(archive.parent.mkdir, parents=True, exist_ok=True)
        except OSError as exc:
            return operations.Done(ActionFinished(f"discard failed: {exc}", "error"))
        return await operations.run_rows(host, f"discarded (archived to {archive})", command)

    screen.confirm("discard", question, "Discard", lambda: screen.operate(run))
