"""The runner's protocol: every message survives the codec, errors come back as
their own class, and commands reach the engine (fake backend, manual clock)."""

from __future__ import annotations

import pytest

from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec, OrphanPolicy, PassReport, Status
from reclaim_tui.errors import JobsFileError, LedgerBusyError, MaybeCreatedError, ReclaimError
from reclaim_tui.runner.commands import (
    Abort,
    Adopt,
    Cancel,
    Failed,
    Launch,
    Message,
    Passed,
    Quit,
    Recover,
    Replay,
    Retry,
    RowsOutcome,
    Started,
    Submit,
    Tick,
    decode,
    encode,
)
from reclaim_tui.runner.execute import execute

KEYED = JobSpec("with a key", "m", {"temperature": 0.2}, "k-1")

MESSAGES: list[Message] = [
    Tick(),
    Retry(("a", "b")),
    Cancel(("c",)),
    Adopt("d", "int-9"),
    Recover(("e",)),
    Replay(None),
    Replay(("f",)),
    Submit((JobSpec("hello", "m"), KEYED), True),
    RowsOutcome(1, ["refused"]),
    Failed("OperatorError", "no"),
    Started("host|1|x", {"db": "x.db"}),
    Abort(7),
    Quit(),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_survives_the_codec(message: Message) -> None:
    assert decode(encode(message, 42)) == (42, message)


def test_reports_and_launches_survive_the_codec() -> None:
    report = PassReport()
    report.counts["sent"] = 3
    report.error("k", "boom")
    _, back = decode(encode(Passed(report)))
    assert isinstance(back, Passed)
    assert back.report.counts == report.counts and back.report.errors == report.errors

    settings = Settings(db="x.db", api_key="secret", orphan_policy=OrphanPolicy.HOLD)
    line = encode(Launch(settings, "pkg.mod:open", {"jobs": 3}, ("/src",)))
    assert b"secret" not in line
    _, launch = decode(line)
    assert launch == Launch(settings.with_(api_key=None), "pkg.mod:open", {"jobs": 3}, ("/src",))


def test_errors_come_back_as_their_own_class() -> None:
    busy = Failed.of(LedgerBusyError("locked")).exception()
    assert type(busy) is LedgerBusyError and str(busy) == "locked"
    assert type(Failed.of(MaybeCreatedError("reset")).exception()) is MaybeCreatedError
    # Extra constructor fields do not travel: the text does, as a ReclaimError.
    jobs = Failed.of(JobsFileError("f.jsonl", [(1, "bad")])).exception()
    assert type(jobs) is ReclaimError and "f.jsonl" in str(jobs)
    crash = Failed.of(ValueError("oops")).exception()
    assert type(crash) is ReclaimError and str(crash) == "engine error: ValueError: oops"
    assert type(Failed("NotAnError", "x").exception()) is ReclaimError


def test_an_unknown_message_is_an_error() -> None:
    with pytest.raises(ReclaimError, match="unknown engine message 'Dance'"):
        decode(b'{"id":1,"type":"Dance"}\n')


async def test_commands_reach_the_engine(engine: Engine) -> None:
    spec = JobSpec("to be cancelled", "m")
    idem = idempotency_key(spec)
    reply = await execute(engine, Submit((spec,), False))
    assert isinstance(reply, Passed) and reply.report.counts["inserted"] == 1

    reply = await execute(engine, Cancel((idem, "missing")))
    assert reply == RowsOutcome(1, ["no job with key missing"])
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.CANCELLED

    reply = await execute(engine, Adopt(idem, "int-1"))
    assert isinstance(reply, RowsOutcome) and reply.applied == 0 and len(reply.refused) == 1
