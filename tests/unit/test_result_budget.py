"""A pass stores and delivers its results a group at a time under a byte
budget (issue 40 point 14), every transition once, in order."""

from __future__ import annotations

from reclaim_tui.core.engine.reclaiming import by_budget, result_size
from reclaim_tui.core.models import RemoteInteraction, RemoteState, Status, Transition


def _done(idem: str, text: str) -> Transition:
    raw = {"id": f"i-{idem}", "steps": [{"type": "model_output", "content": [{"text": text}]}]}
    result = RemoteInteraction(
        f"i-{idem}", RemoteState.COMPLETED, "completed", text, None, None, raw
    )
    return Transition(idem, Status.SUBMITTED, Status.DONE, "completed", result=result)


def _pending(idem: str) -> Transition:
    return Transition(idem, Status.SUBMITTED, Status.SUBMITTED, "still running")


def test_results_are_grouped_under_the_budget_a_large_one_alone() -> None:
    todo = [_pending("p1"), _done("a", "x" * 10), _done("b", "x" * 10), _done("big", "x" * 500),
            _pending("p2"), _done("c", "x" * 10)]  # fmt: skip
    small = result_size(todo[1].result)
    assert small >= 20 and result_size(None) == 0
    groups = [[t.idem for t in group] for group in by_budget(todo, 2 * small + 1)]
    assert groups == [["p1", "a", "b"], ["big", "p2"], ["c"]]
    assert todo == []  # handed over, not kept


def test_a_group_handed_over_and_cleared_is_gone() -> None:
    todo = [_done("a", "x" * 100), _done("b", "x" * 100)]
    seen = []
    for group in by_budget(todo, 1):
        seen.append([t.idem for t in group])
        group.clear()
    assert seen == [["a"], ["b"]]


def test_no_transition_is_one_empty_group() -> None:
    assert list(by_budget([], 100)) == [[]]


def test_the_json_of_a_result_is_made_once() -> None:
    result = _done("a", "é" * 10).result
    assert result is not None
    first = result.raw_json()
    assert result.raw_json() is first
    assert '"é' in first
