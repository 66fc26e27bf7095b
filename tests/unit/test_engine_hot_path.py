"""What the engine's own Python costs a job, counted (never timed): the
garbage a pass leaves for the cycle collector, the calls a job makes of the
helpers that ran once per node or per read, the environment reads of the
crash points."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import os
import signal
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core import crash, models
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine import batch_pass
from reclaim_tui.core.engine.batching import HeldBatch
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import ATTEMPT_LABEL, JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink
from reclaim_tui.errors import ReclaimError
from tests.helpers.fake_engine import engine_on_fakes
from tests.helpers.python_calls import python_calls

JOBS = 200


async def _noop(idem: str, result: StoredResult) -> None:
    return None


async def _engine(tmp_path: Path) -> tuple[Engine, ManualClock]:
    engine, clock = await engine_on_fakes(tmp_path)
    await engine.submit([JobSpec(input=f"job {i}", model="m") for i in range(JOBS)])
    clock.advance(5)
    return engine, clock


async def test_a_tick_leaves_no_cycles_for_the_collector(tmp_path: Path) -> None:
    engine, _ = await _engine(tmp_path)
    try:
        gc.collect()
        gc.disable()
        try:
            report = await engine.tick()
            found = gc.collect()
        finally:
            gc.enable()
        assert report.counts["consumed"] == JOBS
        # The pool of workers a batch runs on freed by reference counting,
        # with the tasks, rows and results it held: none left for the collector.
        assert found < JOBS // 10, found
    finally:
        await engine.ledger.close()


async def test_a_job_reads_each_row_and_sizes_each_result_in_one_call(tmp_path: Path) -> None:
    engine, _ = await _engine(tmp_path)
    try:
        with python_calls() as seen:
            report = await engine.tick()
        assert report.counts["consumed"] == JOBS
        # The result's size: one walk per result, not a call per node.
        assert seen[("reclaiming.py", "_strings")] == JOBS
        # A row's status read from a dict, not through the enum's lookup.
        assert seen[("enum.py", "__call__")] == 0
        assert seen[("schema.py", "row_from_tuple")] >= JOBS  # rows were read
    finally:
        await engine.ledger.close()


async def test_a_job_calls_the_api_without_a_coroutine_around_each_call(tmp_path: Path) -> None:
    seen = await _job_calls(tmp_path)
    assert seen[("fakes.py", "create")] == seen[("fakes.py", "get")] == JOBS
    # A create's or a poll's error is taken as the row's outcome where
    # the call is awaited: not in a coroutine of its own per call.
    assert seen[("batch_pass.py", "outcome")] == 0


class _CountingEnviron(dict[str, str]):
    """os.environ, counting the reads of the crash target made by the
    thread that made it (a sink's thread runs crash points of its own)."""

    reads = 0

    def __init__(self, environ: Any) -> None:
        super().__init__(environ)
        self.thread = threading.get_ident()

    def get(self, key: str, default: Any = None) -> Any:
        if key == "RECLAIM_CRASH_AT" and threading.get_ident() == self.thread:
            type(self).reads += 1
        return super().get(key, default)


def test_a_crash_point_reads_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_CountingEnviron, "reads", 0)
    monkeypatch.setattr(os, "environ", _CountingEnviron(os.environ))
    if hasattr(crash, "_UNREAD"):  # forget what an earlier test read
        monkeypatch.setattr(crash, "_target", crash._UNREAD)
    for _ in range(1000):
        crash.crashpoint("before_create")
    assert _CountingEnviron.reads == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork: POSIX only")
def test_a_forked_child_reads_its_own_crash_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECLAIM_CRASH_AT", raising=False)
    # The target read below is this process's: the next test starts unread.
    monkeypatch.setattr(crash, "_target", crash._UNREAD)
    crash.crashpoint("before_create")  # read here: no target
    pid = os.fork()
    if pid == 0:  # the child: a forked worker given its own environment
        try:
            os.environ["RECLAIM_CRASH_AT"] = "before_create"
            crash.crashpoint("before_create")
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


async def _pool_run(
    tmp_path: Path, wait: bool, polls: bool = False
) -> tuple[int, int, list[tuple[Any, Any]]]:
    """`each` over 100 items with `calls_api=False` (a sink's work), or
    with `polls` as API calls that need not start together (a poll's): the
    tasks it started, the most items in progress at once, the outcomes."""
    engine, _ = await _engine(tmp_path)
    running, most, release = [0], [0], asyncio.Event()

    async def work(item: str) -> str:
        running[0] += 1
        most[0] = max(most[0], running[0])
        if wait:
            if most[0] == engine.parts.config.concurrency:
                release.set()
            await release.wait()
        running[0] -= 1
        return item.upper()

    items = [f"k{i}" for i in range(100)]
    batch = HeldBatch(set(items))
    created = Counter[str]()
    real = asyncio.create_task

    def counted(coro: Any, **kw: Any) -> Any:
        created[coro.__qualname__] += 1
        return real(coro, **kw)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(asyncio, "create_task", counted)
            if polls:
                assert engine.parts.circuit.warm  # the submit's creates warmed it
                found = await batch_pass.each(
                    engine.parts, items, work, batch, key=lambda k: k, at_once=False
                )
            else:
                found = await batch_pass.each(
                    engine.parts, items, work, batch, key=lambda k: k, calls_api=False
                )
    finally:
        await engine.ledger.close()
    return created["each.<locals>.worker"], most[0], found


async def test_work_that_does_not_wait_runs_on_one_worker(tmp_path: Path) -> None:
    tasks, most, found = await _pool_run(tmp_path, wait=False)
    assert most == 1  # one at a time: none waited
    assert found == [(f"k{i}", f"K{i}") for i in range(100)]
    # Each worker keeps one more ready; none of them ever had to take over.
    assert tasks <= 2, tasks


async def test_work_that_waits_still_fills_the_pool(tmp_path: Path) -> None:
    tasks, most, found = await _pool_run(tmp_path, wait=True)
    assert found == [(f"k{i}", f"K{i}") for i in range(100)]
    assert most == 16  # EngineConfig(concurrency=16): the whole pool at once
    assert tasks <= 17


async def test_a_worker_carries_no_callback_of_the_pool(tmp_path: Path) -> None:
    engine, _ = await _engine(tmp_path)
    callbacks: list[int] = []

    async def work(item: str) -> str:
        task = asyncio.current_task()
        assert task is not None
        callbacks.append(len(task._callbacks or ()))
        await asyncio.sleep(0)
        return item

    items = [f"k{i}" for i in range(40)]
    try:
        found = await batch_pass.each(
            engine.parts, items, work, HeldBatch(set(items)), key=lambda k: k
        )
    finally:
        await engine.ledger.close()
    assert found == [(k, k) for k in items]
    # The pool is waited for as a whole: no callback on each worker (a
    # gather's, each with a copy of the context).
    assert set(callbacks) == {0}, callbacks


def _pool_of_40(engine: Engine, work: Any) -> asyncio.Task[list[tuple[Any, Any]]]:
    """`each` over 40 items, running as a task of its own."""
    items = [f"k{i}" for i in range(40)]
    return asyncio.create_task(
        batch_pass.each(engine.parts, items, work, HeldBatch(set(items)), key=lambda k: k)
    )


def _sleepers(
    engine: Engine, steps: int
) -> tuple[Callable[[str], Awaitable[str]], list[int], list[int], asyncio.Event]:
    """Work that sleeps until cancelled, then takes `steps` steps to wind
    down; with its counts of started and ended items, and an event set once
    the pool's workers all hold one."""
    started, ended, full = [0], [0], asyncio.Event()

    async def work(item: str) -> str:
        started[0] += 1
        if started[0] == engine.parts.config.concurrency:
            full.set()
        try:
            await asyncio.sleep(60)
        finally:
            for _ in range(steps):
                await asyncio.sleep(0)
            ended[0] += 1
        return item

    return work, started, ended, full


async def test_a_cancelled_pool_cancels_its_workers_and_waits_for_them(tmp_path: Path) -> None:
    engine, _ = await _engine(tmp_path)
    work, started, ended, full = _sleepers(engine, steps=1)
    try:
        run = _pool_of_40(engine, work)
        await full.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert ended[0] == started[0] == engine.parts.config.concurrency
    finally:
        await engine.ledger.close()


async def test_a_pool_cancelled_twice_still_outlives_none_of_its_workers(
    tmp_path: Path,
) -> None:
    """A second cancel while the pool waits for its cancelled workers (a
    service's third signal) does not end the pass before they end."""
    engine, _ = await _engine(tmp_path)
    work, _started, _ended, full = _sleepers(engine, steps=5)
    try:
        run = _pool_of_40(engine, work)
        await full.wait()
        run.cancel()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        left = [
            t
            for t in asyncio.all_tasks()
            if not t.done() and t.get_coro().__qualname__ == "each.<locals>.worker"  # type: ignore[union-attr]
        ]
        assert left == []
    finally:
        await engine.ledger.close()


async def test_a_cancel_a_rows_step_swallowed_starts_no_new_call(tmp_path: Path) -> None:
    """Python 3.11's wait_for returns the answer when the cancel lands in the
    turn the answer does: the worker's task goes on unaware. It must still
    start no call after its pass was cancelled."""
    engine, _ = await _engine(tmp_path)
    concurrency = engine.parts.config.concurrency
    calls, answer = [0], asyncio.get_running_loop().create_future()
    full = asyncio.Event()

    async def work(item: str) -> str:
        calls[0] += 1
        if calls[0] == concurrency:
            full.set()
        if item == "k0":
            return str(await asyncio.wait_for(answer, 60))
        if calls[0] <= concurrency:
            await asyncio.sleep(60)  # the other calls in flight
        return item

    try:
        run = _pool_of_40(engine, work)
        await full.wait()
        answer.set_result("k0")  # the answer arrives ...
        run.cancel()  # ... in the turn the pass is cancelled
        with pytest.raises(asyncio.CancelledError):
            await run
    finally:
        await engine.ledger.close()
    assert calls[0] == concurrency


async def test_a_rows_stray_cancel_leaves_the_others_in_flight_their_calls(
    tmp_path: Path,
) -> None:
    """A CancelledError out of one row's step, with nobody cancelling the
    pass (a group commit given up under it): the calls the other workers
    have in flight come back (a create cut off mid-flight is an outcome
    nobody knows), no new one starts, and the pass fails with a
    ReclaimError, which its callers handle as a failed pass (a
    CancelledError would read to them as their own task cancelled)."""
    engine, _ = await _engine(tmp_path)
    concurrency = engine.parts.config.concurrency
    started: list[str] = []
    finished: list[str] = []
    full, release = asyncio.Event(), asyncio.Event()

    async def work(item: str) -> str:
        started.append(item)
        if len(started) == concurrency:
            full.set()
        if item == "k0":
            await full.wait()
            raise asyncio.CancelledError  # not the pass's cancel
        await release.wait()  # a create in flight
        finished.append(item)
        return item

    try:
        run = _pool_of_40(engine, work)
        await full.wait()
        for _ in range(20):
            await asyncio.sleep(0)  # k0's cancel reaches the pool
        release.set()
        with pytest.raises(ReclaimError, match="cancelled while its pass was not") as failed:
            await run
        assert isinstance(failed.value.__cause__, asyncio.CancelledError)
    finally:
        await engine.ledger.close()
    in_flight = [f"k{i}" for i in range(1, concurrency)]
    assert sorted(finished) == sorted(in_flight)
    assert sorted(started) == sorted(["k0", *in_flight])


async def test_a_workers_failure_is_the_pools(tmp_path: Path) -> None:
    engine, _ = await _engine(tmp_path)

    def broken(item: str) -> str:
        raise LookupError(item)  # outside `fn`: the pool's own step failing

    items = [f"k{i}" for i in range(40)]
    try:
        with pytest.raises(LookupError):
            await batch_pass.each(
                engine.parts, items, _noop_item, HeldBatch(set(items)), key=broken
            )
    finally:
        await engine.ledger.close()


class _Died(BaseException):
    """Not an Exception: a row's outcome never holds it (a simulated kill)."""


async def test_a_base_exception_in_a_row_is_the_pools(tmp_path: Path) -> None:
    engine, _ = await _engine(tmp_path)

    async def dies(item: str) -> str:
        if item == "k3":
            raise _Died(item)
        return item

    items = [f"k{i}" for i in range(40)]
    try:
        with pytest.raises(_Died):
            await batch_pass.each(engine.parts, items, dies, HeldBatch(set(items)), key=lambda k: k)
    finally:
        await engine.ledger.close()


async def _noop_item(item: str) -> str:
    return item


async def test_polls_answered_at_once_run_on_one_worker(tmp_path: Path) -> None:
    tasks, most, found = await _pool_run(tmp_path, wait=False, polls=True)
    assert most == 1
    assert found == [(f"k{i}", f"K{i}") for i in range(100)]
    # Not the whole pool started together, a task a poll: one more stands
    # ready while one runs.
    assert tasks <= 2, tasks


async def test_polls_that_wait_still_fill_the_pool(tmp_path: Path) -> None:
    tasks, most, found = await _pool_run(tmp_path, wait=True, polls=True)
    assert found == [(f"k{i}", f"K{i}") for i in range(100)]
    assert most == 16  # the calls in flight the limit allows, all at once
    assert tasks <= 17


async def test_a_tick_polls_answers_that_come_at_once_on_few_workers(tmp_path: Path) -> None:
    engine, _ = await _engine(tmp_path)
    created = Counter[str]()
    real = asyncio.create_task

    def counted(coro: Any, **kw: Any) -> Any:
        created[coro.__qualname__] += 1
        return real(coro, **kw)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(asyncio, "create_task", counted)
            report = await engine.tick()
        assert report.counts["consumed"] == JOBS
        # The fake answers every poll at once: two workers a batch of polls
        # (one running, one ready) and two its sink's, not a task a row.
        batches = created["_heartbeat"]  # a batch held, a heartbeat
        assert created["each.<locals>.worker"] <= 4 * batches < JOBS, created
    finally:
        await engine.ledger.close()


async def test_a_submit_encodes_each_spec_once(tmp_path: Path) -> None:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    engine = Engine(ledger, FakeBackend(clock=clock), CallableSink(_noop), owner="test|1|a")
    try:
        jobs = [JobSpec(input=f"job {i}", model="m") for i in range(JOBS)]
        with python_calls() as seen:
            report = await engine.submit(jobs, send=False)
        assert report.counts["inserted"] == JOBS
        # The stored spec and the key hashed from it: one text, made once.
        assert seen[("models.py", "to_json")] == JOBS
        assert await engine.ledger.get(idempotency_key(jobs[7])) is not None
    finally:
        await ledger.close()


def test_a_spec_read_with_other_labels_keeps_every_other_field() -> None:
    spec = JobSpec(
        input=[{"type": "text", "text": "x"}],
        model="",
        config={"system_instruction": "be brief"},
        key="own-key",
        agent="deep-research",
        labels={"team": "a", "kind": "k"},
        deadline=60.0,
        previous="prev-key",
    )
    text = spec.to_json()
    read = JobSpec.from_json(text)
    assert read == dataclasses.replace(spec, key=None)  # the key is not in the text
    labels = {"team": "b", ATTEMPT_LABEL: "1"}
    config = {"previous_interaction_id": "i-1"}
    made = JobSpec.from_fields(json.loads(text), config=config, labels=labels)
    merged = {"team": "b", "kind": "k", ATTEMPT_LABEL: "1"}
    assert made == dataclasses.replace(read, labels=merged, config=config)
    assert list(made.labels) == ["kind", "team", ATTEMPT_LABEL]  # the order the create sends
    assert JobSpec.from_fields(json.loads(text)) == read
    assert {f.name for f in dataclasses.fields(JobSpec)} == {
        "input",
        "model",
        "config",
        "key",
        "agent",
        "labels",
        "deadline",
        "previous",
    }  # a new field: from_fields must carry it too


async def test_a_row_sent_makes_its_spec_once(tmp_path: Path) -> None:
    engine, _ = await engine_on_fakes(tmp_path)
    made = [0]
    real = models._make_spec

    def counted(*args: Any, **kw: Any) -> JobSpec:
        made[0] += 1
        return real(*args, **kw)

    try:
        jobs = [JobSpec(input=f"job {i}", model="m", labels={"team": "a"}) for i in range(JOBS)]
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(models, "_make_spec", counted)
            report = await engine.submit(jobs)
        assert report.counts["sent"] == JOBS
        # Read from its row with the attempt's label, once: not read, then
        # copied with its labels.
        assert made[0] == JOBS
        backend = engine.parts.backend
        assert isinstance(backend, FakeBackend)
        sent = [remote.spec for remote in backend.remotes.values()]
        assert sorted(s.input for s in sent) == sorted(j.input for j in jobs)
        # Its own labels, then the attempt's, as the create sends them.
        assert all(list(s.labels) == ["team", ATTEMPT_LABEL] for s in sent), sent[0]
        assert all(s.labels["team"] == "a" and s.labels[ATTEMPT_LABEL] for s in sent)
    finally:
        await engine.ledger.close()


async def _job_calls(tmp_path: Path) -> Counter[tuple[str, str]]:
    """The Python calls of JOBS jobs submitted and taken through every state."""
    engine, clock = await engine_on_fakes(tmp_path)
    try:
        jobs = [JobSpec(input=f"job {i}", model="m") for i in range(JOBS)]
        with python_calls() as seen:
            sent = await engine.submit(jobs)
            clock.advance(5)
            report = await engine.tick()
        assert sent.counts["sent"] == report.counts["consumed"] == JOBS
        return seen
    finally:
        await engine.ledger.close()


async def test_a_pools_row_reads_the_circuit_and_wakes_the_pool_without_calls(
    tmp_path: Path,
) -> None:
    seen = await _job_calls(tmp_path)
    # A row of the pool reads whether the circuit tripped from its field,
    # not through the `open` property (left: a pass's own checks, a few
    # a batch: 4.4 a job with `open` read for each row, twice).
    assert seen[("circuit.py", "open")] < JOBS // 2, seen[("circuit.py", "open")]
    # The waiting workers are woken once, not by an `Event.set` after every
    # row (left: each worker's end and the passes' other events; 4.5 a job
    # with a set a row).
    assert seen[("locks.py", "set")] < JOBS * 2, seen[("locks.py", "set")]


async def test_a_jobs_rows_are_gathered_without_a_generator_resumed_per_row(
    tmp_path: Path,
) -> None:
    seen = await _job_calls(tmp_path)
    # Keys and flags gathered over a submit's jobs, a claim's rows or a
    # commit's transitions: a list made in one call, not a generator
    # resumed (a Python call each) for every item.
    ours = ("submitting.py", "reclaiming.py", "batch_pass.py", "batching.py", "hot_writes.py")
    resumed = {k: n for k, n in seen.items() if k[0] in ours and k[1] == "<genexpr>"}
    assert sum(resumed.values()) < JOBS // 10, resumed


async def test_a_poll_counts_its_answer_under_a_context_of_three_calls(tmp_path: Path) -> None:
    seen = await _job_calls(tmp_path)
    # Each poll's answer-budget block: a class's __init__, __enter__ and
    # __exit__, not contextlib's generator machinery (six calls a poll;
    # contextlib's `helper` left: a few a batch, none a row).
    assert seen[("answer_budget.py", "__enter__")] == JOBS
    assert seen[("answer_budget.py", "polling_under")] == 0
    assert seen[("contextlib.py", "helper")] < JOBS // 4, seen[("contextlib.py", "helper")]


async def test_a_callable_sink_asks_once_whether_its_function_is_async(tmp_path: Path) -> None:
    seen = await _job_calls(tmp_path)
    assert seen[("sinks.py", "deliver")] == JOBS  # every result went through it
    # Asked when the sink is made, not at every delivery (five calls each).
    assert seen[("inspect.py", "iscoroutinefunction")] == 0
