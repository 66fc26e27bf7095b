"""The console's settings file, as the app keeps it: what a saved file changes
at start (the theme, the pace, the page size, confirmations), and what the
console holds now, to be written after a change (config.ConsoleSettings)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from pathlib import Path

from reclaim_tui.config import ConsoleSettings, load_console_settings
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.state import ConsoleState

__all__ = ["Applied", "apply_saved", "merge_changes", "settings_now"]


@dataclass(frozen=True)
class Applied:
    #: The saved theme, when this Textual knows it.
    theme: str | None = None
    #: Why the file cannot be used as it is (it is then never written).
    problem: str | None = None
    #: Said at start: the file's pace won over the flag.
    interval_note: str = ""


def apply_saved(
    config: ConsoleConfig, saved: ConsoleSettings, path: Path, themes: Collection[str]
) -> Applied:
    """Put the saved settings into `config`; what else the app must do with them."""
    theme = problem = None
    note = ""
    if saved.theme is not None:
        if saved.theme in themes:
            theme = saved.theme
        else:
            problem = f"{path}: no theme named {saved.theme!r}"
    if saved.interval is not None:
        # Said at start when the operator typed --interval and the file's pace
        # runs instead (a console without a loop of its own runs neither).
        own_loop = not config.readonly and config.attach is None
        if saved.interval != config.interval and config.interval_given and own_loop:
            note = (
                f"a pass every {saved.interval:g}s, from {path} (it wins over"
                f" --interval {config.interval:g}; + and - change it there)"
            )
        config.interval = saved.interval
    if saved.page_size is not None:
        config.page_size = saved.page_size
    config.confirm = saved.confirm
    return Applied(theme, problem, note)


def settings_now(
    theme: str | None,
    interval: float | None,
    config: ConsoleConfig,
    state: ConsoleState,
    remembered: ConsoleSettings,
) -> ConsoleSettings:
    """What the console holds now (`interval`: None while attached to a
    service, whose pace is not the console's: the file keeps its own)."""
    return ConsoleSettings(
        theme=theme,
        interval=interval if interval is not None else remembered.interval,
        page_size=config.page_size,
        hidden=frozenset(state.hidden),
        detail_width=state.detail_width,
        confirm=config.confirm,
        columns=state.columns,
        views=remembered.views,  # the file's own (the console never edits them)
    )


def merge_changes(
    path: Path, before: ConsoleSettings, now: ConsoleSettings
) -> tuple[ConsoleSettings | None, str | None]:
    """The file as it is on disk now, with only the settings that changed from
    `before` to `now` put in: another console, or the operator's editor, may
    have changed the others (added a view) since this console read it.
    (None, why) when the file cannot be read as settings now: it is not written."""
    changed = {f.name: getattr(now, f.name) for f in fields(ConsoleSettings)}
    changed = {k: v for k, v in changed.items() if getattr(before, k) != v}
    on_disk, problem = load_console_settings(path)
    if problem:
        return None, problem
    return replace(on_disk, **changed), None
