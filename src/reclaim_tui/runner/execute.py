"""The engine's side of the console's commands (commands.py): run one, reply.

Every host runs them here — the in-thread host (host.py), the console's
worker process (worker.py) and a service's control socket (control_server.py).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import assert_never

from reclaim_tui.core.engine import cancelling
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.ledger.prune import discard, prune
from reclaim_tui.core.ledger.registry import Beacon
from reclaim_tui.core.models import Actor, PassReport
from reclaim_tui.errors import OperatorError, ReclaimError
from reclaim_tui.runner.commands import (
    ACTOR,
    Adopt,
    Answer,
    Cancel,
    Command,
    Discard,
    Failed,
    Passed,
    PollNow,
    Prune,
    Pruned,
    Recover,
    Replay,
    Reply,
    Retry,
    RowCommand,
    RowsOutcome,
    Submit,
    Tick,
)

__all__ = ["execute", "stop_registered"]


async def execute(engine: Engine, command: Command) -> Reply:
    """Run one command on the engine; a ReclaimError becomes a Failed reply."""
    try:
        return await _run(engine, command)
    except ReclaimError as exc:
        return Failed.of(exc)


async def _run(engine: Engine, command: Command) -> Reply:
    match command:
        case Tick(interval=interval, paused=paused):
            return Passed(await _loop_pass(engine, interval, paused))
        case Retry() | Cancel() | Adopt() | Answer() | PollNow() | Discard():
            return await _each_row(engine, command)
        case Recover(idems=idems):
            return Passed(await engine.recover_orphans(force=True, idems=idems))
        case Replay(idems=idems):
            return Passed(await engine.replay(force=True, idems=idems))
        case Submit(jobs=jobs, send=send):
            return Passed(await engine.submit(jobs, send=send))
        case Prune(statuses=statuses, older_than_s=older_than_s, archive=archive, at=at):
            report = await prune(
                engine.ledger,
                statuses=statuses,
                older_than_s=older_than_s,
                now=engine.clock.now() if at is None else at,
                archive=Path(archive) if archive else None,
            )
            return Pruned(report.as_json())
        case _:
            assert_never(command)


#: Each console engine's row in the process registry, made at its first Tick.
_BEACONS: weakref.WeakKeyDictionary[Engine, Beacon] = weakref.WeakKeyDictionary()


async def _loop_pass(engine: Engine, interval: float | None, paused: bool) -> PassReport:
    """The console loop's pass (or, paused, none), said in the registry."""
    beacon = _BEACONS.get(engine)
    if beacon is None:
        state = "paused" if paused else "up"
        beacon = Beacon(engine.ledger, engine.owner, "console", interval=interval, state=state)
        _BEACONS[engine] = beacon
        await beacon.start()
    await beacon.changed(state="paused" if paused else "up", interval=interval)
    if paused:
        await beacon.beat()
        return PassReport()
    # The loop's passes are not an operator's doing: their own actor.
    report = await engine.acting_as(Actor.CONSOLE_LOOP).tick()
    await beacon.passed(report)
    return report


async def stop_registered(engine: Engine) -> None:
    """A console engine closing cleanly: its row says stopped."""
    beacon = _BEACONS.pop(engine, None)
    if beacon is not None:
        await beacon.stopped()


async def _each_row(engine: Engine, command: RowCommand) -> RowsOutcome:
    """Apply a row action to every key; an OperatorError refuses that row only."""
    applied, refused, pending = 0, [], []
    for idem in command.idems:
        try:
            match command:
                case Retry():
                    await engine.operator.retry(idem, actor=ACTOR)
                case Cancel():
                    row = await engine.operator.cancel(idem, actor=ACTOR)
                    if cancelling.is_pending(row):
                        pending.append(f"{idem}: {row.last_error}")
                case Adopt(interaction_id=interaction_id):
                    await engine.operator.adopt(idem, interaction_id, actor=ACTOR)
                case Answer(text=text, refine=refine):
                    await engine.operator.answer(idem, text, actor=ACTOR, refine=refine)
                case PollNow():
                    await engine.operator.poll_now(idem, actor=ACTOR)
                case Discard(archive=archive):
                    await discard(
                        engine.ledger, idem, now=engine.clock.now(), archive=Path(archive)
                    )
            applied += 1
        except OperatorError as exc:
            refused.append(str(exc))
    return RowsOutcome(applied, refused, pending)
