"""The table's columns by width, and the operator's choice (issue 25, defect
7): at 80×24 only the key, the status, the model and a cut handle showed;
the age, attempts, next poll and last error were off-screen."""

from __future__ import annotations

from pathlib import Path

from reclaim_tui.tui.widgets.table_cells import COLUMNS

from .conftest import Seeded
from .pilot_helpers import press, settle, until
from .test_newest_first import add_rows


def on_screen(app: object) -> list[str]:
    """The columns drawn within the table's width, left to right."""
    table = app.table  # type: ignore[attr-defined]
    x, out = 0, []
    for column in table.ordered_columns:
        x += column.render_width(table.cell_padding)
        if x <= table.size.width:
            out.append(column.key)
    return out


async def test_at_80x24_age_attempts_next_poll_and_error_are_on_screen(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = on_screen(app)
        for key in ("idem", "status", "age", "attempts", "next", "error"):
            assert key in shown, shown
        assert app.table.virtual_size.width <= app.table.size.width, "no sideways scroll"
        assert seeded.keys["failed"] in {r.idem for r in app.table.rows_shown}


async def test_wide_enough_every_column_shows(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert on_screen(app) == [key for key, _ in COLUMNS]


async def test_the_columns_setting_picks_the_columns(seeded: Seeded, config_home: Path) -> None:
    path = config_home / "reclaim-tui" / "settings.toml"
    path.parent.mkdir(parents=True)
    path.write_text('columns = ["key", "status", "error"]\n')
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert on_screen(app) == ["mark", "idem", "status", "error"]


async def test_colon_columns_picks_and_remembers_them(seeded: Seeded, config_home: Path) -> None:
    path = config_home / "reclaim-tui" / "settings.toml"
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "colon", *"columns key status age", "enter")
        assert await until(pilot, lambda: on_screen(app) == ["mark", "idem", "status", "age"])
        assert await until(pilot, lambda: path.exists() and "columns" in path.read_text())
        await press(pilot, "colon", *"columns all", "enter")
        assert await until(pilot, lambda: len(on_screen(app)) == 10)
        await press(pilot, "colon", *"columns colour", "enter")
        assert "colour is not a column" in str(app.query_one("#command-message").render())


async def test_at_80x24_a_long_view_with_its_scrollbar_does_not_scroll_sideways(
    seeded: Seeded,
) -> None:
    await add_rows(seeded, [f"one of many jobs {n}" for n in range(30)])
    app = seeded.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.table
        assert len(table.rows_shown) > table.size.height, "the vertical scrollbar shows"
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert "error" in on_screen(app)
