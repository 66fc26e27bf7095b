"""The help opens on the actions and the footer lists f, v, $, S, : and enter
where they fit (issue 25, D9: `?` opened on navigation and view keys; submit,
recover orphans, replay, retry and cancel were below the fold even at 160×48)."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from reclaim_tui.tui.screens.help import HelpScreen

from .conftest import Seeded
from .pilot_helpers import press, settle
from .test_layout import assert_footer_fits

#: The mission's actions, by their help lines.
ACTIONS = (
    "Submit a prompt or a JSONL file",
    "Retry failed / cancelled rows",
    "Cancel reserving / submitted rows",
    "Force orphan recovery",
    "Replay done-but-unconsumed results",
)


def _in_view(screen: HelpScreen) -> str:
    """The help's text on screen when it opens (what is above the fold)."""
    scroll = screen.query_one(VerticalScroll)
    bottom = scroll.content_region.bottom
    seen = []
    for static in screen.query(Static):
        region = static.content_region
        for index, strip in enumerate(static.render_lines(Region(0, 0, *static.size))):
            if region.y + index < bottom:
                seen.append(strip.text)
    return "\n".join(seen)


async def test_the_help_opens_on_the_actions(seeded: Seeded) -> None:
    for size in ((160, 48), (80, 24)):
        app = seeded.app()
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await press(pilot, "question_mark")
            assert isinstance(app.screen, HelpScreen)
            shown = _in_view(app.screen)
            for action in ACTIONS:
                assert action in shown, f"{size}: {action!r} is below the fold"


async def test_the_footer_lists_the_view_keys_where_they_fit(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        keys = {k.key_display: k.description for k in app.main.query(FooterKey)}
        for key in ("f", "v", "$", "S", ":", "⏎"):  # ⏎: how Textual shows enter
            assert key in keys, f"{key} is not in the footer: {sorted(keys)}"
        assert_footer_fits(app)
        assert keys["?"] and keys["s"], "the titled keys keep their titles"
    for size in ((140, 40), (80, 24)):
        app = seeded.app()
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            assert_footer_fits(app)
            keys = {k.key_display: k.description for k in app.main.query(FooterKey)}
            assert keys.get("?") == "Help" and keys.get("s") == "Submit"
