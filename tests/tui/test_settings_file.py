"""The console's settings file: read at start, written when the operator
changes the theme, the interval or the panels; a bad file costs the
defaults and one notification, never a crash, and is never overwritten."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from reclaim_tui.config import ConsoleSettings, console_settings_path, load_console_settings

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, until


def settings_file(config_home: Path) -> Path:
    return config_home / "reclaim-tui" / "settings.toml"


def saved(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text()) if path.exists() else {}


async def test_changes_are_written_to_the_settings_file(seeded: Seeded, config_home: Path) -> None:
    path = settings_file(config_home)
    app = seeded.app(interval=2.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not path.exists(), "nothing changed: nothing written"
        await press(pilot, "plus")
        assert await until(pilot, lambda: saved(path).get("interval") == 5.0)
        await press(pilot, "D")
        assert await until(pilot, lambda: saved(path).get("hidden") == ["detail"])
        await press(pilot, "greater_than_sign")
        assert await until(pilot, lambda: saved(path).get("detail_width") == 3)
        app.theme = "nord"  # what the palette's theme picker does
        assert await until(pilot, lambda: saved(path).get("theme") == "nord")
        assert not [n for n in app._notifications if "not saved" in n.message]


async def test_the_settings_file_is_read_at_start(seeded: Seeded, config_home: Path) -> None:
    path = settings_file(config_home)
    path.parent.mkdir(parents=True)
    text = 'theme = "nord"\ninterval = 10.0\npage_size = 50\nhidden = ["log"]\ndetail_width = 4\n'
    path.write_text(text)
    app = seeded.app(interval=2.0, interval_given=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "nord"
        assert app.pace.interval == 10.0
        assert app.config.page_size == 50
        assert not app.main.query_one("#activity").display
        assert app.main.has_class("-detail-4")
        # The only word said: the file's interval, not --interval's, runs.
        (note,) = [n.message for n in app._notifications]
        assert "a pass every 10s" in note and "wins over --interval 2" in note, note
    assert path.read_text() == text, "reading is not writing"


@pytest.mark.parametrize(
    "text",
    [
        "theme = [unclosed",
        'interval = "fast"',
        'hidden = ["table"]',
        'theme = "no-such-theme"',
        b"\xff\xfe not utf-8",
        # Issue 22, point 9: accepted (a pass every ∞ s), or a RecursionError.
        pytest.param("interval = inf", id="interval-inf"),
        pytest.param("interval = 1" + "0" * 40, id="interval-huge"),
        pytest.param("theme = " + "[" * 100_000 + "]" * 100_000, id="nested-deep"),
    ],
)
async def test_a_bad_file_gives_defaults_one_notification_and_is_left_alone(
    seeded: Seeded, config_home: Path, text: str | bytes
) -> None:
    path = settings_file(config_home)
    path.parent.mkdir(parents=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = path.read_bytes()
    app = seeded.app(interval=2.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await until(pilot, notified(pilot, "Started with the defaults"))
        assert app.pace.interval == 2.0 and app.theme == "textual-dark"
        await press(pilot, "plus", "D")
        await settle(pilot)
        assert app.pace.interval == 5.0  # the console works on
        said = [n for n in app._notifications if "Started with the defaults" in n.message]
        assert len(said) == 1
    assert path.read_bytes() == before
    assert list(path.parent.iterdir()) == [path]


async def test_reclaim_config_names_the_file_and_a_write_failure_is_said(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(path: Path, settings: ConsoleSettings) -> None:
        raise OSError(28, "No space left on device")

    # (As root, no permission makes a write fail: the disk fills instead.)
    monkeypatch.setattr("reclaim_tui.tui.app.save_console_settings", disk_full)
    monkeypatch.setenv("RECLAIM_CONFIG", str(tmp_path / "mine.toml"))
    app = seeded.app(interval=2.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.settings_path == tmp_path / "mine.toml"
        await press(pilot, "plus")
        assert await until(pilot, notified(pilot, "settings not saved"))
        await press(pilot, "plus")
        await settle(pilot)
        assert len([n for n in app._notifications if "not saved" in n.message]) == 1
        assert app.is_running


def test_the_path_follows_xdg_and_reclaim_config(tmp_path: Path) -> None:
    assert console_settings_path({"RECLAIM_CONFIG": str(tmp_path / "s.toml")}) == (
        tmp_path / "s.toml"
    )
    xdg = console_settings_path({"XDG_CONFIG_HOME": str(tmp_path)})
    assert xdg == tmp_path / "reclaim-tui" / "settings.toml"
    home = console_settings_path({"XDG_CONFIG_HOME": ""})
    assert home == Path.home() / ".config" / "reclaim-tui" / "settings.toml"


def test_settings_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    settings = ConsoleSettings('say "hi"', 0.5, 200, frozenset({"log", "detail"}), 1)
    path.write_text(settings.to_toml())
    assert load_console_settings(path) == (settings, None)
    assert load_console_settings(tmp_path / "none.toml") == (ConsoleSettings(), None)


def test_the_suite_never_touches_the_real_home(config_home: Path) -> None:
    assert console_settings_path() == settings_file(config_home)
