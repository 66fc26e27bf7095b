"""The loop log (issue 15, item 11): quiet passes do not push errors out of
view, errors are shortened at a word boundary with their cause kept, and the
tabs' counts never disagree with the table's rows."""

from __future__ import annotations

from collections import Counter

import pytest

from reclaim_tui.core.engine.engine import PassReport
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, JobSpec
from reclaim_tui.tui.format import shorten_error
from reclaim_tui.tui.screens.main import MainScreen
from reclaim_tui.tui.widgets.loop_log import LoopLog
from reclaim_tui.tui.widgets.status_tabs import StatusTabs

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until

SDK_ERROR = (
    "NotCreatedError[400]: create answered HTTP 400: ClientError: 400 INVALID_ARGUMENT. "
    "{'error': {'code': 400, 'message': 'Request contains an invalid argument: the model "
    "gemini-nonexistent-model is not found for API version v1beta, or is not supported for "
    "createInteraction.', 'status': 'INVALID_ARGUMENT', 'details': [{'@type': "
    "'type.googleapis.com/google.rpc.BadRequest', 'fieldViolations': [{'field': 'model'}]}]}}"
)


def log_text(log: LoopLog) -> list[str]:
    return [strip.text.rstrip() for strip in log.lines]


async def test_quiet_passes_take_one_line_and_errors_stay_in_view(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        log = app.query_one(LoopLog)
        failing = PassReport(Counter(sent=1))
        failing.error("k" * 32, "NotCreatedError[400]: create answered HTTP 400: bad model")
        log.tick(failing, 0.2, seeded.clock.now())
        for _ in range(200):
            seeded.clock.advance(2)
            log.tick(PassReport(), 0.01, seeded.clock.now())
        await settle(pilot)
        text = "\n".join(log_text(log))
        assert "bad model" in text  # not pushed out
        assert text.count("idle") <= 2, text
        log.tick(PassReport(Counter(polled=3)), 0.05, seeded.clock.now())
        await settle(pilot)
        text = "\n".join(log_text(log))
        assert "200 quiet passes" in text, text
        assert text.count("idle") <= 2, text


@pytest.mark.parametrize("limit", [80, 120, 160])
def test_an_sdk_error_is_shortened_at_a_word_boundary_keeping_its_cause(limit: int) -> None:
    short = shorten_error(SDK_ERROR, limit)
    assert len(short) <= limit, short
    assert "{'error'" not in short, short  # the API's words, not the SDK's dict
    assert "INVALID_ARGUMENT" in short and "400" in short, short
    assert short.endswith("…") or short.endswith(".")
    words = short.rstrip("…").split()
    assert all(word in SDK_ERROR or word.strip(":,.") in SDK_ERROR for word in words), short


def test_a_long_chain_of_causes_keeps_the_class_and_the_last_cause() -> None:
    error = (
        "NotCreatedError[429]: create answered HTTP 429: ClientError: RESOURCE_EXHAUSTED: "
        "Quota exceeded for requests per minute"
    )
    assert shorten_error(error, 42) == "NotCreatedError[429]: RESOURCE_EXHAUSTED…"
    assert shorten_error(error, 70) == (
        "NotCreatedError[429]: RESOURCE_EXHAUSTED: Quota exceeded for requests…"
    )


def test_a_short_error_is_left_as_it_is() -> None:
    assert shorten_error("SinkError: disk full (test)", 160) == "SinkError: disk full (test)"


@pytest.mark.parametrize("forced", [True, False], ids=["after-a-pass", "on-the-timer"])
async def test_the_tabs_count_the_rows_the_table_shows(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, forced: bool
) -> None:
    seen: list[tuple[str, int]] = []

    def recording(name: str):  # type: ignore[no-untyped-def]
        handler = getattr(MainScreen, name)

        def record(self: MainScreen, event: object) -> None:
            handler(self, event)
            label = str(self.query_one("#all").label)
            seen.append((label, len(self.table.rows_shown)))

        return record

    for name in ("on_counts_changed", "on_rows_changed"):
        monkeypatch.setattr(MainScreen, name, recording(name))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        ledger = await open_ledger(seeded.db, clock=seeded.clock)
        spec = JobSpec(input="one more", model="m")
        await ledger.insert_jobs([("one-more", spec.to_json(), spec.model)], Actor.CLI)
        await ledger.close()
        seen.clear()
        seeded.clock.advance(2)  # the counts are due again, however long they take
        if forced:
            await press(pilot, "ctrl+r")  # what a pass does when it ends: look again
        else:
            app.main.feed.watch()  # the 1 s timer, while a pass writes
        assert await until(pilot, lambda: len(app.table.rows_shown) == 9)
        await settle(pilot)
        assert app.main.query_one(StatusTabs)
        assert seen and all(label == f"1 All {rows}" for label, rows in seen), seen
