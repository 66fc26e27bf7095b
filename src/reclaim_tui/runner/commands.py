"""What the console asks of its engine, as plain JSON-able commands and replies.

Both engine hosts speak this vocabulary: the thread host runs `execute` on
its own loop, the worker process runs it on the far side of a pipe. One
command is one dict:

    {"op": "tick"}
    {"op": "retry" | "cancel" | "recover", "idems": [...]}
    {"op": "adopt", "idems": [idem], "interaction_id": "..."}
    {"op": "replay", "idems": [...] | null}        always force=True: "replay now"
    {"op": "submit", "jobs": [{"spec": "...", "key": null}], "send": bool}

and one reply is `{"ok": true, ...}` (a `report`, or `applied`/`refused` for
row actions) or `{"ok": false, "kind": "OperatorError", "error": "..."}`.
This module must not import Textual: the worker process imports it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui import errors
from reclaim_tui.core.engine import Engine, PassReport
from reclaim_tui.core.models import Actor, JobSpec
from reclaim_tui.errors import OperatorError, ReclaimError

__all__ = [
    "ACTOR",
    "ROW_OPS",
    "Command",
    "Reply",
    "RowsOutcome",
    "error_reply",
    "execute",
    "jobs_from_wire",
    "jobs_to_wire",
    "raise_for",
    "report_from_wire",
    "report_to_wire",
]

ACTOR = Actor.CONSOLE
ROW_OPS = frozenset({"retry", "cancel", "adopt"})
Command = dict[str, Any]
Reply = dict[str, Any]

#: Errors rebuilt by name on the console's side (each takes one message).
_REBUILT = (
    errors.OperatorError,
    errors.ConfigError,
    errors.LedgerError,
    errors.LedgerVersionError,
    errors.LedgerCorruptError,
    errors.LedgerBusyError,
    errors.LedgerReadOnlyError,
    errors.SinkError,
)


@dataclass
class RowsOutcome:
    """A row action over several keys: how many applied, and each refusal."""

    applied: int = 0
    refused: list[str] = field(default_factory=list)


# -- wire formats ------------------------------------------------------------------------
def report_to_wire(report: PassReport) -> dict[str, Any]:
    return {"counts": dict(report.counts), "errors": [list(e) for e in report.errors]}


def report_from_wire(data: dict[str, Any]) -> PassReport:
    errors_ = [(str(i), str(m)) for i, m in data.get("errors", [])]
    return PassReport(Counter({str(k): int(v) for k, v in data["counts"].items()}), errors_)


def jobs_to_wire(jobs: Sequence[JobSpec]) -> list[dict[str, Any]]:
    return [{"spec": j.to_json(), "key": j.key} for j in jobs]


def jobs_from_wire(items: Sequence[dict[str, Any]]) -> list[JobSpec]:
    out = []
    for item in items:
        spec = JobSpec.from_json(item["spec"])
        key = item.get("key")
        out.append(JobSpec(spec.input, spec.model, spec.config, key) if key else spec)
    return out


def error_reply(exc: BaseException) -> Reply:
    kind = type(exc).__name__ if isinstance(exc, ReclaimError) else "crash"
    text = str(exc) if kind != "crash" else f"{type(exc).__name__}: {exc}"
    return {"ok": False, "kind": kind, "error": text}


def raise_for(reply: Reply) -> Reply:
    """The reply itself, or the error it carries raised as a ReclaimError."""
    if reply.get("ok"):
        return reply
    kind, text = reply.get("kind", ""), str(reply.get("error", "engine error"))
    cls = next((c for c in _REBUILT if c.__name__ == kind), None)
    if cls is not None:
        raise cls(text)
    if kind == "crash":
        raise ReclaimError(f"engine error: {text}")
    raise ReclaimError(text)


# -- the engine's side ----------------------------------------------------------------------
async def execute(engine: Engine, command: Command) -> Reply:
    """Run one command on the engine; every ReclaimError becomes an error reply."""
    try:
        return {"ok": True, **await _dispatch(engine, command)}
    except ReclaimError as exc:
        return error_reply(exc)


async def _dispatch(engine: Engine, command: Command) -> dict[str, Any]:
    op = command.get("op")
    idems = command.get("idems")
    if op == "tick":
        report = await engine.tick()
    elif op in ROW_OPS:
        outcome = await _each_row(engine, op, list(idems or []), command)
        return {"applied": outcome.applied, "refused": outcome.refused}
    elif op == "recover":
        report = await engine.recover_orphans(force=True, idems=idems)
    elif op == "replay":
        report = await engine.replay(force=True, idems=idems)
    elif op == "submit":
        jobs = jobs_from_wire(command["jobs"])
        report = await engine.submit(jobs, send=bool(command.get("send")))
    else:
        raise ReclaimError(f"unknown engine command {op!r}")
    return {"report": report_to_wire(report)}


async def _each_row(engine: Engine, op: str, idems: list[str], command: Command) -> RowsOutcome:
    """Apply a row action to every key; an OperatorError refuses that row only."""
    outcome = RowsOutcome()
    for idem in idems:
        try:
            if op == "retry":
                await engine.retry(idem, actor=ACTOR)
            elif op == "cancel":
                await engine.cancel(idem, actor=ACTOR)
            else:
                await engine.adopt(idem, str(command.get("interaction_id", "")), actor=ACTOR)
            outcome.applied += 1
        except OperatorError as exc:
            outcome.refused.append(str(exc))
    return outcome
