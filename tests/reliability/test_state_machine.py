"""Property-based: a Hypothesis state machine over the real Ledger and Engine, with
the FakeBackend and a ManualClock (in-process, no subprocesses).

Rules submit jobs, tick, crash a pass at a named crash point (the pass is
abandoned mid-way and a new Engine with a new owner takes over on the same
ledger, as a restarted process would), move time, finish / fail / forget
(404) interactions, inject create faults, and run the operator's retry,
cancel, adopt and forced recovery. After every step the ledger file is read
directly and must satisfy:

* every events row is an allowed (from → to) pair of DESIGN.md §2 plus the
  operator edges;
* a `submitted` row always has a handle, handles are unique;
* no finished step leaves a lease of the live engine behind, and terminal
  rows hold no lease (a row never has two holders: a crashed engine's lease
  blocks everyone until it runs out);
* a `consumed` row was `done` first and has its result and its sink file;
* a stored result never disappears or changes.

At the end every remaining interaction is finished and the ledger is driven
to rest: no row may be stuck in an active state (except orphans held by the
`hold` policy).

It runs on both engines: a SQLite file per example, or a fresh PostgreSQL
database per example (fewer examples there: each costs a database).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import reclaim_tui.core.sinks as sinks_module
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.crash import CRASH_POINTS
from reclaim_tui.core.engine import delivering, reclaiming, sending, submitting
from reclaim_tui.core.engine.engine import Engine, EngineConfig, OrphanPolicy
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, JobSpec
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import MaybeCreatedError, NotCreatedError, OperatorError
from tests.helpers import LedgerView, record_figures
from tests.helpers.ledgerdb import TERMINAL, account_for_creates
from tests.helpers.postgres import PostgresServer

T = TypeVar("T")
TEXTS = [f"property job {i}" for i in range(6)]
KEYS = [idempotency_key(JobSpec(input=t, model="m")) for t in TEXTS]
LEASE = 30.0
#: Examples per run (each up to 30 steps); RECLAIM_PROP_EXAMPLES for a longer
#: hunt (with `--timeout 0`: pytest-timeout stops a run at 300 s).
EXAMPLES = int(os.environ.get("RECLAIM_PROP_EXAMPLES", "100"))
#: … on PostgreSQL, where each example creates (and drops) a database and a step
#: costs ~8× a SQLite one (commits reach the disk; the view connects per read).
PG_EXAMPLES = int(os.environ.get("RECLAIM_PROP_EXAMPLES_PG", "10"))


class SimulatedCrash(BaseException):
    """The process dies here: nothing after this line of the pass runs."""


_armed: dict[str, str | None] = {"point": None}


def _crashpoint(name: str) -> None:
    if _armed["point"] == name:
        _armed["point"] = None
        raise SimulatedCrash(name)


class Stall:
    """A pass parked at one await (the process is SIGSTOPped there)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.parked = asyncio.Event()
        self.gate = asyncio.Event()


class StallingBackend:
    """The FakeBackend, with one armed stall before a create, get or lookup.
    Creates made by a pass after it was resumed are remembered for the figures: the
    ledger must know them all the same."""

    def __init__(self, fake: FakeBackend) -> None:
        self.fake = fake
        self.armed: Stall | None = None
        self.resumed_owners: set[str] = set()
        self.late_creates: set[str] = set()

    @property
    def supports_lookup(self) -> bool:
        return self.fake.supports_lookup

    async def stall(self, where: str) -> None:
        stall = self.armed
        if stall is not None and stall.where == where:
            self.armed = None
            stall.parked.set()
            await stall.gate.wait()

    async def create(self, spec: JobSpec, idem: str) -> Any:
        await self.stall("create")
        before = set(self.fake.remotes)
        try:
            return await self.fake.create(spec, idem)
        finally:
            owner = _current_owner.get(None)
            if owner in self.resumed_owners:
                self.late_creates.update(set(self.fake.remotes) - before)

    async def get(self, handle: str) -> Any:
        await self.stall("get")
        return await self.fake.get(handle)

    async def cancel(self, handle: str) -> Any:
        return await self.fake.cancel(handle)

    async def find_by_label(self, idem: str, attempt: str | None = None) -> Any:
        await self.stall("find")
        return await self.fake.find_by_label(idem, attempt)

    async def aclose(self) -> None:
        return None


class StallingSink:
    def __init__(self, inner: DirectorySink, backend: StallingBackend) -> None:
        self.inner = inner
        self.backend = backend

    async def deliver(self, idem: str, result: Any) -> None:
        await self.backend.stall("sink")
        await self.inner.deliver(idem, result)


_databases = itertools.count(1)
_current_owner: contextvars.ContextVar[str] = contextvars.ContextVar("owner")

_stats = {
    "examples": 0,
    "steps": 0,
    "crashes": 0,
    "stalls": 0,
    "zombies_resumed": 0,
    "creates_by_resumed_passes": 0,
    "cancelled_orphans": 0,
    "consumed": 0,
    "operator_refusals": 0,
}


#: The PostgreSQL server the examples' databases are made on; None: SQLite files.
_on_server: dict[str, PostgresServer | None] = {"server": None}


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        base = "/dev/shm" if Path("/dev/shm").is_dir() else None  # fsync-cheap
        self.dir = Path(tempfile.mkdtemp(prefix="reclaim-prop-", dir=base))
        self.clock = ManualClock()
        self.fake = FakeBackend(clock=self.clock, latency=None)
        self.server = _on_server["server"]
        self.database: str | None = None
        if self.server is not None:
            self.database = f"prop_{os.getpid()}_{next(_databases)}"
            db = self.server.create_database(self.database)
        else:
            db = str(self.dir / "ledger.db")
        self.ledger = self.run(open_ledger(db, clock=self.clock))
        self.view = LedgerView(db)
        self.backend = StallingBackend(self.fake)
        self.directory = DirectorySink(self.dir / "out")
        self.sink = StallingSink(self.directory, self.backend)
        self.zombies: list[tuple[Stall, asyncio.Task[Any], str]] = []
        self.finished_owners: set[str] = set()
        self.cancel_gap: set[str] = set()
        self.policy = OrphanPolicy.RESUBMIT
        self.generation = 0
        self.engine = self.new_engine()
        self.stored: dict[str, tuple[str, str]] = {}
        self.events_checked = 0
        _stats["examples"] += 1

    # -- plumbing ------------------------------------------------------------------------
    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def new_engine(self) -> Engine:
        """A fresh process: new owner, same ledger file and remote side."""
        self.generation += 1
        # retention=0: every 404 here is past the API's retention, so --on-gone
        # applies at once (the grace inside retention: test_not_found_grace.py).
        config = EngineConfig(
            concurrency=1,
            lease_seconds=LEASE,
            max_attempts=3,
            orphan_policy=self.policy,
            retention=0.0,
        )
        # Another host's owner string: its liveness is never judged, leases
        # run out by the clock only (a dead process here is one we abandoned).
        owner = f"prop-host|{self.generation}|g{self.generation}"
        return Engine(self.ledger, self.backend, self.sink, config=config, owner=owner)

    def pass_(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run one pass of the live engine to its end."""
        _current_owner.set(self.engine.owner)
        out = self.run(coro)
        self.finished_owners.add(self.engine.owner)
        return out

    def teardown(self) -> None:
        try:
            self.drain()
        finally:
            self.run(self.ledger.close())
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)
            if self.server is not None and self.database is not None:
                self.server.drop_database(self.database)

    def drain(self) -> None:
        """Resume the zombies, finish everything remote, tick until the ledger rests."""
        while self.zombies:
            self.resume_zombie()
        self.fake.create_faults.clear()
        for _ in range(12):
            for handle, remote in list(self.fake.remotes.items()):
                if remote.status == "in_progress":
                    self.fake.finish(handle)
            self.clock.advance(400)
            self.pass_(self.engine.tick())
            self.check_all()
        stuck = {
            idem: (r["status"], r["held"])
            for idem, r in self.view.rows().items()
            if r["status"] not in TERMINAL and not (r["status"] == "reserving" and r["held"])
        }
        assert stuck == {}, f"rows stuck in an active state after draining: {stuck}"
        _stats["creates_by_resumed_passes"] += len(self.backend.late_creates)
        _stats["cancelled_orphans"] += len(self.cancel_gap)
        _stats["consumed"] += sum(1 for r in self.view.rows().values() if r["status"] == "consumed")

    def pick_row(self, index: int) -> str | None:
        rows = sorted(self.view.rows())
        return rows[index % len(rows)] if rows else None

    def pick_remote(self, index: int, pending: bool = True) -> str | None:
        handles = sorted(
            h for h, r in self.fake.remotes.items() if not pending or r.status == "in_progress"
        )
        return handles[index % len(handles)] if handles else None

    # -- rules ---------------------------------------------------------------------------
    @initialize(
        lookup=st.booleans(), policy=st.sampled_from([OrphanPolicy.RESUBMIT, OrphanPolicy.HOLD])
    )
    def configure(self, lookup: bool, policy: OrphanPolicy) -> None:
        self.fake.supports_lookup = lookup
        self.policy = policy
        self.engine = self.new_engine()

    @rule(picks=st.lists(st.integers(0, len(TEXTS) - 1), min_size=1, max_size=3))
    def submit_and_tick(self, picks: list[int]) -> None:
        self.pass_(self.engine.tick([JobSpec(input=TEXTS[i], model="m") for i in picks]))

    @rule()
    def tick(self) -> None:
        self.pass_(self.engine.tick())

    @precondition(lambda self: len(self.zombies) < 2)
    @rule(
        where=st.sampled_from(["create", "get", "find", "sink"]),
        picks=st.lists(st.integers(0, len(TEXTS) - 1), max_size=2),
    )
    def stall(self, where: str, picks: list[int]) -> None:
        """Park a pass at an await (SIGSTOP); a new process carries on."""
        stall = Stall(where)
        self.backend.armed = stall
        owner = self.engine.owner
        _current_owner.set(owner)
        task = self.loop.create_task(
            self.engine.tick([JobSpec(input=TEXTS[i], model="m") for i in picks])
        )

        async def parked_or_done() -> None:
            parked = asyncio.ensure_future(stall.parked.wait())
            await asyncio.wait([task, parked], return_when=asyncio.FIRST_COMPLETED)
            parked.cancel()

        self.run(parked_or_done())
        self.backend.armed = None
        if task.done():
            task.result()
            self.finished_owners.add(owner)
            return
        _stats["stalls"] += 1
        self.finished_owners.discard(owner)  # it holds leases while parked
        self.zombies.append((stall, task, owner))
        self.engine = self.new_engine()

    @precondition(lambda self: bool(self.zombies))
    @rule()
    def resume(self) -> None:
        self.resume_zombie()

    def resume_zombie(self) -> None:
        """SIGCONT: the parked pass runs to its end; its writes must be refused
        wherever another process took its rows over."""
        stall, task, owner = self.zombies.pop(0)
        self.backend.resumed_owners.add(owner)
        stall.gate.set()
        self.run(task)
        self.finished_owners.add(owner)
        _stats["zombies_resumed"] += 1

    @rule(
        point=st.sampled_from(CRASH_POINTS),
        picks=st.lists(st.integers(0, len(TEXTS) - 1), max_size=2),
    )
    def crash(self, point: str, picks: list[int]) -> None:
        _armed["point"] = point
        try:
            self.pass_(self.engine.tick([JobSpec(input=TEXTS[i], model="m") for i in picks]))
        except SimulatedCrash:
            _stats["crashes"] += 1
            self.finished_owners.discard(self.engine.owner)
            self.engine = self.new_engine()  # the old one is dead, its leases stay
        finally:
            _armed["point"] = None

    @rule(seconds=st.sampled_from([1.0, 2.0, 5.0, LEASE + 1, 400.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule(index=st.integers(0, 50))
    def finish(self, index: int) -> None:
        handle = self.pick_remote(index)
        if handle:
            self.fake.finish(handle)

    @rule(index=st.integers(0, 50), status=st.sampled_from(["failed", "cancelled", "incomplete"]))
    def fail(self, index: int, status: str) -> None:
        handle = self.pick_remote(index)
        if handle:
            self.fake.fail(handle, status=status)

    @rule(index=st.integers(0, 50))
    def forget(self, index: int) -> None:
        handle = self.pick_remote(index, pending=False)
        if handle:
            self.fake.forget(handle)

    @rule(kind=st.sampled_from(["429", "400", "maybe-not-created", "maybe-created"]))
    def create_fault(self, kind: str) -> None:
        fault: Any = {
            "429": NotCreatedError("429", 429, retryable=True),
            "400": NotCreatedError("400", 400, retryable=False),
            "maybe-not-created": MaybeCreatedError("timeout", None),
            "maybe-created": (MaybeCreatedError("503 after accept", 503), True),
        }[kind]
        self.fake.create_faults.append(fault)

    @precondition(lambda self: bool(self.view.rows()))
    @rule(index=st.integers(0, 50), action=st.sampled_from(["retry", "cancel", "recover"]))
    def operator(self, index: int, action: str) -> None:
        idem = self.pick_row(index)
        assert idem is not None
        row = self.view.rows()[idem]
        if action == "cancel" and row["status"] == "reserving" and row["inflight"]:
            # Counted for the figures; the accounting check in `invariants` holds
            # the ledger to knowing what the orphan may have created.
            self.cancel_gap.update(h for h, r in self.fake.remotes.items() if r.idem == idem)
        try:
            if action == "retry":
                self.pass_(self.engine.operator.retry(idem, actor="prop-op"))
            elif action == "cancel":
                self.pass_(self.engine.operator.cancel(idem, actor="prop-op"))
            else:
                self.pass_(self.engine.recover_orphans(force=True, idems=[idem]))
        except OperatorError:
            _stats["operator_refusals"] += 1

    @precondition(lambda self: bool(self.view.rows()))
    @rule(index=st.integers(0, 50), remote=st.integers(0, 50), bogus=st.booleans())
    def operator_adopt(self, index: int, remote: int, bogus: bool) -> None:
        idem = self.pick_row(index)
        handle = "fake-does-not-exist" if bogus else self.pick_remote(remote, pending=False)
        assert idem is not None
        if handle is None:
            return
        try:
            self.pass_(self.engine.operator.adopt(idem, handle, actor="prop-op"))
        except OperatorError:
            _stats["operator_refusals"] += 1

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def check_all(self) -> None:
        _stats["steps"] += 1
        rows = self.view.rows()
        results = self.view.results()
        events = [e for e in self.view.events() if e.id > self.events_checked]
        for e in events:
            assert (e.from_status, e.to_status) in _allowed(), e
        if events:
            self.events_checked = events[-1].id

        handles = [r["handle"] for r in rows.values() if r["handle"] is not None]
        assert len(handles) == len(set(handles)), "a handle is shared by two rows"
        for idem, r in rows.items():
            if r["status"] == "submitted":
                assert r["handle"], f"{idem} submitted without a handle"
                assert not r["inflight"]
            if r["status"] in TERMINAL:
                assert r["lease_owner"] is None, f"{idem} is {r['status']} and still leased"
            assert r["lease_owner"] not in self.finished_owners, (
                f"{idem}: a finished pass left its lease behind"
            )
            if r["status"] in ("done", "consumed"):
                assert idem in results, f"{idem} is {r['status']} without a stored result"
            if r["status"] == "consumed":
                md = self.directory.path_for(idem, ".md")
                assert md.read_text(encoding="utf-8") == results[idem]["output_text"]
        for idem, (interaction_id, text) in self.stored.items():
            now = results.get(idem)
            assert now is not None, f"the stored result of {idem} disappeared"
            assert (now["interaction_id"], now["output_text"]) == (interaction_id, text)
        # A result once the row reached done is the job's: it never changes. The
        # raw interaction a failed or cancelled row keeps (paid partial output)
        # is replaced by a retry's own when that completes — a limitation the
        # README states (Hypothesis found it: cancelled, retry, completed), not
        # a delivered result changing.
        for idem, res in results.items():
            if rows[idem]["status"] in ("done", "consumed"):
                self.stored.setdefault(idem, (res["interaction_id"], res["output_text"]))
        assert self.view.consumed_without_done() == []
        consumed = Counter(e.idem for e in self.view.events() if e.to_status == "consumed")
        assert not consumed or max(consumed.values()) == 1, "a row was consumed twice"
        # Every interaction the remote side holds is known to the ledger (its
        # handle, named in its timeline, or a recorded possible duplicate), the
        # creates a resumed zombie sent late and an operator's cancel of an orphan
        # included. An orphan (reserving, in flight) is not settled yet: its
        # attempt's outcome is unknown until recovery adopts it or records a
        # duplicate.
        unsettled = {i for i, r in rows.items() if r["status"] == "reserving" and r["inflight"]}
        creates: dict[str, list[dict[str, Any]]] = {}
        for handle, remote in self.fake.remotes.items():
            if remote.idem not in unsettled:
                creates.setdefault(remote.idem, []).append({"id": handle})
        assert account_for_creates(self.view, creates) == []


def _allowed() -> frozenset[tuple[str | None, str | None]]:
    from tests.helpers.ledgerdb import ALLOWED_TRANSITIONS

    return ALLOWED_TRANSITIONS


@pytest.fixture
def armed_crashpoints(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for passes in (submitting, sending, reclaiming, delivering):
        monkeypatch.setattr(passes, "crashpoint", _crashpoint)
    monkeypatch.setattr(sinks_module, "crashpoint", _crashpoint)
    yield


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_ledger_state_machine(
    armed_crashpoints: None, engine: str, request: pytest.FixtureRequest
) -> None:
    # Not `db_url`: one database a test is too few, each example needs its own.
    server = request.getfixturevalue("pg_server") if engine == "postgres" else None
    for key in _stats:
        _stats[key] = 0
    _on_server["server"] = server
    try:
        _run_machine(PG_EXAMPLES if server is not None else EXAMPLES)
    finally:
        _on_server["server"] = None
    record_figures("state_machine" if server is None else "state_machine_postgres", **_stats)


def _run_machine(examples: int) -> None:
    run_state_machine_as_test(
        LedgerMachine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
            database=None,
        ),
    )


async def test_cancel_of_an_orphan_keeps_its_possible_interaction(
    tmp_path: Path, db_url: str
) -> None:
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=None, supports_lookup=False)
    fake.create_faults = [(MaybeCreatedError("503 after accept", 503), True)]
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), owner="p|1|a")
    try:
        spec = JobSpec(input="cancelled orphan", model="m")
        idem = idempotency_key(spec)
        await engine.tick([spec])
        row = await ledger.get(idem)
        assert row is not None and row.inflight and row.handle is None
        await engine.operator.cancel(idem, actor=Actor.CLI)
        assert len(fake.remotes) == 1  # the create landed; its answer was lost
        creates = {idem: [{"id": h} for h in fake.remotes]}
        # The ledger still accounts for the interaction the orphan may have created.
        assert account_for_creates(LedgerView(db_url), creates) == []
    finally:
        await ledger.close()
