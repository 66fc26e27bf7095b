"""What the loop bar says of the API and of an attached service (issue 32,
item 12): "N calls" was the concurrency setting, not calls in flight; "API
ok" was said before any call; an unreachable API was "degraded"; `:ledger`
kept the last ledger's inbox figures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from reclaim_tui.core.models import PassReport
from reclaim_tui.runner.commands import ServiceState
from reclaim_tui.tui.actions.updates import api_word
from reclaim_tui.tui.service_view import ServiceView

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, settle, until
from .test_ledger_switch import _other_ledger, command


def test_a_pass_that_called_nothing_says_nothing_of_the_api() -> None:
    assert api_word(PassReport(Counter()), "") == "not tried yet"
    assert api_word(PassReport(Counter(consumed=2)), "") == "not tried yet"  # sinks only
    assert api_word(PassReport(Counter()), "ok") == "ok"  # the last pass's word stays


def test_the_api_words_after_calls() -> None:
    assert api_word(PassReport(Counter(sent=3)), "") == "ok"
    assert api_word(PassReport(Counter(sent=1, deferred=2)), "ok") == "degraded (2 deferred)"
    down = PassReport(Counter(deferred=5), unavailable=("transport", "connection refused"))
    assert api_word(down, "ok") == "unreachable (transport)"
    refused = PassReport(Counter(deferred=5), unavailable=("auth", "API key not valid"))
    assert api_word(refused, "ok") == "unavailable (auth)"


def _state(**changes: object) -> ServiceState:
    base: dict[str, object] = {
        "state": "up",
        "interval": 2.0,
        "concurrency": 16,
        "max_concurrency": None,
        "passes": 0,
    }
    return ServiceState(**{**base, **changes})  # type: ignore[arg-type]


def test_an_attached_service_is_said_as_it_is() -> None:
    view = ServiceView()
    view.seen(_state())
    assert view.calls_text() == "concurrency 16"  # a limit, not calls in flight
    assert view.api_text() == "not tried yet"
    view.seen(_state(passes=1, last_pass_at=5.0, last_summary="idle"))
    assert view.api_text() == "not tried yet"  # a pass, but no call yet
    view.seen(_state(passes=2, last_pass_at=6.0, totals={"sent": 2}))
    assert view.api_text() == "ok"
    view.seen(
        _state(passes=3, last_pass_at=7.0, last_unavailable=("transport", "refused"), totals={})
    )
    assert view.api_text() == "unreachable (transport)"
    view.seen(_state(max_concurrency=64))
    assert view.calls_text() == "concurrency 16–64"


@pytest.fixture
def other(tmp_path: Path) -> Path:
    return _other_ledger(tmp_path, 2)


async def test_ledger_forgets_the_last_ledgers_bar(seeded: Seeded, other: Path) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.main.bar
        bar.inbox, bar.inbox_alarm, bar.api = "inbox 12/min · 3 refused", True, "ok"
        bar.last = "last pass 0.10s: sent=4"
        await command(pilot, f"ledger {other}")
        assert await until(pilot, notified(pilot, "now on"))
        await settle(pilot)
        bar = app.main.bar
        assert (bar.inbox, bar.inbox_alarm, bar.api, bar.last) == ("", False, "", "")
