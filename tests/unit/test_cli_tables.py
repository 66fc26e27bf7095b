"""The CLI's text tables (cli/tables.py, laid out by Rich): columns as wide
as their widest cell, nothing cut, numbers right-aligned, cells as given."""

from __future__ import annotations

from reclaim_tui.cli.costs import format_costs
from reclaim_tui.cli.tables import text_table
from reclaim_tui.core.cost_totals import CostRow
from reclaim_tui.core.costs import load_prices

PRICES = load_prices(None, environ={})


def test_a_long_group_key_is_shown_whole_and_the_columns_still_line_up() -> None:
    # A label value may run to 63 characters: the f-string table cut every
    # key at 34, so two long labels that differ late looked the same.
    keys = ["team=" + "x" * 50 + "-alpha", "team=" + "x" * 50 + "-beta"]
    rows = [
        CostRow(key, rows=3, priced=3, input_tokens=1_234_567, usd=1.5 * n)
        for n, key in enumerate(keys, 1)
    ]
    text = format_costs(rows, PRICES, "label:team")
    lines = text.splitlines()
    for key in keys:
        assert any(line.startswith(key + " ") for line in lines), text
    table = lines[1:4]  # the header, the two groups and (next) the total
    assert table[0].startswith("label:team ") and table[0].endswith("USD")
    ends = {len(line) for line in lines[1:5]}
    assert len(ends) == 1, text  # the USD column ends where its header does
    assert "1,234,567" in table[1]


def test_cells_are_printed_as_given_and_lines_carry_no_trailing_blanks() -> None:
    text = text_table(
        [("status", "left"), ("count", "right"), ("oldest", "left")],
        [("[bold]reserving", 7, "-"), ("consumed", 12_345, "3d 4h")],
    )
    assert text.splitlines() == [
        "status           count  oldest",
        "[bold]reserving      7  -",
        "consumed         12345  3d 4h",
    ]
