"""Which columns fit a width (tui/columns.py) and the `columns` setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.config import ConsoleSettings, load_console_settings
from reclaim_tui.tui import columns


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (80, {"mark", "idem", "status", "age", "error", "attempts", "next"}),
        (100, {"mark", "idem", "status", "age", "error", "attempts", "next", "updated"}),
        (105, {"mark", "idem", "status", "age", "error", "attempts", "next", "model"}),
        (134, set(columns.PRIORITY)),
    ],
)
def test_fit_takes_columns_in_order_of_use(width: int, expected: set[str]) -> None:
    assert columns.fit(width) == expected


def test_a_bad_columns_setting_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('columns = ["key", "colour"]\n')
    settings, problem = load_console_settings(path)
    assert settings == ConsoleSettings() and problem and "columns must be" in problem
    path.write_text(ConsoleSettings(columns=("key", "error")).to_toml())
    assert load_console_settings(path) == (ConsoleSettings(columns=("key", "error")), None)
