"""A full collection of the garbage collector waits for the keys to stop
(issue 39: the console's keys at p99). With the start-up objects frozen, a
full collection still scanned every object made since, and CPython ran one
whenever enough survivors piled up: now and then in the middle of a key.
The console runs them itself once the keys are quiet; the younger
generations are collected as before. Counted, never timed: the console's
clock is the test's."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until


@pytest.fixture
def full_collections() -> Iterator[list[int]]:
    """One entry per full collection started (its survivors' count at start)."""
    started: list[int] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            started.append(gc.get_count()[2])

    gc.callbacks.append(callback)
    yield started
    gc.callbacks.remove(callback)


async def test_no_full_collection_runs_while_keys_come_one_runs_once_they_stop(
    seeded: Seeded, full_collections: list[int]
) -> None:
    thresholds = gc.get_threshold()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        full_collections.clear()
        kept: list[list[object]] = []
        for n in range(24):
            await press(pilot, "down" if n % 2 else "up")
            # What a busy screen leaves alive between keys: enough survivors
            # for CPython to start several full collections of its own.
            kept.append([[] for _ in range(10_000)])
        assert full_collections == []
        assert gc.get_count()[2] >= thresholds[2]  # and one is due
        seeded.clock.advance(1.0)  # the keys have stopped (gc_idle.QUIET)
        assert await until(pilot, lambda: bool(full_collections))
        assert app.idle_collector.collections == 1
        del kept
    assert gc.get_threshold() == thresholds  # CPython's own again


def test_a_full_collection_due_for_long_runs_however_the_keys_come() -> None:
    from reclaim_tui.tui import gc_idle

    now = [0.0]
    thresholds = gc.get_threshold()
    collector = gc_idle.IdleCollector(lambda: now[0], lambda: True)
    ticking: list[object] = []
    assert collector.start(lambda every, tick: ticking.append(tick))
    assert ticking == [collector.tick]
    try:
        for _ in range(thresholds[2] + 1):
            gc.collect(1)  # the middle generation, as CPython would collect it
        ran = []
        while now[0] < gc_idle.LONGEST + 2:
            collector.key()  # a key held down
            ran.append(collector.tick())
            now[0] += 0.25
        assert ran.count(True) == 1 and ran[-1] is False
    finally:
        collector.stop()
    assert gc.get_threshold() == thresholds
