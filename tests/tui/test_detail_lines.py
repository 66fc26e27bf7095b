"""The detail pane wraps and styles only the lines it shows (issue 39: the
console's keys at p99). A `Static` wrapped a new row's whole detail, its
long input and timeline included, at every key that brought a new row, to
show about a screen of it. Counted: the text lines that go through
Textual's wrapping, never a time."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from textual.content import Content
from textual.geometry import Region
from textual.visual import Visual

from reclaim_tui.tui.widgets.detail_body import DetailBody
from reclaim_tui.tui.widgets.detail_pane import DetailPane, render_detail

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until

#: An input of many short lines (the detail shows its first 2,000 characters).
LONG = "\n".join(f"step {n}: look at the ledger again" for n in range(120))


def _count_wrapped(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """The text lines each call of Textual's wrapping takes, and those each
    drawing (wrapped and styled) takes."""
    wrapped: list[int] = []
    drawn: list[int] = []
    real = Content._wrap_and_format
    real_draw = Visual.to_strips.__func__  # type: ignore[attr-defined]

    def counting(self: Content, *args: Any, **kwargs: Any) -> Any:
        wrapped.append(self.plain.count("\n") + 1)
        return real(self, *args, **kwargs)

    def drawing(cls: type[Visual], widget: Any, visual: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(visual, Content) and widget.id == "detail-body":
            drawn.append(visual.plain.count("\n") + 1)
        return real_draw(cls, widget, visual, *args, **kwargs)

    monkeypatch.setattr(Content, "_wrap_and_format", counting)
    monkeypatch.setattr(Visual, "to_strips", classmethod(drawing))
    return wrapped, drawn


async def test_a_long_detail_wraps_only_the_lines_on_screen(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger: only the test redraws
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = app.main.query_one(DetailPane)
        detail = pane._detail
        assert detail is not None
        spec = dataclasses.replace(detail.row.job, input=LONG).to_json()
        long = dataclasses.replace(detail, row=dataclasses.replace(detail.row, spec=spec))
        now = seeded.clock.now()
        total = render_detail(long, now).plain.count("\n")
        room = pane.scrollable_content_region.height
        assert total > 3 * room  # most of the detail is below the pane
        wrapped, drawn = _count_wrapped(monkeypatch)
        pane.show(long, now)
        await settle(pilot)
        await pilot.pause()
        assert "step 0: look" in str(pane.query_one("#detail-body").render())
        # The lines on screen (twice at most: again at a narrower width when
        # the pane's scrollbar comes), and none of the rest.
        assert 0 < sum(wrapped) <= 2 * room, (sum(wrapped), room, total)
        # Drawn in one go (twice at most, as above), not a line at a time.
        assert 0 < len(drawn) <= 2, drawn
        wrapped.clear()
        drawn.clear()
        pane.scroll_to(y=40, animate=False, immediate=True)
        await settle(pilot)
        await pilot.pause()
        # Scrolled: the lines that come into view, drawn then.
        assert 0 < sum(wrapped) <= room, (sum(wrapped), room)
        assert len(drawn) == 1, drawn


async def test_the_body_draws_its_lines_as_a_static_draws_them(seeded: Seeded) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger: the text stays the test's
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pane = app.main.query_one(DetailPane)
        assert await until(pilot, lambda: pane.shown_idem is not None)
        body = pane.query_one("#detail-body", DetailBody)
        # A long line wraps, a tab expands, styles cross a wrap.
        text = Content.assemble(
            ("key ", "bold"),
            ("word " * 30, "$accent"),
            "\n\tindented\n",
            ("short", "italic"),
        )
        body.update(text)
        await settle(pilot)
        await pilot.pause()
        assert body.content is text
        width = body.size.width
        height = body.height_at(width)
        assert height == text.get_height(body.styles.get_rules(), width) > 4
        whole = Visual.to_strips(body, text, width, None, body.visual_style)
        lines = body.render_lines(Region(0, 0, width, height))

        for y, (got, want) in enumerate(zip(lines, whole, strict=True)):
            assert got.text.rstrip() == want.text.rstrip(), y
            got_styles = {s.style.color for s in got if s.text.strip() and s.style}
            want_styles = {s.style.color for s in want if s.text.strip() and s.style}
            assert got_styles == want_styles, y
            got_at = [s.style.meta.get("offset") for s in got if s.style and s.style.meta]
            want_at = [s.style.meta.get("offset") for s in want if s.style and s.style.meta]
            assert [o for o in got_at if o] == [o for o in want_at if o], y


async def test_a_new_row_repaints_the_pane_s_title_row_not_the_whole_pane(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pane's own lines (its borders and background; its text is the
    body's) drawn afresh per key: Textual's cache of a widget's lines keeps
    those a repaint did not mark."""
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger: only the keys redraw
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table, pane = app.table, app.main.query_one(DetailPane)
        cache = pane._styles_cache
        painted: list[int] = []
        real = type(cache).render_line

        def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
            if self is cache:
                painted.append(1)
            return real(self, *args, **kwargs)

        monkeypatch.setattr(type(cache), "render_line", counting)
        keys = ["down"] * (table.row_count - 1) + ["up"] * (table.row_count - 1)
        for key in keys:  # once over the rows: the body takes the height they need
            await press(pilot, key)
        await pilot.pause()
        painted.clear()
        titles = set()
        for key in keys:
            await press(pilot, key)
            await pilot.pause()
            assert pane.shown_idem == table.current_idem()
            assert pane.border_title == f"detail · {pane.shown_idem}"
            titles.add(pane.border_title)
        assert len(titles) == table.row_count > 3
        # The title's row, once a row (no more than that).
        assert 0 < len(painted) <= len(keys), len(painted)
        # … drawn with the new title.
        top = pane.render_lines(Region(0, 0, pane.outer_size.width, 1))[0].text
        assert f"detail · {pane.shown_idem}" in top
