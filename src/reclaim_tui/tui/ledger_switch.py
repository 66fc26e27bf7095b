"""`:ledger PATH|URL`: the console moves to another ledger without a restart
(k9s's contexts).

The new ledger is opened once first, read-only: a missing, corrupt, newer or
foreign one is said, and the console stays where it was. Then the loop
stops, the old engine and reader close, and the console boots on the new
ledger as it booted at start — its engine (a worker process for a real
backend), its reader, the first page of the same tab and filter. The marks
are dropped (they name the old ledger's rows). A console attached to a
service shows the service's ledger, so it refuses; a read-only console
moves read-only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reclaim_tui.bootstrap import open_ledger
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.opening import ledger_file
from reclaim_tui.core.ledger.urls import shown_db
from reclaim_tui.errors import ReclaimError
from reclaim_tui.tui.widgets.loop_bar import LoopBarState

if TYPE_CHECKING:
    from reclaim_tui.tui.app import ReclaimApp

__all__ = ["switch_ledger"]


async def switch_ledger(app: ReclaimApp, target: str) -> None:
    config = app.config
    target = target.strip()
    now = shown_db(config.settings.db)
    if not target:
        app.notify(f"the ledger shown: {now} · :ledger PATH|URL moves to another")
        return
    if app.service is not None:
        app.notify(
            ":ledger: this console is attached to a service and shows its ledger;"
            " start a console without --attach to look at another",
            severity="error",
        )
        return
    file = ledger_file(target)
    if file is not None:
        target = str(file.expanduser().resolve())
    if target == config.settings.db:
        app.notify(f"already on {now}")
        return
    settings = config.settings.with_(db=target)
    try:
        async with open_ledger(settings, readonly=True, create=False):
            pass  # opened once: what is wrong with it is said here, nothing changes
        host = config.host_factory(settings) if config.host_factory is not None else None
        reader = await ConsoleReader.open(
            target, clock=config.clock, busy_timeout=settings.busy_timeout
        )
    except ReclaimError as exc:
        app.notify(f":ledger: {exc}; still on {now}", severity="error")
        return
    # From here to `follow` nothing awaits: no read, key or pass sees a
    # console between two ledgers.
    app.workers.cancel_group(app, "loop")
    app.workers.cancel_group(app, "keys")
    app.key_order.forget()  # actions typed for the rows of the ledger left
    app.main.feed.leave()
    old_host, old_reader = app.host, app.reader
    config.settings, config.host = settings, host
    app.host = app.main.host = host
    app.reader = reader
    app.main.state.marks.clear()
    app.main.bar = LoopBarState()  # the last ledger's pass, API and inbox are not this one's
    app.pace.mode = "read-only" if host is None else "starting"
    app.sub_title = shown_db(target) + (" · read-only" if host is None else "")
    app.main.follow(reader)
    if host is not None:
        app.start_engine()
    app.main.show_bar()
    app.notify(f"now on {shown_db(target)} (was {now})")
    if old_host is not None:
        await old_host.stop()
    if old_reader is not None:
        await old_reader.close()
