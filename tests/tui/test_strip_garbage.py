"""A line drawn whole makes no reference cycle (tui/widgets/textual_private.py,
`divide_whole_uncached`): Textual's compositor divides every line it draws at
its own end when nothing cuts it, and Textual's `Strip.divide` caches that
answer, `[self]`, inside the strip, so each such strip, its caches and its
segments were garbage only a full collection frees: most of what a key left
for the collector."""

from __future__ import annotations

import collections
import gc

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from reclaim_tui.tui.widgets import textual_private

from .conftest import Seeded
from .pilot_helpers import press, settle


def _strip() -> Strip:
    return Strip([Segment("abc", Style(bold=True)), Segment("defgh"), Segment("ij")])


def _texts(strips: object) -> list[str]:
    return [strip.text for strip in strips]  # type: ignore[attr-defined]


def test_textual_caches_a_whole_division_in_the_strip_itself() -> None:
    # The reason for the override: when a Textual release stops doing this,
    # this fails, and the override can go.
    strip = _strip()
    answer = textual_private._TEXTUAL_DIVIDE(strip, [strip.cell_length])
    assert list(answer) == [strip]
    assert strip._divide_cache.get((strip.cell_length,)) is answer


def test_a_whole_division_is_answered_uncached_and_the_others_as_textual_does() -> None:
    for cuts in ([10], [3, 10], [2, 5, 10], [4, 8], [10, 12], [0, 10], []):
        ours, theirs = _strip(), _strip()
        got = textual_private._divide(ours, iter(cuts))
        want = textual_private._TEXTUAL_DIVIDE(theirs, cuts)
        assert _texts(got) == _texts(want), cuts
        assert [s.cell_length for s in got] == [s.cell_length for s in want], cuts
    whole = _strip()
    assert list(textual_private._divide(whole, [whole.cell_length, 99])) == [whole]
    assert len(whole._divide_cache) == 0


async def _cyclic_garbage_a_key(seeded: Seeded, keys: tuple[str, str], presses: int) -> float:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        for key in keys * 3:  # widgets and caches made once are not a key's
            await press(pilot, key)
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for i in range(presses):
                await press(pilot, keys[i % 2])
            gc.collect()
        finally:
            gc.set_debug(0)
            garbage = list(gc.garbage)
            gc.garbage.clear()
    kinds = collections.Counter(type(o).__qualname__ for o in garbage)
    strips = kinds["Strip"]
    del garbage
    top = kinds.most_common(6)
    assert strips <= presses, f"{strips} strips in cycles over {presses} keys: {top}"
    return sum(kinds.values()) / presses


async def test_a_cursor_key_leaves_little_for_the_collector(seeded: Seeded) -> None:
    # Before: about 285 objects a key (17 lines, each a strip in a cycle with
    # its caches and segments); after: the two workers a key reads with.
    per_key = await _cyclic_garbage_a_key(seeded, ("down", "up"), 20)
    assert per_key < 100


async def test_a_tab_key_leaves_little_for_the_collector(seeded: Seeded) -> None:
    per_key = await _cyclic_garbage_a_key(seeded, ("2", "1"), 20)
    assert per_key < 100
