"""`--readonly`: every mutating key is hidden and refused; the ledger never changes."""

from __future__ import annotations

import subprocess
import sys

from reclaim_tui.tui.keymap import KEYS
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.screens.help import HelpScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle, until


async def test_readonly_refuses_every_mutating_key(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    events_before = await seeded.events("failed")
    app = seeded.app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert len(app.table.rows_shown) == 8
        shown_in_footer = {b.binding.action for b in app.screen.active_bindings.values()}
        mutating = [k for k in KEYS if k.mutating]
        assert not {k.action for k in mutating} & shown_in_footer
        await select(pilot, seeded.keys["failed"])
        for spec in mutating:
            await press(pilot, spec.key.split(",")[0])
            assert app.screen is app.screen_stack[0], f"{spec.key} opened a screen"

        def refusals() -> list[str]:
            return [n.message for n in app._notifications if "read-only" in n.message]

        assert await until(pilot, lambda: len(refusals()) == len(mutating)), refusals()
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("Static").render())
        assert "Retry failed" not in text and "Read-only console" in text
    assert await seeded.snapshot() == before
    assert await seeded.events("failed") == events_before


async def test_readonly_needs_no_api_key(seeded: Seeded, monkeypatch: object) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # type: ignore[attr-defined]
    app = make_app(seeded.settings(), readonly=True, clock=seeded.clock)
    assert app.host is None


def test_core_never_imports_textual() -> None:
    code = (
        "import sys, reclaim_tui.core.ledger.console.queries, reclaim_tui.core.engine.engine;"
        "import reclaim_tui.cli;"
        "assert 'textual' not in sys.modules, 'core imported textual'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
