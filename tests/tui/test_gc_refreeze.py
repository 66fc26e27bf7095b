"""A full collection the console runs freezes its survivors, so the next
one scans only what was made after it (issue 39: the console's keys at p99;
the one a long stream of keys cannot avoid stays short). Frozen cycles are
not collected by those: every `WHOLE_EVERY` collections a whole one thaws
everything and collects it, at a longer quiet moment or after
`WHOLE_LONGEST`. Counted (objects left in the collector's sight, objects
alive), never timed: the collector's clock is the test's."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from reclaim_tui.tui import gc_idle
from reclaim_tui.tui.gc_idle import IdleCollector


class Node:
    """An object that can refer to itself (a cycle, as widgets make)."""

    me: object = None


@pytest.fixture
def clock() -> list[float]:
    return [0.0]


@pytest.fixture
def collector(clock: list[float]) -> Iterator[IdleCollector]:
    thresholds = gc.get_threshold()
    collector = IdleCollector(lambda: clock[0], lambda: True)
    assert collector.start(lambda every, tick: None)
    yield collector
    collector.stop()
    assert gc.get_freeze_count() == 0  # everything in the collector's sight again
    assert gc.get_threshold() == thresholds


#: CPython's own threshold of full collections (read before any collector runs).
DUE = gc.get_threshold()[2]


def _make_due() -> None:
    for _ in range(DUE):
        gc.collect(1)  # the middle generation, as CPython would collect it


def _in_sight() -> int:
    """Objects a full collection would examine now (the frozen ones are not)."""
    return sum(len(gc.get_objects(generation=g)) for g in range(3))


def test_a_full_collection_leaves_its_survivors_out_of_the_next_one(
    collector: IdleCollector, clock: list[float]
) -> None:
    kept = [[] for _ in range(50_000)]  # what a screen keeps alive
    _make_due()
    clock[0] += gc_idle.QUIET
    assert collector.tick()
    # The next full collection examines what is made from now on, not these.
    assert _in_sight() < 10_000, _in_sight()
    made = [[] for _ in range(20_000)]
    assert 20_000 <= _in_sight() < 30_000
    _make_due()
    clock[0] += gc_idle.QUIET
    assert collector.tick()
    assert _in_sight() < 10_000
    assert collector.whole == 0
    del kept, made


def test_a_frozen_cycle_is_freed_by_the_whole_collection_at_a_long_quiet(
    collector: IdleCollector, clock: list[float]
) -> None:
    node = Node()
    node.me = node
    alive = weakref.ref(node)
    _make_due()
    clock[0] += gc_idle.QUIET
    assert collector.tick()  # frozen with the survivors
    del node  # garbage now, but a cycle among frozen objects
    for _ in range(gc_idle.WHOLE_EVERY - 1):
        _make_due()
        clock[0] += gc_idle.QUIET
        assert collector.tick()
        assert alive() is not None  # the collections of the new objects leave it
    assert collector.collections == gc_idle.WHOLE_EVERY and collector.whole == 0
    collector.key()
    clock[0] += gc_idle.QUIET  # quiet enough for a collection, not for a whole one
    assert not collector.tick()
    assert alive() is not None
    clock[0] += gc_idle.WHOLE_QUIET
    assert collector.tick()
    assert collector.whole == 1
    assert alive() is None
    assert _in_sight() < 10_000  # frozen again after it


def test_a_whole_collection_due_for_long_runs_however_the_keys_come(
    collector: IdleCollector, clock: list[float]
) -> None:
    node = Node()
    node.me = node
    alive = weakref.ref(node)
    for n in range(gc_idle.WHOLE_EVERY):
        _make_due()
        clock[0] += gc_idle.QUIET
        assert collector.tick()
        if n == 0:
            del node
    ran = []
    while clock[0] < gc_idle.WHOLE_LONGEST + 30 * gc_idle.WHOLE_QUIET:
        collector.key()  # a key held down
        ran.append(collector.tick())
        clock[0] += 0.5
    assert ran.count(True) == 1 and collector.whole == 1
    assert alive() is None
