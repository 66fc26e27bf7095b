"""The main screen's actions on rows: retry (r), cancel (c), poll now (n),
discard (x), recover (o), replay (R), adopt (a), answer (A), and the marks
(space, *). Each asks, confirms, and hands operations.py's action to the
screen's "ops" worker (`MainPort.operate`).

`n` makes the marked rows, or the highlighted one, due at once — in-flight
(submitted) rows only, nothing is sent — and wakes the loop, whose next
pass polls them (Sidekiq's "retry now", Oban's "run now"). `x` deletes the
highlighted finished row (consumed, failed, cancelled) with its events and
result, after asking; its archive line is appended and fsync'd first, to the
same daily file `:prune` uses (core/ledger/prune.py).
"""

from __future__ import annotations

import asyncio
from functools import partial

from reclaim_tui.core.engine.planning import is_plan_ready
from reclaim_tui.core.ledger.console.views import View
from reclaim_tui.core.ledger.prune import PRUNABLE
from reclaim_tui.core.models import Status
from reclaim_tui.core.outputs import output_text
from reclaim_tui.core.row_notes import PLAN_READY
from reclaim_tui.errors import LedgerError
from reclaim_tui.runner.commands import Adopt, Answer, Cancel, Discard, PollNow, Retry
from reclaim_tui.tui import operations, questions
from reclaim_tui.tui.actions import updates
from reclaim_tui.tui.actions.port import MainPort
from reclaim_tui.tui.actions.tools import archive_path, resubmit_estimate
from reclaim_tui.tui.messages import ActionFinished
from reclaim_tui.tui.screens.ask import PlanScreen, adopt_screen, answer_screen

__all__ = [
    "adopt",
    "answer",
    "cancel",
    "discard",
    "mark_all",
    "poll_now",
    "recover",
    "replay",
    "retry",
    "toggle_mark",
]


def _targets(screen: MainPort) -> list[str]:
    """The marked rows, or else the highlighted one."""
    if screen.state.marks:
        return sorted(screen.state.marks)
    current = screen.table.current_idem()
    return [current] if current else []


async def _check(
    screen: MainPort, verb: str, applies_to: tuple[Status, ...]
) -> questions.Checked | None:
    """The targets `verb` applies to; None (and a line saying why) when none."""
    targets = _targets(screen)
    if not targets:
        screen.notify(f"no row to {verb}", severity="warning")
        return None
    try:
        checked = await questions.check_rows(screen.feed.opened(), verb, targets, applies_to)
    except LedgerError as exc:
        screen.notify(f"ledger read failed: {exc}", severity="error")
        return None
    if not checked.eligible:
        screen.notify(checked.refusal(), severity="error")
        return None
    return checked


async def retry(screen: MainPort) -> None:
    checked = await _check(screen, "retry", questions.RETRYABLE)
    if checked is None:
        return
    command = Retry(tuple(checked.eligible))
    run = partial(
        screen.operate, partial(operations.run_rows, screen.engine_host(), "retried", command)
    )
    if not screen.config.confirm:
        run()  # the operator turned the questions off (settings.toml)
        return
    # Every row retried is sent again, and paid for again: ask first, with the cost.
    estimate = await resubmit_estimate(screen, checked.eligible)
    question = questions.retry_question(checked, estimate, marked=bool(screen.state.marks))
    screen.confirm("retry", question, "Retry", run)


async def cancel(screen: MainPort) -> None:
    checked = await _check(screen, "cancel", questions.CANCELLABLE)
    if checked is None:
        return
    command = Cancel(tuple(checked.eligible))
    run = partial(operations.run_rows, screen.engine_host(), "cancelled", command)
    marked, row = bool(screen.state.marks), screen.table.current_row()
    if not marked and row is not None and is_plan_ready(row):
        question = questions.decline_question(row.idem, row.handle or "")
    else:
        question = questions.cancel_question(checked, marked=marked)
    screen.confirm("cancel", question, "Cancel jobs", lambda: screen.operate(run))


async def poll_now(screen: MainPort) -> None:
    checked = await _check(screen, "poll now", (Status.SUBMITTED,))
    if checked is None:
        return
    host, command = screen.engine_host(), PollNow(tuple(checked.eligible))

    async def run() -> operations.Done:
        done = await operations.run_rows(host, "due now, polled at the next pass", command)
        screen.pace.kick()  # the next pass, now (a paused loop stays paused)
        return done

    screen.operate(run)


def discard(screen: MainPort) -> None:
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


async def recover(screen: MainPort) -> None:
    marked = sorted(screen.state.marks)
    idems = marked or (await screen.feed.opened().matching_idems(View(orphans=True)))[0]
    if not idems:
        screen.notify("no orphans to recover", severity="warning")
        return
    run = partial(operations.recover_rows, screen.engine_host(), idems)
    if not screen.config.confirm:
        screen.operate(run)  # the operator turned the questions off (settings.toml)
        return
    # A resubmitted orphan is paid for again (if the first create landed too): say how much.
    estimate = await resubmit_estimate(screen, idems)
    question = questions.recover_question(len(idems), marked=bool(marked), estimate=estimate)
    screen.confirm("recover orphans", question, "Recover", lambda: screen.operate(run))


def replay(screen: MainPort) -> None:
    marked = sorted(screen.state.marks)
    waiting = screen.state.counts.get(Status.DONE.value, 0)
    if not marked and not waiting:
        screen.notify("no done-but-unconsumed rows to replay", severity="warning")
        return
    run = partial(operations.replay_rows, screen.engine_host(), marked or None)
    question = questions.replay_question(len(marked), waiting)
    screen.confirm("replay", question, "Replay", lambda: screen.operate(run))


def adopt(screen: MainPort) -> None:
    row = screen.table.current_row()
    if row is None:
        screen.notify("no row to adopt for", severity="warning")
        return
    refusal = questions.adopt_refusal(row)
    if refusal is not None:
        screen.notify(refusal, severity="error")
        return
    engine, idem = screen.engine_host(), row.idem

    def answered(handle: str | None) -> None:
        if handle:
            verb = f"adopted {handle} for"
            screen.operate(partial(operations.run_rows, engine, verb, Adopt(idem, handle)))

    screen.app.push_screen(adopt_screen(idem, row.status.value), answered)


def answer(screen: MainPort) -> None:
    row = screen.table.current_row()
    if row is None:
        screen.notify("no row to answer", severity="warning")
        return
    refusal = questions.answer_refusal(row)
    if refusal is not None:
        screen.notify(refusal, severity="error")
        return
    engine, idem = screen.engine_host(), row.idem

    plan = (row.last_error or "").startswith(PLAN_READY)

    async def whole_plan() -> str | None:
        """The plan's text from its stored interaction (the row's note has its start)."""
        detail = await screen.feed.opened().detail(idem)
        return output_text(detail.result.raw) if detail and detail.result else None

    asking = answer_screen(
        idem, row.handle or "", questions.asked(row), plan=plan, whole_plan=whole_plan
    )

    def answered(text: str | None) -> None:
        if text:
            refine = isinstance(asking, PlanScreen) and asking.refine
            command = Answer(idem, text, refine=refine)
            verb = "asked for a new plan of" if refine else "answered"
            screen.operate(partial(operations.run_rows, engine, verb, command))

    screen.app.push_screen(asking, answered)


def toggle_mark(screen: MainPort) -> None:
    table = screen.table
    idem = table.current_idem()
    if idem is None:
        return
    table.set_mark(idem, screen.state.toggle_mark(idem))
    updates.show_bar(screen)
    table.action_cursor_down()


async def mark_all(screen: MainPort) -> None:
    idems, capped = await screen.feed.opened().matching_idems(screen.state.view())
    screen.state.marks = set(idems)
    updates.rerender(screen)
    note = " (capped: narrow the filter)" if capped else ""
    screen.notify(
        f"marked {len(idems):,} row{'s' if len(idems) != 1 else ''}{note}",
        severity="warning" if capped else "information",
    )
