"""Issue 24: the console shows rows whose research plan is ready (points 1) and
rows whose interaction answers 404 inside the retention (point 9): the detail
says what they are and what to do, the loop bar counts them, the answer
dialog shows the plan."""

from __future__ import annotations

import dataclasses

from reclaim_tui.core.ledger.console.views import Detail
from reclaim_tui.core.ledger.retention import AtRisk, Attention
from reclaim_tui.core.models import Status
from reclaim_tui.core.row_notes import NOT_FOUND, PLAN_READY
from reclaim_tui.tui.format import attention_text
from reclaim_tui.tui.questions import answer_refusal, asked
from reclaim_tui.tui.widgets.detail_pane import render_detail

from .test_actors import _cancelled_row

PLAN = "Research plan for: TPUs\n1. Search for an overview of TPUs."


def _held(last_error: str, held: bool = True):  # type: ignore[no-untyped-def]
    return dataclasses.replace(
        _cancelled_row(), status=Status.SUBMITTED, handle="int-9", held=held, last_error=last_error
    )


def test_a_plan_ready_row_shows_its_plan_and_how_to_answer() -> None:
    row = _held(f"{PLAN_READY}{PLAN}")
    text = render_detail(Detail(row, None, [], None, None), 3.0).plain
    assert "research plan ready — w approves (or refines), c cancels" in text
    assert "1. Search for an overview of TPUs." in text
    assert answer_refusal(row) is None and asked(row) == PLAN


def test_a_404_row_says_it_is_no_proof_of_loss_then_held() -> None:
    polling = _held(f"{NOT_FOUND}2027-01-15T08:00:00Z: NotFoundError[404]: gone", held=False)
    text = render_detail(Detail(polling, None, [], None, None), 3.0).plain
    assert "404 inside retention: no proof of loss" in text
    held = dataclasses.replace(polling, held=True)
    text = render_detail(Detail(held, None, [], None, None), 3.0).plain
    assert "404 past --gone-grace: held" in text


def test_the_loop_bar_counts_them() -> None:
    seen = Attention(AtRisk(0, None), 0, 0, not_found=2, not_found_held=1, plans_ready=3)
    assert attention_text(seen) == "3 plan ready · 2 404 (polling) · 1 404 held"
    assert seen.any
