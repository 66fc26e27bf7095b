"""Helpers of the screens that show one job: j / k, and $PAGER / $EDITOR
with the terminal handed over (`App.suspend`) on a temporary file removed
afterwards."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from textual.app import SuspendNotSupported
from textual.screen import Screen
from textual.widget import Widget

from reclaim_tui.tui import external_viewer

__all__ = ["move_cursor", "open_in_viewer"]


def move_cursor(focused: Widget | None, down: bool) -> None:
    """j / k: a table's cursor moves, anything else scrolls a line."""
    if focused is None:
        return
    name = "cursor_down" if down else "cursor_up"
    action = getattr(focused, f"action_{name}", None)
    if action is None:
        action = focused.action_scroll_down if down else focused.action_scroll_up
    action()


async def open_in_viewer(screen: Screen[Any], variable: str, text: str, name: str) -> None:
    """Show `text` in $PAGER / $EDITOR, the terminal handed over meanwhile."""
    app = screen.app
    path = await asyncio.to_thread(external_viewer.write_viewing_file, text, name)
    try:
        # A headless app (a test) has no terminal to hand over: the pager runs as it is.
        with contextlib.nullcontext() if app.is_headless else app.suspend():
            # Blocking on purpose: the pager has the terminal until it exits.
            error = external_viewer.run_viewer(variable, path)
    except SuspendNotSupported:
        error = f"this terminal cannot be handed over to ${variable}"
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)
    if error:
        screen.notify(error, severity="error")
