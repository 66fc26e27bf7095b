"""The `Ledger` port (core/ledger/port.py) and its two engines (issue 26).

Both `SqliteLedger` and `PgLedger` have every member of the protocol with a
compatible signature, neither is a subclass of the other, and the protocol's
behaviour is the same on both (`db_url` runs each test once per engine).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Claim, Ledger
from reclaim_tui.core.ledger.postgres.ledger import PgLedger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.ledger.urls import is_database_url
from reclaim_tui.core.models import Actor, Status
from reclaim_tui.errors import LedgerReadOnlyError

ENGINES = (SqliteLedger, PgLedger)
#: Data members: set on each instance (checked on an opened ledger below).
ATTRIBUTES = ("path", "clock", "readonly", "ledger_id", "dialect", "text_index_note")


def protocol_methods() -> dict[str, Any]:
    """The protocol's callables and properties, as declared."""
    return {
        name: value
        for name, value in vars(Ledger).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


def test_the_protocol_names_what_its_callers_use() -> None:
    methods = protocol_methods()
    for name in ("claim_sendable", "write_batch", "operator_update", "select", "write", "close"):
        assert name in methods
    assert set(ATTRIBUTES) <= set(Ledger.__annotations__)


@pytest.mark.parametrize("engine", ENGINES, ids=lambda c: c.__name__)
def test_each_engine_has_every_member_with_a_compatible_signature(engine: type) -> None:
    for name, declared in protocol_methods().items():
        have = inspect.getattr_static(engine, name, None)
        assert have is not None, f"{engine.__name__} lacks {name}"
        if isinstance(declared, property):
            assert isinstance(have, property), f"{engine.__name__}.{name} is not a property"
            continue
        want_sig = inspect.signature(declared)
        have_sig = inspect.signature(getattr(engine, name))
        want = [(p.name, p.kind, p.default) for p in want_sig.parameters.values()]
        got = [(p.name, p.kind, p.default) for p in have_sig.parameters.values()]
        assert got == want, f"{engine.__name__}.{name}{have_sig} is not {name}{want_sig}"
        assert inspect.iscoroutinefunction(getattr(engine, name)) == (
            inspect.iscoroutinefunction(declared)
        ), f"{engine.__name__}.{name}: async where the protocol is not, or the reverse"


def test_neither_engine_subclasses_the_other() -> None:
    assert not issubclass(SqliteLedger, PgLedger)
    assert not issubclass(PgLedger, SqliteLedger)
    assert SqliteLedger not in PgLedger.__mro__ and PgLedger not in SqliteLedger.__mro__


async def test_open_ledger_picks_the_engine_by_the_db(db_url: str, clock: ManualClock) -> None:
    ledger = await open_ledger(db_url, clock=clock)
    try:
        want = PgLedger if is_database_url(db_url) else SqliteLedger
        assert type(ledger) is want
        assert ledger.dialect == ("postgres" if want is PgLedger else "sqlite")
        for name in ATTRIBUTES:
            assert hasattr(ledger, name), name
        assert await ledger.schema_version() > 0
    finally:
        await ledger.close()


async def test_the_port_behaves_the_same_on_every_engine(db_url: str, clock: ManualClock) -> None:
    ledger: Ledger = await open_ledger(db_url, clock=clock)
    try:
        spec = json.dumps({"input": "hello", "model": "m"})
        inserted, present = await ledger.insert_jobs([("k1", spec, "m"), ("k2", spec, "m")], "t")
        assert (inserted, present) == (["k1", "k2"], [])
        assert (await ledger.insert_jobs([("k1", spec, "m")], "t")) == ([], ["k1"])
        claim = await ledger.claim_sendable("me|1|a", limit=1, lease_seconds=30)
        assert isinstance(claim, Claim) and [r.idem for r in claim.rows] == ["k1"]
        # The other row is not claimable twice; the held one is ours to renew.
        again = await ledger.claim_sendable("you|2|b", limit=5, lease_seconds=30)
        assert [r.idem for r in again.rows] == ["k2"]
        assert await ledger.renew("me|1|a", ["k1", "k2"], 30) == {"k1"}
        marked, applied = await ledger.write_batch("me|1|a", Actor.TICK, sending=["k1"])
        assert set(marked) == {"k1"} and applied == []
        row = await ledger.get("k1")
        assert row is not None and row.attempts == 1 and row.inflight
        assert await ledger.release("you|2|b", ["k2"]) == 1
        assert set(await ledger.get_many(["k1", "k2", "nope"])) == {"k1", "k2"}
        assert [r.idem for r in await ledger.find("k")] == ["k1", "k2"]
        assert [r.idem async for r in ledger.iter_rows(batch=1)] == ["k1", "k2"]
        counts = await ledger.counts()
        assert counts[Status.RESERVING.value][0] == 2
        assert (await ledger.events("k1"))[0].note == "reserved"
        await ledger.add_event("k1", "test", "a note", None)
        assert (await ledger.events("k1"))[-1].note == "a note"
        assert await ledger.result("k1") is None and await ledger.results(["k1"]) == {}
        assert await ledger.select("SELECT COUNT(*) FROM jobs") == [(2,)]
        assert await ledger.sequences_behind() == []
        assert isinstance(await ledger.pragmas(), dict)
    finally:
        await ledger.close()


async def test_a_read_only_ledger_refuses_writes_on_every_engine(
    db_url: str, clock: ManualClock
) -> None:
    writable = await open_ledger(db_url, clock=clock)
    await writable.close()
    reader = await open_ledger(db_url, clock=clock, readonly=True, create=False)
    try:
        assert reader.readonly
        with pytest.raises(LedgerReadOnlyError, match="read-only"):
            async with reader.write():
                pass
    finally:
        await reader.close()
